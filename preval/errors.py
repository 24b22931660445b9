"""Errors raised for bad input: each names the column or rule, how many rows, and one example."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Hint:
    """A way out of an error that names an option (``or pass duplicates='max' or 'first' to
    keep one``), said as the face the user called spells it: a message is raised with the
    Python keyword (`keyword`), the command line shows the flag (`flag`), and a function or
    command that does not take the option drops the hint (`spoken`)."""

    option: str  # its name in `preval.options.OPTIONS`: the keyword, and the flag with dashes
    text: str  # ``{}`` stands for the option spelled with `values`
    values: tuple[str, ...] = ()

    def keyword(self) -> str:
        return self.text.format(f"{self.option}=" + " or ".join(map(repr, self.values)))

    def flag(self) -> str:
        flag = "--" + self.option.replace("_", "-")
        return self.text.format(" ".join([flag, " or ".join(self.values)]).strip())

    def said(self) -> str:
        """The hint as a message holds it (`PrevalError.hints`): after ``"; "``."""
        return f"; {self.keyword()}"


class PrevalError(Exception):
    """Base class of every error preval raises for bad input or a bad request.

    `example` holds the offending row's ids (user column name -> value) when the error
    comes from a data rule, so that callers can say more (e.g. which file a system came from).
    `hints` are the ways out its message names by an option (`Hint`), in their keyword form.
    `counted`: the message counts rows of the data the rule was checked over (a data rule's
    checker), so that an engine that checked a part of the input can say which part.
    """

    example: dict[str, object] | None = None
    hints: tuple[Hint, ...] = ()
    counted: bool = False

    def spoken(self, takes: Callable[[str], bool], *, cli: bool) -> str:
        """The message as a face says it: each hint whose option the function or command
        takes (`takes`) spelled as its keyword or, `cli`, its flag; the others left out."""
        text = str(self)
        for hint in self.hints:
            said = ("; " + (hint.flag() if cli else hint.keyword())) if takes(hint.option) else ""
            text = text.replace(hint.said(), said)
        return text


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


def counted(n: int, one: str, many: str | None = None) -> str:
    """A count and its noun, singular for 1: ``counted(1, "query", "queries")`` is
    ``"1 query"``, ``counted(3, "row")`` ``"3 rows"`` (`many` defaults to `one` + s)."""
    return f"{n} {one if n == 1 else many or one + 's'}"
