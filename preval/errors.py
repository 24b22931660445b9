"""Errors raised for bad input: each names the column or rule, how many rows, and one example."""

from __future__ import annotations


class PrevalError(Exception):
    """Base class of every error preval raises for bad input or a bad request.

    `example` holds the offending row's ids (user column name -> value) when the error
    comes from a data rule, so that callers can say more (e.g. which file a system came from).
    """

    example: dict[str, object] | None = None


class InputError(PrevalError, ValueError):
    """The input cannot be evaluated (missing file or column, unreadable format)."""


class MissingColumnError(InputError):
    """A required column is absent."""


class ColumnTypeError(InputError):
    """A column has a dtype that the rule forbids (e.g. a non-numeric score)."""


class InvalidValueError(InputError):
    """Values break a rule: NaN score, null query or doc id, null or NaN label in qrels."""


class DuplicateError(InputError):
    """The same (query, doc) appears more than once in a run or in qrels."""


class MeasureError(PrevalError, ValueError):
    """An unknown measure name or a bad parameter or cutoff."""
