"""Sources to LazyFrames: Parquet, CSV/TSV, in-memory frames. Never collects."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from .errors import InputError

Source = pl.DataFrame | pl.LazyFrame | str | Path

_PARQUET = {".parquet", ".pq"}
_CSV = {".csv": ",", ".tsv": "\t", ".tab": "\t"}


def scan(
    source: Source,
    *,
    id_columns: tuple[str, ...] = (),
    numeric_columns: tuple[str, ...] = (),
    what: str = "input",
) -> pl.LazyFrame:
    """Return `source` as a LazyFrame.

    Paths are read by suffix: ``.parquet``/``.pq`` with ``scan_parquet``; ``.csv`` and
    ``.tsv``/``.tab`` with ``scan_csv``, where `id_columns` are read as strings so that ids such
    as ``"007"`` keep their leading zeros. A CSV with a header and no rows gives nothing to
    infer dtypes from: its `numeric_columns` are then read as Float64, so that an empty input
    is an empty result rather than a type error.
    """
    if isinstance(source, pl.LazyFrame):
        return source
    if isinstance(source, pl.DataFrame):
        return source.lazy()
    if not isinstance(source, (str, Path)):
        msg = f"{what}: expected a DataFrame, LazyFrame or path, got {type(source).__name__}"
        raise InputError(msg)
    path = Path(source)
    if not path.exists():
        msg = f"{what}: file not found: {path}"
        raise InputError(msg)
    suffix = path.suffix.lower()
    if suffix in _PARQUET:
        return pl.scan_parquet(path)
    if suffix in _CSV:
        separator = _CSV[suffix]
        with path.open("rb") as fh:
            # utf-8-sig: a byte-order mark must not stick to the first column's name
            header = fh.readline().decode("utf-8-sig", "replace").rstrip("\r\n").split(separator)
            empty = not any(line.strip() for line in fh)
        overrides = {c: pl.String for c in id_columns if c in header}
        if empty:
            overrides |= {c: pl.Float64 for c in numeric_columns if c in header}
        return pl.scan_csv(path, separator=separator, schema_overrides=overrides)
    known = ", ".join(sorted([*_PARQUET, *_CSV]))
    msg = f"{what}: cannot tell the format of {path} from its suffix {suffix!r} (known: {known})"
    raise InputError(msg)
