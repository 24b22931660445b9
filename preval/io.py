"""Sources to LazyFrames: Parquet, CSV/TSV, in-memory frames. Never collects."""

from __future__ import annotations

import csv
import errno
import gzip
import importlib
import re
import shutil
import stat
import sys
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import polars as pl

from .errors import InputError, counted
from .spill import SpillDirectory

# Besides these, every function that takes a table takes any dataframe `as_polars` converts
Source = pl.DataFrame | pl.LazyFrame | str | Path | Any

ACCEPTED = (
    "a Polars DataFrame or LazyFrame, a pandas DataFrame, a pyarrow Table, RecordBatch or "
    "RecordBatchReader, a DuckDB relation, any object with __arrow_c_stream__, or a path"
)

_PARQUET = {".parquet", ".pq"}
_CSV = {".csv": ",", ".tsv": "\t", ".tab": "\t"}
# the suffixes `scan` reads as a table (any other path is no table of ours: e.g. a TREC file)
TABLE_SUFFIXES = frozenset({*_PARQUET, *_CSV})


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
    source = normalise(source, what)
    if not isinstance(source, (str, Path)):
        return source.lazy()
    named = Path(source)
    if not named.exists():
        msg = f"{what}: file not found: {named}"
        raise InputError(msg)
    path = readable(named, what)
    suffix = table_suffix(path)
    if path.is_dir():
        msg = (
            f"{what} {_shown(path)}: is a directory, not a file (give the path of a {suffix} file)"
        )
        raise InputError(msg)
    if suffix in _PARQUET:
        _check_parquet(path, what)
        return pl.scan_parquet(path)
    if suffix in _CSV:
        separator = _CSV[suffix]
        raw, empty = _first_line(path, what)
        if not raw.strip(b"\r\n\xef\xbb\xbf"):
            # no header names the columns, so the file cannot say what it holds; a header
            # line alone is the empty input (an empty result and a warning)
            msg = (
                f"{what} {_shown(path)}"
                f": file is empty (no header) (rule: a CSV starts with a header "
                "naming its columns; write the header line for an input with no rows)"
            )
            raise InputError(msg)
        header = _csv_header(raw, path, separator, what)
        overrides = {c: pl.String for c in id_columns if c in header}
        if empty:
            overrides |= {c: pl.Float64 for c in numeric_columns if c in header}
        rows = pl.scan_csv(path, separator=separator, schema_overrides=overrides)
        if empty:
            return rows
        try:  # (the schema is inferred from the first rows, read here: a damaged file fails)
            # a word among the first rows of a numeric column ("nan", "inf", "n/a") makes it a
            # String column to Polars' inference: read as numbers, "nan" and "inf" are NaN and
            # infinity (which the data rules name) and a word is an error naming its line
            inferred = rows.collect_schema()
            words = {c: pl.Float64 for c in numeric_columns if inferred.get(c) == pl.String}
            if words:
                overrides |= words
                rows = pl.scan_csv(path, separator=separator, schema_overrides=overrides)
            return _field_checked(rows, path, separator, len(header), what)
        except (pl.exceptions.PolarsError, OSError) as exc:
            explained = explain(exc, [(what, named)])
            if explained is None:
                msg = f"{what} {_shown(path)}: cannot be read ({_reason(exc)})"
                explained = InputError(msg)
            raise explained from exc
    known = ", ".join(sorted(TABLE_SUFFIXES))
    msg = (
        f"{what}: cannot tell the format of {_shown(path)}"
        f" from its suffix {suffix!r} (known: {known})"
    )
    raise InputError(msg)


# a stream (named pipe, /dev/stdin) can be read once: its copy, by its path, for the process
_STREAMS: dict[Path, tuple[Path, SpillDirectory]] = {}
# a file decoded (UTF-16) or decompressed (bzip2, xz) once: its copy, by the file's path and
# identity (a file written again is read again)
_DECODED: dict[tuple[Path, int, int, int], tuple[Path, SpillDirectory]] = {}

# what a file's first bytes say it is, when that is not UTF-8 text, gzip or zstd (which Polars
# reads itself): a name for messages, and the codec that gives its text
_BOMS = (  # (UTF-32's marks first: UTF-16 LE's is a prefix of UTF-32 LE's)
    (b"\xff\xfe\x00\x00", "UTF-32 LE", "utf-32"),
    (b"\x00\x00\xfe\xff", "UTF-32 BE", "utf-32"),
    (b"\xff\xfe", "UTF-16 LE", "utf-16"),
    (b"\xfe\xff", "UTF-16 BE", "utf-16"),
)
# (bzip2's "BZh" could start a line of text: its block size digit and first block's magic too)
_BZIP2 = re.compile(rb"BZh[1-9]\x31\x41\x59\x26\x53\x59|BZh[1-9]\x17\x72\x45\x38\x50\x90", re.S)
_COMPRESSED = ((_BZIP2, "bzip2", "bz2"), (b"\xfd7zXZ\x00", "xz", "lzma"))
_COMPRESSION_SUFFIXES = (".gz", ".zst", ".bz2", ".xz")
_ARCHIVES = ((b"PK\x03\x04", "a zip archive", "unzip it"), (b"PK\x05\x06", "a zip archive",
             "unzip it"), (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", "extract it"))  # fmt: skip


def readable(path: str | Path, what: str = "input") -> Path:
    """`path`, or a temporary copy of its contents that preval can read, made once per process:
    for a named pipe or another stream (the plan reads its input more than once), for UTF-16
    or UTF-32 text that starts with a byte-order mark (decoded to UTF-8), and for bzip2 and xz
    files (decompressed; Polars reads gzip and zstd itself). A copy keeps the file's lines, so
    that messages give the file's own line numbers, and its name (`_shown` gives it back),
    without a compression suffix. A zip archive, and UTF-16 without a byte-order mark, are
    refused in one line. A missing path is returned as it is, for the caller to name."""
    path = Path(path)
    try:
        info = path.stat()
    except OSError:
        return path
    if stat.S_ISDIR(info.st_mode):
        return path
    if not stat.S_ISREG(info.st_mode):
        if path not in _STREAMS:
            folder = SpillDirectory(prefix="preval-stream-")
            copy = folder.path / path.name
            try:
                with path.open("rb") as src, copy.open("wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
            except OSError as exc:
                folder.cleanup()
                raise _copy_failed(what, path, folder, exc) from exc
            _STREAMS[path] = (copy, folder)
        return readable(_STREAMS[path][0], what)  # (a stream of UTF-16, say)
    head = _head(path, what)
    opener = _decoder(path, head, what)
    if opener is None:
        return path
    key = (path, info.st_ino, info.st_mtime_ns, info.st_size)
    if key not in _DECODED:
        folder = SpillDirectory(prefix="preval-stream-")
        name = path.name
        if path.suffix.lower() in _COMPRESSION_SUFFIXES:
            name = path.stem
        copy = folder.path / (name or "input")
        try:
            with opener() as src, copy.open("w", encoding="utf-8", newline="") as dst:
                while block := src.read(1 << 20):
                    dst.write(block)
        except (OSError, EOFError, UnicodeError, ValueError) as exc:
            folder.cleanup()
            if isinstance(exc, OSError) and exc.errno in _FULL:  # the copy's disk, not the file
                raise _copy_failed(what, path, folder, exc) from exc
            msg = (
                f"{what} {_shown(path)}: cannot be read as {_decoder_name(head)} "
                f"({_reason(exc)}) (rule: a compressed file is complete, and text is UTF-8 or "
                "UTF-16 with a byte-order mark; write or copy it again)"
            )
            raise InputError(msg) from exc
        _DECODED[key] = (copy, folder)
    return _DECODED[key][0]


# errors of a write to a full disk (or quota): a copy that fails so is no fault of its input
_FULL = (errno.ENOSPC, errno.EDQUOT)


def _copy_failed(what: str, path: Path, folder: SpillDirectory, exc: OSError) -> InputError:
    """The one line for a copy `readable` could not make (a stream, a decoded file): where it
    was written and why, the input not blamed."""
    reason = exc.strerror or _reason(exc)
    where = folder.path.parent
    msg = (
        f"{what} {_shown(path)}: its copy in {where} failed: {reason} (free space there, or "
        "set TMPDIR to a folder with room)"
    )
    return InputError(msg)


def release_copies() -> None:
    """Remove the copies `readable` made (streams read, files decoded): the command does so
    when it ends, rather than when the process does."""
    for store in (_STREAMS, _DECODED):
        for _, folder in store.values():
            folder.cleanup()
        store.clear()


def require_file(path: str | Path, what: str, *, empty_ok: bool = False) -> Path:
    """`path` as `readable` gives it, after refusing a missing path, a directory and, unless
    `empty_ok`, a file with no content (plain, compressed or a stream: /dev/null, say)."""
    named = Path(path)
    if named.is_dir():
        msg = f"{what} {named}: is a directory, not a file"
        raise InputError(msg)
    if not named.exists():
        msg = f"{what} file not found: {named}"
        raise InputError(msg)
    copy = readable(named, what)
    if not empty_ok and _is_empty(copy, what):
        msg = f"{what} file {named} is empty: it holds one line per judged document"
        if what == "run":
            msg = f"run file {named} is empty: a run holds one line per retrieved document"
        raise InputError(msg)
    return copy


def _is_empty(path: Path, what: str) -> bool:
    if path.stat().st_size == 0:
        return True
    return _opener(path) is not open and _text_head(path, 1, what) == b""


def _text_head(path: Path, n: int, what: str) -> bytes:
    """The first `n` bytes of `path`'s text (gunzipped); a gzip file too damaged to give them
    is refused here, by name (Python's reader would raise its own error types)."""
    try:
        with _opener(path)(path, "rb") as fh:
            return fh.read(n)
    except (OSError, EOFError, zlib.error) as exc:
        broken = _broken_gzip(path) or f"cannot be read ({_reason(exc)})"
        msg = f"{what} {_shown(path)}: {broken}"
        raise InputError(msg) from exc


def _head(path: Path, what: str) -> bytes:
    try:
        with path.open("rb") as fh:
            return fh.read(16)
    except OSError as exc:
        msg = f"{what} {_shown(path)}: cannot be read ({exc.strerror or _reason(exc)})"
        raise InputError(msg) from exc


def _decoder_name(head: bytes) -> str:
    for mark, name, _ in (*_BOMS, *_COMPRESSED):
        if _starts(head, mark):
            return name
    return "text"


def _starts(head: bytes, mark: bytes | re.Pattern[bytes]) -> bool:
    return head.startswith(mark) if isinstance(mark, bytes) else bool(mark.match(head))


def _decoder(path: Path, head: bytes, what: str):
    """A function that opens `path` as UTF-8-ready text (a text stream) when its first bytes
    `head` say that it needs decoding or decompressing first, else None; refuse what preval
    cannot read, by name."""
    import codecs

    for mark, _, codec in _BOMS:
        if head.startswith(mark):
            # the codec reads the mark and drops it
            return lambda codec=codec: path.open(encoding=codec, newline="")
    for magic, _, module in _COMPRESSED:
        if _starts(head, magic):

            def opener(module=module):
                stream = importlib.import_module(module).open(path, "rb")
                return codecs.getreader("utf-8")(stream, errors="strict")

            return opener
    for magic, name, hint in _ARCHIVES:
        if head.startswith(magic):
            msg = (
                f"{what} {_shown(path)}: is {name}, which preval does not read ({hint} first, and "
                "give the file inside; preval reads plain text, gzip, zstd, bzip2 and xz files)"
            )
            raise InputError(msg)
    if len(head) >= 4 and head[0] and not head[1] and head[2] and not head[3]:
        order = "LE"
    elif len(head) >= 4 and not head[0] and head[1] and not head[2] and head[3]:
        order = "BE"
    else:
        return None
    msg = (
        f"{what} {_shown(path)}, line 1: looks like UTF-16 {order} text without a byte-order mark, "
        "which preval does not guess (rule: text is UTF-8, or UTF-16 with a byte-order mark; "
        f"convert it, e.g. iconv -f UTF-16{order} -t UTF-8)"
    )
    raise InputError(msg)


def _shown(path: Path) -> Path:
    """The path a user gave for `path`: a stream's or a decoded file's own path for its copy
    (`readable`)."""
    for key, (copy, _) in _DECODED.items():
        if copy == path:
            path = key[0]
    return next((named for named, (copy, _) in _STREAMS.items() if copy == path), path)


def normalise(source: Source, what: str = "input") -> pl.DataFrame | pl.LazyFrame | str | Path:
    """`source` as a Polars frame (`as_polars`) or a path; anything else is refused by its type.

    Public entry points call it once, so that a one-time stream is read once however many
    times the plan looks at its source.
    """
    frame = as_polars(source, what)
    if frame is not None:
        return frame
    if isinstance(source, (str, Path)):
        parts = _parquet_parts(Path(source))
        return parts if parts is not None else source
    kind = f"{type(source).__module__}.{type(source).__qualname__}"
    msg = f"{what}: cannot read an object of type {kind} (expected {ACCEPTED}){_peer_hint(source)}"
    raise InputError(msg)


def _peer_hint(source: object) -> str:
    """How to make a table of the run or qrels objects of pytrec_eval and ranx, which users of
    those tools pass first."""
    if type(source).__module__.split(".")[0] == "ranx":
        return (
            "; a ranx Run or Qrels: give its .to_dataframe(), with query='q_id', doc='doc_id' "
            "(a Qrels frame holds the label in 'score': rename it 'label')"
        )
    if isinstance(source, dict) and source and all(isinstance(v, dict) for v in source.values()):
        return (
            "; a dict {query: {doc: value}}, as pytrec_eval and ranx take: make it rows, "
            "pl.DataFrame([(q, d, v) for q, docs in run.items() for d, v in docs.items()], "
            "schema=['query', 'doc', 'score'], orient='row') ('label' for qrels)"
        )
    return ""


def _parquet_parts(path: Path) -> pl.LazyFrame | None:
    """A directory of Parquet files (a table as Spark, Hive or Polars' partitioned sink write
    it: part files, hive partitions ``key=value/``, ``_SUCCESS`` and hidden ``.crc`` files) as
    one lazy table, its partition keys as columns; None for anything else. Read as a frame, not
    a path: the engines' facts about a Parquet file (its size, row groups) are a file's."""
    suffix = _parquet_directory(path)
    if suffix is None:
        return None
    # The partition values are read as the strings the folders hold: inferred, a query or
    # system "007" became the integer 7, which matched no "007" of the qrels (every query
    # scored 0), and systems "01" and "1" became one. (Polars needs every key's type.)
    part = next(
        parts
        for p in path.rglob(f"*{suffix}")
        if p.is_file() and not _hidden(parts := p.relative_to(path).parts)
    )
    keys = [n.split("=", 1)[0] for n in part[:-1] if "=" in n]
    # (a glob: Polars refuses a directory that also holds .crc or other files)
    return pl.scan_parquet(
        str(path / "**" / f"*{suffix}"),
        hive_partitioning=True,
        hive_schema=dict.fromkeys(keys, pl.String) if keys else None,
    )


def _parquet_directory(path: Path) -> str | None:
    """The suffix of the Parquet parts when `path` is a directory of them (every file that is
    neither hidden nor ``_``-named, at any depth, is one, and there is one), else None."""
    if not path.is_dir():
        return None
    suffixes = {
        p.suffix for p in path.rglob("*") if p.is_file() and not _hidden(p.relative_to(path).parts)
    }
    if len(suffixes) != 1 or next(iter(suffixes)).lower() not in _PARQUET:
        return None
    return next(iter(suffixes))


def _hidden(parts: tuple[str, ...]) -> bool:
    """A file of a Parquet directory that is no part: hidden or ``_``-named (``_SUCCESS``,
    ``.crc`` files, Spark's ``_temporary``), itself or a folder above it."""
    return any(n.startswith((".", "_")) for n in parts)


def as_polars(obj: object, what: str = "input") -> pl.DataFrame | pl.LazyFrame | None:
    """`obj` as a Polars frame when it is a dataframe of any kind, else None (a path, say).

    Polars' own converters do the work, without a copy wherever Arrow memory can be shared:
    pandas through `pl.from_pandas`, pyarrow through `pl.from_arrow`, and any other object that
    exports the Arrow PyCapsule stream interface (``__arrow_c_stream__``: a DuckDB relation,
    a Polars-free library's table) through `pl.DataFrame`. A stream (a RecordBatchReader, a
    capsule) can be read once: it is read here, whole. A DuckDB relation runs its query here
    too: scanned lazily, a run and its qrels from one connection would be read at once, which
    DuckDB refuses ("connection is busy"); a query too large for memory belongs in a Parquet
    file (``COPY ... TO 'run.parquet'``), which preval reads in pieces.

    A pandas frame's columns that Polars cannot convert (a sparse column, an object column of
    mixed types) and its index levels are left out, each name kept with why for the
    missing-column message (`pandas_unread`); a column name given twice is an `InputError`
    (`what` names the source).
    """
    if isinstance(obj, (pl.DataFrame, pl.LazyFrame)):
        return obj
    if isinstance(obj, (str, Path)):
        return None
    # look a library up only when it is loaded already: an object of it cannot exist otherwise
    pandas = sys.modules.get("pandas")
    if pandas is not None and isinstance(obj, pandas.DataFrame):
        return _from_pandas(obj, pandas, what)
    pyarrow = sys.modules.get("pyarrow")
    if pyarrow is not None and isinstance(obj, pyarrow.RecordBatchReader):
        # read whole, as a Table: Polars' own reading of a reader that gives no batch (an empty
        # one, or one read before) raises pyarrow's "Must pass schema" instead of a frame
        table = obj.read_all()
        if table.num_rows == 0:
            import warnings  # (only for an empty stream)

            msg = (
                f"{what}: the pyarrow RecordBatchReader gave no rows (a reader is read once: "
                "one read before gives none; pass a Table to read it again)"
            )
            warnings.warn(msg, UserWarning, stacklevel=2)
        return pl.from_arrow(table)
    if pyarrow is not None and isinstance(obj, (pyarrow.Table, pyarrow.RecordBatch)):
        return pl.from_arrow(obj)
    if hasattr(obj, "__arrow_c_stream__"):
        return pl.DataFrame(obj)
    return None


# the attribute of a frame converted from pandas that says why some of its names are no columns
_PANDAS_UNREAD = "_preval_pandas_unread"


def _from_pandas(frame: Any, pandas: Any, what: str) -> pl.DataFrame:
    """`pl.from_pandas(frame)`; a column it cannot convert (an object column of mixed types, a
    sparse one) is left out, and so are the index levels: why, by name, is kept for the
    missing-column message (`pandas_unread`), since an evaluation reads only its own columns.
    A column name given twice is an `InputError` (which one is meant, preval cannot tell)."""
    names = [str(c) for c in frame.columns]
    twice = next((c for c in names if names.count(c) > 1), None)
    if twice is not None:
        msg = (
            f"{what}: the pandas DataFrame has a column named {twice!r} twice (rule: column "
            "names are unique; drop or rename one)"
        )
        raise InputError(msg)
    unread = {
        str(n): "a level of the pandas DataFrame's index, which preval does not read: call "
        ".reset_index() first"
        for n in frame.index.names
        if n is not None and str(n) not in names
    }
    try:
        converted = pl.from_pandas(frame)
    except (ValueError, TypeError):  # pyarrow's ArrowInvalid / ArrowTypeError too
        # one column at a time (only on this path): the others are read, these named
        kept = []
        for i, name in enumerate(names):
            column = frame.iloc[:, [i]]
            try:
                kept.append(pl.from_pandas(column))
            except (ValueError, TypeError) as exc:
                unread[name] = _unconvertible(column.iloc[:, 0], pandas, exc)
        converted = pl.concat(kept, how="horizontal") if kept else pl.DataFrame()
    if unread:  # (a plain attribute: only this object, from `normalise` to `inputs.read`)
        setattr(converted, _PANDAS_UNREAD, unread)
    return converted


def _unconvertible(column: Any, pandas: Any, exc: BaseException) -> str:
    """Why Polars could not convert a pandas `column`, and the cure."""
    name = str(column.name)
    if isinstance(column.dtype, pandas.SparseDtype):
        return (
            f"pandas column {name!r} is sparse, which Polars does not read (densify it with "
            f"frame[{name!r}].sparse.to_dense())"
        )
    kinds = sorted({type(v).__name__ for v in column.dropna()}) if column.dtype == object else []
    if len(kinds) > 1:
        return (
            f"pandas column {name!r} mixes values of types {', '.join(kinds)}, which one Arrow "
            f"column cannot hold (cast it, e.g. frame[{name!r}].astype(str) for ids)"
        )
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"pandas column {name!r} cannot be converted to Arrow ({reason})"


def pandas_unread(frame: object) -> dict[str, str]:
    """The names of a pandas frame that `as_polars` converted to `frame` but not as columns
    (index levels, columns Arrow cannot hold), each with why; else {}."""
    return getattr(frame, _PANDAS_UNREAD, {})


def _check_parquet(path: Path, what: str) -> None:
    """Raise if `path` is not a Parquet file whose footer can be read.

    Reading the footer costs one small read, and a file cut short or not Parquet at all fails
    here, by its name, rather than mid-evaluation with the reader's words.
    """
    try:
        pl.read_parquet_schema(path)
    except Exception as exc:  # the reader's error types are not ours to show
        limited = file_size_limit(exc)
        if limited:
            msg = f"{what} {_shown(path)}: cannot be read under {limited} (raise the limit)"
            raise InputError(msg) from exc
        msg = (
            f"{what} {_shown(path)}"
            f": not a readable Parquet file ({_reason(exc)}); check that it was "
            "written completely, or write it again"
        )
        raise InputError(msg) from exc


def file_size_limit(exc: BaseException) -> str | None:
    """When `exc` is the kernel's "File too large" (EFBIG) under a file-size limit (``ulimit
    -f``, RLIMIT_FSIZE), the limit in words ("the file-size limit (ulimit -f) of N bytes"),
    else None. (Polars' readers too fail under a limit below the size of the file read.)"""
    text = str(exc)
    if getattr(exc, "errno", None) != 27 and "os error 27" not in text:
        return None
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    except (ImportError, OSError, ValueError):
        return "the file-size limit (ulimit -f)"
    if limit == getattr(resource, "RLIM_INFINITY", -1):
        return None
    return f"the file-size limit (ulimit -f) of {limit:,} bytes"


def _reason(exc: BaseException) -> str:
    """The first line of a dependency's error message, without its class name or hints."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else "unreadable"
    return text.rstrip(".")


def explain(
    exc: BaseException, sources: Sequence[str | Path | tuple[str, str | Path] | None]
) -> InputError | None:
    """Translate a reader's error that surfaced while a plan ran into an `InputError` that
    names the input file, the line (CSV) where known, the rule and what to do.

    Reading is lazy, so a bad byte or a long row deep in a CSV is found by Polars mid-run with
    no file name; only then is the file re-read here, in Python, to find the line. `sources`:
    the paths that may hold it, each alone (said as the "input") or with its role (``("qrels",
    path)``), which the message names.
    """
    text = str(exc)
    low = text.lower()
    unplaced: InputError | None = None  # a word no file was found to hold (`_first_line_holding`)
    for item in sources:
        role, source = item if isinstance(item, tuple) else ("input", item)
        if source is None or not isinstance(source, (str, Path)):
            continue
        named = Path(source)
        if not named.is_file():
            continue
        if named.suffix.lower() == ".gz":
            broken = _broken_gzip(named)
            if broken is not None:
                return InputError(f"{role} {_shown(named)}: {broken}")
        suffix = table_suffix(named)
        damaged = ("frame", "zstd", "decompress", "unexpected end")
        if _head(named, role).startswith(_ZSTD) and any(w in low for w in damaged):
            msg = (
                f"{role} {_shown(named)}: the zstd stream is cut short or damaged "
                f"({_reason(exc)}) (rule: a .zst file is complete; write or copy it again)"
            )
            return InputError(msg)
        try:
            path = readable(named)  # (its copy, for a bzip2 or UTF-16 file: the text read)
            if suffix not in _PARQUET:
                _refuse_control(path, role)
        except InputError as found:
            return found
        except (OSError, EOFError, zlib.error, pl.exceptions.PolarsError):  # (said below)
            path = named
        if "utf-8" in low or "utf8" in low:
            lineno = _first_bad_utf8_line(path)
            if lineno is not None:
                msg = (
                    f"{role} {_shown(path)}"
                    f", line {lineno}: not valid UTF-8 text (rule: text input is "
                    "UTF-8; convert the file, e.g. iconv -f latin1 -t utf-8)"
                )
                return InputError(msg)
        parsed = re.search(r"could not parse `(.*?)` as dtype `(\w+)` at column '(.*?)'", text)
        if suffix in _CSV and parsed:
            value, dtype, column = parsed.groups()
            if len(value) > 1 and value[0] == value[-1] == '"':  # (Polars quotes a quoted field)
                value = value[1:-1].replace('""', '"')
            lineno = _first_line_holding(path, _CSV[suffix], column, value)
            where = f", line {lineno}" if lineno is not None else ""
            msg = (
                f"{role} {_shown(path)}{where}: column {column!r} holds {value!r}, which is not a "
                f"number (rule: {column} values are numbers, {dtype} as the first rows read; "
                "leave the field empty for a missing value)"
            )
            if lineno is not None:
                return InputError(msg)
            # Polars does not say which file: the run's name was given for a word in the qrels
            # label column; the file that holds the word is the one to name
            unplaced = unplaced or InputError(msg)
            continue
        if suffix in _CSV and "more fields" in text:
            found = _first_long_line(path, _CSV[suffix])
            if found is not None:
                lineno, fields, n, line = found
                msg = (
                    f"{role} {_shown(path)}"
                    f", line {lineno}: expected {fields} fields as in the header, "
                    f"found {n}: {line!r} (rule: every row has the header's columns; quote "
                    "fields that contain the separator, or fix the row)"
                )
                return InputError(msg)
        limited = file_size_limit(exc)
        if suffix in _PARQUET and limited and "parquet" in low:
            msg = f"{role} {_shown(path)}: cannot be read under {limited} (raise the limit)"
            return InputError(msg)
        if suffix in _PARQUET and "parquet" in low:
            msg = (
                f"{role} {_shown(path)}"
                f": not a readable Parquet file ({_reason(exc)}); check that it "
                "was written completely, or write it again"
            )
            return InputError(msg)
    return unplaced


def _broken_gzip(path: Path) -> str | None:
    """What is wrong with a .gz file that cannot be read whole, or None."""
    with path.open("rb") as fh:
        if fh.read(2) != b"\x1f\x8b":
            return (
                "not a gzip file, though its name ends in .gz (rule: a .gz file is "
                "gzip-compressed; rename it, or compress it with gzip)"
            )
    try:
        with gzip.open(path, "rb") as fh:
            while fh.read(1 << 20):
                pass
    except (OSError, EOFError, zlib.error) as exc:
        return (
            f"the gzip stream is cut short or damaged ({_reason(exc)}) (rule: a .gz file "
            "is complete; write or copy it again)"
        )
    return None


def _first_line_holding(path: Path, separator: str, column: str, value: str) -> int | None:
    """The line of the first CSV record whose `column` field is `value`."""
    with _open_text(path) as fh:
        records = csv.reader(fh, delimiter=separator)
        header = next(records, [])
        if column not in header:
            return None
        i = header.index(column)
        start = records.line_num + 1
        for record in records:
            if len(record) > i and record[i].strip() == value.strip():
                return start
            start = records.line_num + 1
    return None


def _first_bad_utf8_line(path: Path) -> int | None:
    opener = _opener(path)
    with opener(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                return lineno
    return None


def _first_long_line(path: Path, separator: str) -> tuple[int, int, int, str] | None:
    with _open_text(path) as fh:
        rows = csv.reader(fh, delimiter=separator)
        header = next(rows, [])
        for row in rows:
            if len(row) > len(header):
                line = separator.join(row)
                return rows.line_num, len(header), len(row), line
    return None


_ZSTD = b"\x28\xb5\x2f\xfd"


def _first_line(path: Path, what: str) -> tuple[bytes, bool]:
    """The first line of a text file (plain, gzip or zstd) as bytes, and whether no other
    line holds anything; a compressed file that cannot be read is refused by name."""
    try:
        if _head(path, what).startswith(_ZSTD):  # (Python reads no zstd: Polars does)
            line = pl.col("l")
            lines = pl.scan_lines(path, name="l", glob=False)
            first = lines.head(1).collect()["l"].to_list()
            rest = lines.slice(1).filter(line.str.strip_chars() != "").head(1).collect()
            return ((first[0] + "\n").encode() if first else b""), rest.height == 0
        with _opener(path)(path, "rb") as fh:
            raw = fh.readline()
            return raw, not any(line.strip() for line in fh)
    except (OSError, EOFError, zlib.error, pl.exceptions.PolarsError) as exc:
        broken = _broken_gzip(path) if _opener(path) is not open else None
        msg = f"{what} {_shown(path)}: {broken or f'cannot be read ({_reason(exc)})'}"
        raise InputError(msg) from exc


def _csv_header(raw: bytes, path: Path, separator: str, what: str) -> list[str]:
    """The column names of a CSV's header, its first line `raw`.

    A byte-order mark (Windows editors write one) is no part of the first name. A name that
    appears twice is refused: Polars would read the second as ``NAME_duplicated_0`` and every
    rule would use the first, whichever the writer meant.
    """
    text = raw.decode("utf-8-sig", "replace").rstrip("\r\n")
    if "\r" in text:
        msg = (
            f"{what} {_shown(path)}"
            f", line 1: lines end with a carriage return alone (rule: CSV lines "
            "end with \\n or \\r\\n; convert the file, e.g. tr '\\r' '\\n')"
        )
        raise InputError(msg)
    header = next(csv.reader([text], delimiter=separator), [])
    seen: dict[str, int] = {}
    for i, name in enumerate(header, start=1):
        if name in seen:
            msg = (
                f"{what} {_shown(path)}"
                f", line 1: column {name!r} appears twice in the header (fields "
                f"{seen[name]} and {i}) (rule: column names are unique; rename one)"
            )
            raise InputError(msg)
        seen[name] = i
    return header


_PLAIN, _QUOTED, _MULTILINE, _CONTROL = "_plain", "_quoted", "_multiline", "_control"


def _has_control(line: pl.Expr) -> pl.Expr:
    """Whether a line (split at \\n) holds a NUL byte or a carriage return before its end."""
    return line.str.contains("\x00", literal=True) | line.str.strip_chars_end("\r").str.contains(
        "\r", literal=True
    )


def _first_control_line(path: Path) -> tuple[int, str] | None:
    """The first line (split at \\n) of `path` with a NUL byte or a carriage return before its
    end, and its text; None if there is none. Read by Polars, which reads plain, gzip and
    zstd files alike."""
    line = pl.col(_LINE)
    found = (
        pl.scan_lines(path, name=_LINE, row_index_name=_NO, row_index_offset=1, glob=False)
        .filter(_has_control(line))
        .head(1)
        .collect()
    )
    if not found.height:
        return None
    lineno, content = found.row(0)
    return lineno, content.removesuffix("\r")


def _refuse_control(path: Path, what: str) -> None:
    """Raise naming the first line of `path` that holds a NUL byte or a lone carriage return,
    if there is one."""
    found = _first_control_line(path)
    if found is not None:
        lineno, content = found
        msg = f"{what} {_shown(path)}, line {lineno}: {_control_rule(content)}: {content[:200]!r}"
        raise InputError(msg)


def _field_checked(
    rows: pl.LazyFrame, path: Path, separator: str, fields: int, what: str
) -> pl.LazyFrame:
    """`rows` (the CSV read by Polars) followed by a check that every row has the header's
    number of fields: a plan that reads the file's lines once more and adds no row.

    Polars reads a row's missing fields as nulls, and a null score or label has a meaning
    (not retrieved, unjudged): a short row anywhere would be evaluated without a word. The
    check counts the separators outside quotes on each line, in Polars, as the plan runs; a
    file with a quoted line break (a line with an odd number of quotes) is checked record by
    record with Python's csv module instead. Blank lines are skipped, by the read as well.
    """
    schema = rows.collect_schema()
    line = pl.col(_LINE)
    quotes = line.str.count_matches('"', literal=True)
    blank = line.is_in(["", "\r"])
    quoted = line.filter(quotes > 0)  # few lines: only they pay for the regex
    summary = pl.scan_lines(path, name=_LINE, glob=False).select(
        ((_fields(line, separator) != fields) & (quotes == 0) & ~blank).sum().alias(_PLAIN),
        # quoted fields ("" escapes are two quoted fields in a row) hold no separator of ours
        (_fields(quoted.str.replace_all('"[^"]*"', ""), separator) != fields).sum().alias(_QUOTED),
        (quotes % 2 == 1).any().alias(_MULTILINE),
        _has_control(line).any().alias(_CONTROL),
    )

    def verdict(df: pl.DataFrame) -> pl.DataFrame:
        plain, quoted, multiline, control = df.row(0)
        if control:
            _refuse_control(path, what)
        # (the header is a quoted line or not, and has its own count of fields by definition)
        found = (
            _first_short_record(path, separator, fields) if multiline or plain or quoted else None
        )
        if found is not None:
            lineno, content, n, count = found
            msg = (
                f"{what} {_shown(path)}, line {lineno}: expected {fields} fields as in the header, "
                f"found {n}: {content!r} ({count} {'row' if count == 1 else 'rows'} with a "
                "wrong field count) (rule: "
                "every row has every column; write an empty field for a missing value, quote "
                "fields that hold the separator)"
            )
            raise InputError(msg)
        return pl.DataFrame(schema=schema)

    blank = pl.all_horizontal(pl.all().is_null())  # a blank line is a row of nulls to Polars
    return pl.concat([rows.filter(~blank), summary.map_batches(verdict, schema=schema)])


def _fields(line: pl.Expr, separator: str) -> pl.Expr:
    return line.str.count_matches(separator, literal=True) + 1


def _first_short_record(
    path: Path, separator: str, fields: int
) -> tuple[int, str, int, int] | None:
    """The first record of a CSV whose field count is not `fields` (its line, text and field
    count, and how many such records), read record by record, so that a quoted line break is
    part of its field."""
    first, count = None, 0
    with _open_text(path) as fh:
        records = csv.reader(fh, delimiter=separator)
        next(records, None)
        start = records.line_num + 1
        for record in records:
            if record and len(record) != fields:
                count += 1
                if first is None:
                    first = (start, separator.join(record), len(record))
            start = records.line_num + 1
    return None if first is None else (*first, count)


def reads_by_range(source: Source) -> bool:
    """Whether reading a range of `source`'s rows costs only that range: a frame in memory, or
    a Parquet file (its row groups are found from the footer). A CSV or a lazy plan would be
    read from its start for every range."""
    if isinstance(source, pl.DataFrame):
        return True
    return isinstance(source, (str, Path)) and Path(source).suffix.lower() in _PARQUET


# --- TREC files --------------------------------------------------------------------------------
# A run line is `qid Q0 docno rank score tag`, a qrels line `qid iter docno rel`, fields separated
# by any run of spaces or tabs (trec_eval's `BLANKS`). Lines whose first non-blank character is
# '#' and blank lines are skipped (trec_eval 10 reads commented qrels; a '#' inside a docno is
# part of it). The rank and iter fields are read and ignored, as trec_eval does. Gzip files are
# read transparently.

_LINE, _NO, _BAD, _ODD = "_text", "_lineno", "_malformed", "_control"
# trec_eval's blanks (C's isspace but the line end): they separate fields, anything else
# (a no-break space, an em space) is part of an id, as in trec_eval
BLANKS = " \t\v\f"
_BLANK_RUN = re.compile(r"[ \t\v\f\r\n]+")
RUN_FIELDS = ("query", "q0", "doc", "rank", "score", "tag")
QRELS_FIELDS = ("query", "iter", "doc", "label")


def _trec_lines(
    path: Path,
    fields: tuple[str, ...],
    numeric: dict[str, pl.DataType],
    *,
    extra_ok: bool,
    what: str = "input",
) -> pl.LazyFrame:
    """Parse a TREC file lazily, line by line: its fields, its line number, and a
    malformed-line flag.

    `extra_ok`: fields after the last expected one are ignored (trec_eval does so for runs).
    """
    if not path.exists():
        msg = f"file not found: {_shown(path)}"
        raise InputError(msg)
    names = [f"field_{i}" for i in range(len(fields) + 1)]
    lf = _trec_fields_split(path, fields, what)
    lf = lf.rename(dict(zip(names[: len(fields)], fields, strict=True)))
    parsed = {name: pl.col(name).cast(dtype, strict=False) for name, dtype in numeric.items()}
    wrong_count = pl.col(fields[-1]).is_null()
    if not extra_ok:
        wrong_count = wrong_count | pl.col(names[-1]).is_not_null()
    # NaN parses as a float: evaluate's NaN rule reports it with its query and doc
    unparsable = pl.any_horizontal(
        [pl.col(n).is_not_null() & e.is_null() for n, e in parsed.items()]
    )
    lf = lf.with_columns(
        *[e.alias(n) for n, e in parsed.items()],
        (wrong_count | unparsable | pl.col(_ODD)).alias(_BAD),
    ).drop(names[-1], _ODD)
    return lf


def _read_together(files: list[Path]) -> tuple[dict[str, list[Path]], set[Path]]:
    """The TREC files read by one scan per separator (`_trec_together`): those whose fields
    are separated by single spaces (`_single_spaced`) or by single tabs (`_single_tabbed`),
    by separator; and the others, read apart (`_trec_checked`)."""
    small = sum(f.stat().st_size for f in files if f.is_file()) <= SMALL_CHECK_BYTES
    together: dict[str, list[Path]] = {}
    for f in files:
        if not f.is_file():
            continue
        if _single_spaced(f, small=small):
            together.setdefault(" ", []).append(f)
        elif _single_tabbed(f, small=small):
            together.setdefault("\t", []).append(f)
    read = {f for group in together.values() for f in group}
    return together, set(files).difference(read)


def _trec_together(
    files: list[Path],
    fields: tuple[str, ...],
    numeric: dict[str, pl.DataType],
    what: str,
    *,
    extra_ok: bool,
    separator: str = " ",
    keep: tuple[str, ...] | None = None,
) -> pl.LazyFrame:
    """The fields of TREC files whose fields are separated by one `separator` each
    (`_single_spaced`, `_single_tabbed`) read by one scan of Polars' CSV reader, column `_PATH`
    the file of each row (of several), numbers parsed, every line checked: a malformed one
    raises `InputError` naming the file and line, found by reading that file again, alone, line
    by line (`_trec_checked`: the scan's row numbers run across files). `keep`: the fields
    the frame holds (default: all but the last, unless it is a number); chosen before the
    check, which Polars cannot see through: a field not kept is checked, never materialised."""
    names = [f"field_{i}" for i in range(len(fields) + 1)]
    # one file: no column of its path (a string per row, which a stream would carry)
    many = len(files) > 1
    lf = pl.scan_csv(
        [str(f) for f in files], has_header=False, separator=separator, quote_char=None,
        comment_prefix="#", schema=dict.fromkeys(names, pl.String), truncate_ragged_lines=True,
        missing_columns="insert", extra_columns="ignore", glob=False,
        include_file_paths=_PATH if many else None,
    ).rename(dict(zip(names, fields, strict=False)))  # fmt: skip
    parsed = {name: pl.col(name).cast(dtype, strict=False) for name, dtype in numeric.items()}
    bad = [
        pl.col(fields[-1]).is_null(),  # too few fields
        *(pl.col(name).is_not_null() & value.is_null() for name, value in parsed.items()),
        *([] if extra_ok else [pl.col(names[-1]).is_not_null()]),
    ]
    kept = [name for name in fields if name != fields[-1] or name in numeric]
    kept = kept if keep is None else [name for name in fields if name in keep]
    path_column = {_PATH: pl.String} if many else {}
    schema = {**path_column, **{name: numeric.get(name, pl.String) for name in kept}}

    def check(df: pl.DataFrame) -> pl.DataFrame:
        flags = df.get_column(_BAD)
        if flags.any():
            path = Path(df.get_column(_PATH).filter(flags)[0]) if many else files[0]
            _malformed(path, fields, numeric, what, extra_ok=extra_ok)
        return df.drop(_BAD)

    return lf.select(
        *path_column, *(parsed.get(name, pl.col(name)).alias(name) for name in kept),
        pl.any_horizontal(bad).alias(_BAD),
    ).map_batches(check, schema=schema, streamable=True)  # fmt: skip


def _trec_checked(
    path: Path,
    fields: tuple[str, ...],
    numeric: dict[str, pl.DataType],
    what: str,
    *,
    extra_ok: bool,
) -> pl.LazyFrame:
    """The fields of one TREC file, read in a stream, every line checked (`_line_checker`)."""
    lf = _trec_lines(path, fields, numeric, extra_ok=extra_ok, what=what)
    return lf.map_batches(
        _line_checker(path, fields, what, extra_ok=extra_ok, numeric=numeric),
        schema=schema_of(lf, drop=(_NO, _BAD)),
        streamable=True,
    )


# single-spaced TREC runs up to this many bytes in all are read by one scan (larger ones one
# by one)
TOGETHER_BYTES = 2**28
# TREC files up to this many bytes in all are checked for single spaces with bytes' own
# searches; larger ones with numpy, whose import costs more than the check of small files
SMALL_CHECK_BYTES = 2**22
_PATH = "_path"


def _single_spaced(path: Path, *, small: bool = False) -> bool:
    """Whether every line of the plain (not gzip'd) TREC file `path` has its fields separated
    by exactly one space, with none before or after, and no blank line: Polars' CSV reader
    then splits it as trec_eval does, at its own speed. One pass over the bytes, in blocks:
    no tab, carriage return or NUL, and no two bytes in a row that are each a space or a line end
    (two spaces, a space at a line's start or end, a blank line); the first one ends it.
    `small`: a small file, searched for those pairs with bytes' own searches (no numpy)."""
    return _separated_by(path, b" ", b"\t", small=small)


def _single_tabbed(path: Path, *, small: bool = False) -> bool:
    """Whether every line of the plain TREC file `path` has its fields separated by exactly one
    tab, with no space anywhere (trec_eval splits at spaces too), none before or after, and no
    blank line: `_single_spaced`'s rule with a tab for the space."""
    return _separated_by(path, b"\t", b" ", small=small)


def _separated_by(path: Path, blank: bytes, other: bytes, *, small: bool) -> bool:
    """`_single_spaced`'s rule with `blank` between fields and `other` nowhere. A large file's
    blocks are searched on two threads while the next is read: numpy's passes and the reads
    release the GIL."""
    if _opener(path) is not open:
        return False

    def clean(last: bytes, block: bytes) -> bool:
        # (a NUL or a carriage return: the checked path refuses it, naming the line; a vertical
        # tab or form feed separates fields for trec_eval, not for the CSV reader)
        if any(byte in block for byte in (other, b"\r", b"\x00", b"\v", b"\f")):
            return False
        return not _pairs_of_blanks(last + block, small=small, blank=blank)

    with path.open("rb") as fh:
        first = fh.read(1 << 24)
        if first.startswith(b"\xef\xbb\xbf"):
            return False
        # (under an address-space limit, ulimit -v, one block at a time: the threads' blocks
        # and numpy's masks are address space the evaluation needs more)
        if small or len(first) < 1 << 24 or _address_limited():
            block, last = first, b"\n"  # as if a line ended before the file
            while block:
                if not clean(last, block):
                    return False
                last, block = block[-1:], fh.read(1 << 24)
            return path.stat().st_size > 0  # (an empty file: the split says what it holds)
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=2) as pool:
            pending, block, last = [], first, b"\n"
            while block:
                pending.append(pool.submit(clean, last, block))
                if len(pending) > 2:  # (two blocks searched, one read: bounded memory)
                    if not pending.pop(0).result():
                        return False
                last, block = block[-1:], fh.read(1 << 24)
            return all(f.result() for f in pending)


def _address_limited() -> bool:
    """Whether the process runs under an address-space limit (ulimit -v, RLIMIT_AS)."""
    try:
        import resource
    except ImportError:  # (Windows) no such limit
        return False
    return resource.getrlimit(resource.RLIMIT_AS)[0] != resource.RLIM_INFINITY


def _pairs_of_blanks(data: bytes, *, small: bool, blank: bytes = b" ") -> bool:
    """Whether two bytes in a row of `data` are each a `blank` (a space or a tab) or a line
    end."""
    if small:
        pairs = (blank + blank, b"\n" + blank, blank + b"\n", b"\n\n")
        return any(pair in data for pair in pairs)
    import numpy as np

    view = np.frombuffer(data, dtype=np.uint8)
    edge = (view == blank[0]) | (view == 10)
    return bool(np.any(edge[:-1] & edge[1:]))


def _trec_fields_split(path: Path, fields: tuple[str, ...], what: str = "input") -> pl.LazyFrame:
    """The fields of any TREC file, split on runs of spaces and tabs (trec_eval's rule), and
    `_ODD`: whether the line holds a NUL byte or a carriage return before its end (a line
    ended by ``\r`` alone runs into the next, which a split on blanks would hide: a run's
    fields past the sixth are ignored)."""
    line = pl.col(_LINE)
    # Runs of blanks become one space, on the lines that have any (a tab, or 2+ spaces): most
    # files use single spaces, so a literal test goes first and the regex runs only where it
    # can match. The regex rewrites only runs that need it: matching every single space, as
    # `[ \t]+` does, is several times slower. split_exact keeps one field past the expected
    # ones (non-null: too many fields) and drops the rest, faster than splitn, which keeps the
    # remainder
    blanks = pl.when(line.str.contains_any(["\t", "  ", "\v", "\f"])).then(
        line.str.replace_all(r"[ \t\v\f]{2,}|[\t\v\f]", " ")
    )
    parts = blanks.otherwise(line).str.split_exact(" ", len(fields))
    # (trec_eval's blanks and a CRLF's carriage return: not Unicode's white space, which
    # strip_chars() would take from a first or last id)
    stripped = line.str.strip_chars(BLANKS + "\r")
    if _starts_with_bom(path, what):  # (Windows editors write one): no part of the first id
        stripped = stripped.str.strip_chars_start("\ufeff")
    return (
        pl.scan_lines(path, name=_LINE, row_index_name=_NO, row_index_offset=1, glob=False)
        .with_columns(stripped)  # once, for the filter and the split
        .filter(line.str.len_bytes() > 0, ~line.str.starts_with("#"))
        .select(_NO, parts.alias("_parts"), line.str.contains_any(["\x00", "\r"]).alias(_ODD))
        .unnest("_parts")
    )


def _not_a_number(content: str, fields: tuple[str, ...], numeric: dict[str, None]) -> str:
    """The rule a line's numeric field breaks: a score is a number, a relevance an integer."""
    values = dict(zip(fields, _blank_split(content), strict=False))
    for name in numeric:
        # (Polars' parser, which read the field: Python's float() takes "1_000" and other
        # digits than ASCII's)
        if pl.Series([values.get(name, "")]).cast(pl.Float64, strict=False).is_null().any():
            return f"field {name} {values.get(name)!r} is not a number"
        if name == "label":
            return f"field label {values[name]!r} is not an integer (trec_eval reads integers)"
    return "a numeric field is not a number"


def _line_checker(
    path: Path,
    fields: tuple[str, ...],
    what: str,
    *,
    extra_ok: bool,
    numeric: dict[str, pl.DataType] | None = None,
):
    """A map_batches function: raise on a malformed line (`_malformed`)."""

    def check(df: pl.DataFrame) -> pl.DataFrame:
        if df.get_column(_BAD).any():
            _malformed(path, fields, numeric or {}, what, extra_ok=extra_ok)
        return df.drop(_NO, _BAD)

    return check


def _malformed(
    path: Path,
    fields: tuple[str, ...],
    numeric: dict[str, pl.DataType],
    what: str,
    *,
    extra_ok: bool,
) -> NoReturn:
    """Raise `InputError` on the first malformed line of the TREC file `path`: its number, the
    rule it breaks, the line itself, and how many lines are malformed in all.

    A stream hands a line check one batch at a time, in no set order, so the file is read once
    more, whole, on this error path only (in memory: a stream's engine cannot run inside
    another's callback)."""
    first, count = (
        _trec_lines(path, fields, numeric, extra_ok=extra_ok, what=what)
        .filter(pl.col(_BAD))
        .select(pl.col(_NO).min(), pl.len())
        .collect(engine="in-memory")
        .row(0)
    )
    if not count:  # (a batch's flag the whole file does not confirm: not expected)
        msg = f"{what} {_shown(path)}: a malformed line"
        raise InputError(msg)
    content = _read_line(path, int(first))
    n_fields = len(_blank_split(content))
    rule = (
        _control_rule(content)
        or (
            f"expected {len(fields)} fields ({' '.join(fields)}), found {n_fields}"
            if n_fields < len(fields) or (n_fields > len(fields) and not extra_ok)
            else None
        )
        or _not_a_number(content, fields, dict.fromkeys(numeric))
    )
    msg = (
        f"{what} {_shown(path)}, line {first}: {rule}: {content!r} "
        f"({counted(count, 'malformed line')} in all){_swapped(fields, n_fields)}"
    )
    raise InputError(msg)


def _swapped(fields: tuple[str, ...], n_fields: int) -> str:
    """A hint when a malformed line has the other TREC file's fields: a run given as the qrels,
    or qrels as a run (`preval trec RUN QRELS`, trec_eval's order being QRELS RUN)."""
    if fields == QRELS_FIELDS and n_fields == len(RUN_FIELDS):
        return "; this is a run's line (query Q0 doc rank score tag): is a run given as the qrels?"
    if fields == RUN_FIELDS and n_fields == len(QRELS_FIELDS):
        return "; this is a qrels line (query iter doc label): are qrels given as a run?"
    return ""


def _blank_split(text: str) -> list[str]:
    """`text`'s fields, split at runs of trec_eval's blanks (`BLANKS`, and a line's end: a
    line read with its newline, a CRLF line's carriage return)."""
    return [field for field in _BLANK_RUN.split(text) if field]


def _control_rule(content: str) -> str | None:
    """The rule a line with a NUL byte or a carriage return before its end breaks, or None."""
    if "\x00" in content:
        return (
            "a NUL byte (rule: text holds no NUL bytes; a UTF-16 file needs its byte-order "
            "mark, a binary file is no input)"
        )
    if "\r" in content:
        return (
            "a carriage return inside the line, which would end no line for a reader that "
            "splits at \\n (rule: lines end with \\n or \\r\\n; convert the file, e.g. "
            "tr '\\r' '\\n')"
        )
    return None


def _opener(path: Path):
    """gzip.open for a gzip file (by its first bytes, as Polars reads it), else open."""
    try:
        with path.open("rb") as fh:
            return gzip.open if fh.read(2) == b"\x1f\x8b" else open
    except OSError:
        return open


def _open_text(path: Path):
    """`path` (plain or gzip) as text for Python's csv module: UTF-8 without a BOM, lines
    not translated (a quoted line break stays in its field)."""
    return _opener(path)(path, "rt", encoding="utf-8-sig", errors="replace", newline="")


def _starts_with_bom(path: Path, what: str = "input") -> bool:
    """Whether `path`'s text starts with UTF-8's byte-order mark; a gzip file too damaged to
    give its first bytes is refused here, by name (`_text_head`)."""
    return _text_head(path, 3, what) == b"\xef\xbb\xbf"


def _read_line(path: Path, lineno: int) -> str:
    """Line `lineno` of `path`, lines ending at ``\n`` alone, as Polars splits them (a
    carriage return alone ends no line)."""
    opener = _opener(path)
    with opener(path, "rb") as fh:
        for i, raw in enumerate(fh, start=1):
            if i == lineno:
                text = raw.decode("utf-8", "replace").rstrip("\n")
                text = text[:-1] if text.endswith("\r") else text
                return text.removeprefix("\ufeff") if i == 1 else text
    return ""


def _first_tag(path: Path) -> str | None:
    """The tag of the first run line: trec_eval's runid for the file."""
    opener = _opener(path)
    try:
        with opener(path, "rt", encoding="utf-8-sig", errors="replace") as fh:
            for line in fh:
                parts = _blank_split(line)
                if parts and not parts[0].startswith("#"):
                    return parts[5] if len(parts) >= len(RUN_FIELDS) else None
    except (OSError, EOFError, zlib.error):  # the read of the run says what is wrong, by name
        return None
    return None


def run_tags(files: list[Path]) -> list[str | None]:
    """The runid of each run file (the tag of its first run line), None for a file without
    one (empty, or comments only)."""
    files = [readable(f, "run") for f in files]  # (a named pipe is read once: its copy here)
    return [_first_tag(f) if f.exists() else None for f in files]


def run_names(files: list[Path], tags: Sequence[str | None] | None = None) -> list[str]:
    """The ``system`` of each run file: its runid, or its path when runids are not unique;
    `tags`: the files' runids when already read (`run_tags`), else they are read here."""
    files = [readable(f, "run") for f in files]  # (a named pipe is read once: its copy here)
    tags = run_tags(files) if tags is None else list(tags)
    if len(set(tags)) == len(tags) and None not in tags:
        return [str(t) for t in tags]
    return [str(_shown(f)) for f in files]


class RunFiles(tuple):
    """TREC run files (a tuple of their paths) with the system of each (`run_names`), as the
    input stage resolved them: `scan_run` names the systems by `names` and reads no file's
    tag again, wherever the paths are passed on (a plan, curves)."""

    names: tuple[str, ...]

    def __new__(cls, paths: Iterable[str | Path], names: Iterable[str]) -> RunFiles:
        files = super().__new__(cls, paths)
        files.names = tuple(names)
        if len(files.names) != len(files):
            msg = f"RunFiles: {len(files.names)} names for {len(files)} run files"
            raise InputError(msg)
        return files

    def __getnewargs__(self) -> tuple[tuple[str | Path, ...], tuple[str, ...]]:
        return tuple(self), self.names


def _files(paths: str | Path | list[str | Path]) -> list[Path]:
    """One path or a list of them, as a list of paths (a directory is refused by name)."""
    listed = [paths] if isinstance(paths, (str, Path)) else paths
    for p in listed:
        if Path(p).is_dir():
            msg = f"run {p}: is a directory, not a file"
            raise InputError(msg)
    return [readable(p, "run") for p in listed]


def scan_run(paths: str | Path | list[str | Path]) -> pl.LazyFrame:
    """Read TREC run files lazily: columns ``system``, ``query``, ``doc``, ``score``.

    Each file is one run, as in trec_eval; its ``system`` is the tag of its first line (the
    runid), or the file path when several files share a runid; `RunFiles` carry their names
    (the caller has read the tags: none is read again). The rank column is ignored, and so
    are fields after the sixth (as trec_eval does).
    A malformed line (wrong number of fields, a score that is not a number) raises
    `InputError` naming the file, the line number and its content when the frame is collected.
    """
    files = _files(paths)
    if not files:
        msg = "scan_run: no run file given"
        raise InputError(msg)
    systems = list(paths.names) if isinstance(paths, RunFiles) else run_names(files)
    schema = {"query": pl.String, "doc": pl.String, "score": pl.Float64}
    numeric = {"score": pl.Float64}
    together, apart = _read_together(files)
    frames = []
    for separator, same in together.items():
        # large runs are scanned one by one: a scan of several carries each row's file path
        one_scan = sum(f.stat().st_size for f in same) <= TOGETHER_BYTES
        for group in [same] if one_scan else [[f] for f in same]:
            system = (
                pl.col(_PATH).replace_strict(
                    [str(f) for f in files], systems, return_dtype=pl.String
                )
                if len(group) > 1
                else pl.lit(systems[files.index(group[0])])
            )
            lf = _trec_together(
                group, RUN_FIELDS, numeric, "run", extra_ok=True, separator=separator,
                keep=tuple(schema),
            )  # fmt: skip
            frames.append(lf.select(system.alias("system"), *schema))
    for path, system in zip(files, systems, strict=True):
        if path in apart:
            lf = _trec_checked(path, RUN_FIELDS, numeric, "run", extra_ok=True)
            frames.append(lf.select(pl.lit(system).alias("system"), *schema))
    return frames[0] if len(frames) == 1 else pl.concat(frames, how="vertical")


def is_trec(source: object, input_format: str, kind: str = "run") -> bool:
    """Whether `source` is read as TREC files (runs, or qrels: `kind`) under `input_format`:
    ``"trec"`` reads every path so, ``"table"`` none, ``"auto"`` every path whose suffix is no
    table's (.parquet, .pq, .csv, .tsv, .tab): .run, .txt, .gz, no suffix ... A list of paths
    is a list of run files. The one rule of every face: the library, each command, plot."""
    if isinstance(source, (list, tuple)):
        paths = all(isinstance(p, (str, Path)) for p in source)
        return paths and kind == "run" and input_format != "table"
    if not isinstance(source, (str, Path)):
        return False
    if input_format != "auto":
        return input_format == "trec"
    if _parquet_directory(Path(source)) is not None:  # a table as Spark writes one
        return False
    return table_suffix(source) not in TABLE_SUFFIXES


def table_suffix(path: str | Path) -> str:
    """The suffix that says how `path` is read, lower case, after a compression suffix
    (``runs.csv.gz`` is a CSV file, compressed): ``.csv``, ``.parquet``, or any other."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in _COMPRESSION_SUFFIXES and Path(path.stem).suffix.lower() in _CSV:
        return Path(path.stem).suffix.lower()
    return suffix


def count_lines(paths: str | Path | list[str | Path]) -> int:
    """The lines of text files, counted without parsing them: for a TREC run, an upper bound
    of its rows (blank and comment lines count too)."""
    files = _files(paths)
    return pl.scan_lines(files, glob=False).select(pl.len()).collect().item()


def scan_qrels(path: str | Path, subtopic: str | None = None) -> pl.LazyFrame:
    """Read a TREC qrels file lazily: columns ``query``, ``doc``, ``label`` (Int64).

    The iter column is ignored, unless `subtopic` names it: diversity qrels (ndeval's, TREC
    Web track) hold the subtopic number there, read as a String column of that name between
    ``query`` and ``doc``. A malformed line (not 4 fields, a relevance that is not an
    integer) raises `InputError` naming the file, line number and content when collected.
    """
    path = require_file(path, "qrels", empty_ok=True)  # (nothing judged: trec_eval warns)
    numeric = {"label": pl.Int64}
    together, _ = _read_together([path])
    if together:
        ((separator, files),) = together.items()
        kept = ("query", "doc", "label", *(("iter",) if subtopic is not None else ()))
        lf = _trec_together(
            files, QRELS_FIELDS, numeric, "qrels", extra_ok=False, separator=separator,
            keep=kept,
        )  # fmt: skip
    else:
        lf = _trec_checked(path, QRELS_FIELDS, numeric, "qrels", extra_ok=False)
    if subtopic is not None:
        return lf.select("query", pl.col("iter").alias(subtopic), "doc", "label")
    return lf.select("query", "doc", "label")


def schema_of(lf: pl.LazyFrame, drop: tuple[str, ...] = ()) -> dict[str, pl.DataType]:
    return {n: t for n, t in lf.collect_schema().items() if n not in drop}
