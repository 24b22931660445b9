"""Presenting results: text tables (one number format per column), the paper tables of a
comparison (Markdown, LaTeX with booktabs), and files written atomically by their suffix."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from pathlib import Path

import polars as pl

from . import _signals
from .errors import InputError
from .io import file_size_limit
from .measures import measure_columns
from .spill import temp_dir

FORMATS = ("table", "csv", "json")  # printed on stdout; Parquet goes to --summary x.parquet
_SUFFIXES = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".tsv": "tsv",
    ".json": "json",
    ".ndjson": "ndjson",
    ".jsonl": "ndjson",
    ".txt": "table",
}


# an output path that means standard output, as Unix tools read it (`preval trec QRELS -` reads
# its run from stdin): the table a command prints goes there anyway, so `-o -` is that table
STDOUT = "-"


def printed(path: str | Path | None) -> str | Path | None:
    """`path`, or None when it is `STDOUT`: the output a command prints on stdout when no file
    is given (`--summary -`, `compare --output -`) goes there with ``-`` too."""
    return None if path is not None and str(path) == STDOUT else path


def format_for(path: str | Path) -> str:
    """The file format of an output path, from its suffix."""
    suffix = Path(path).suffix.lower()
    if suffix not in _SUFFIXES:
        known = ", ".join(sorted(_SUFFIXES))
        msg = f"cannot tell the output format of {path} from its suffix (known: {known})"
        raise InputError(msg)
    return _SUFFIXES[suffix]


def check_target(path: str | Path) -> str:
    """Validate an output path before any work: a known suffix, an existing directory, and
    no directory in its place.

    Checking every target first means one bad target cannot leave the others written.
    """
    fmt = format_for(path)
    check_place(path)
    return fmt


def is_stream(path: str | Path) -> bool:
    """Whether `path` is (or links to) a stream an output is written into, not a file it
    replaces: a named pipe (``mkfifo``), a character device (``/dev/stdout``, ``/dev/null``),
    a socket. Renaming a file over it would remove the reader's pipe (or, for root, the
    device) and leave the reader waiting. A descriptor's name (``/dev/stdout``, ``/dev/fd/N``,
    ``/proc/self/fd/N``) is one too, whatever it is open on: a shell's ``>>`` file is appended
    to, not replaced."""
    try:
        mode = os.stat(path).st_mode  # (through links)
    except OSError:
        return False
    descriptor = str(path).startswith(("/dev/", "/proc/"))
    return descriptor or not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def placed(path: str | Path) -> Path:
    """Where the file for `path` goes: a symbolic link's target (the link stays a link, as a
    shell's ``>`` writes through it), else `path`."""
    path = Path(path)
    return path.resolve() if path.is_symlink() else path


def check_place(path: str | Path) -> None:
    """Refuse a place no file can be written to, whatever its format: a folder that does not
    exist, or is a file, or is not writable; a directory in the file's place. A stream
    (`is_stream`) takes any output."""
    try:
        os.stat(path)
    except OSError as exc:  # (a missing file is what most outputs are: written below)
        if exc.errno == errno.ELOOP:  # a link to itself: resolving it raises, not names it
            msg = f"cannot write {path}: {exc.strerror} (a loop of symbolic links)"
            raise InputError(msg) from exc
    if is_stream(path):
        return
    target = placed(path)
    parent = target.parent
    if parent.exists() and not parent.is_dir():
        msg = f"cannot write {path}: {parent} is a file, not a directory"
        raise InputError(msg)
    if not parent.is_dir():
        msg = f"cannot write {path}: directory {parent} does not exist"
        raise InputError(msg)
    if target.is_dir():
        msg = f"cannot write {path}: it is a directory"
        raise InputError(msg)
    if not os.access(parent, os.W_OK | os.X_OK):
        msg = f"cannot write {path}: directory {parent} is not writable"
        raise InputError(msg)


def check_targets(outputs: dict[str, str | Path | None], inputs: list[str | Path | None]) -> None:
    """Validate every output path (`outputs`: option -> path) before anything is read.

    An output that is one of the inputs would replace the data it is computed from, and two
    outputs on one path would keep only the last one: both are refused, as is any target that
    `check_target` refuses.
    """
    for option, path in outputs.items():
        if path is not None and str(path) == STDOUT:
            msg = (
                f"{option} -: standard output holds the table the command prints; write this "
                "one to a file (its suffix gives the format: .csv, .tsv, .json, .parquet ...)"
            )
            raise InputError(msg)
        if path:
            check_target(path)
    check_distinct(outputs, inputs)


def check_distinct(outputs: dict[str, str | Path | None], inputs: list[str | Path | None]) -> None:
    """Refuse an output path that is an input, or that another output names too."""
    given = {option: Path(p) for option, p in outputs.items() if p}
    seen: dict[Path, str] = {}
    for option, path in given.items():
        for source in inputs:
            if source and _same_file(path, Path(source)):
                msg = (
                    f"{option} {path}: that is the input file {source}; writing there would "
                    "replace the data being evaluated (choose another path)"
                )
                raise InputError(msg)
        key = _resolved(path)
        if key in seen:
            msg = f"{seen[key]} and {option} name the same file {path}: choose two paths"
            raise InputError(msg)
        seen[key] = option


def _same_file(a: Path, b: Path) -> bool:
    if a.exists() and b.exists():
        return os.path.samefile(a, b)
    return _resolved(a) == _resolved(b)


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a loop of links: no file (`check_place` says so)
        return path.absolute()


def table(df: pl.DataFrame, decimals: int = 4) -> str:
    """A plain aligned text table: rates with `decimals` decimals, counts as integers."""
    specs = measure_columns(df.schema)
    counts = {n for n, s in specs.items() if s.summary == "sum"} | {"NumQ"}
    cells = [list(df.columns)]
    for row in df.iter_rows():
        cells.append(
            [_cell(v, name in counts, decimals) for name, v in zip(df.columns, row, strict=True)]
        )
    widths = [max(len(r[i]) for r in cells) for i in range(len(df.columns))]
    numeric = [df.schema[c].is_numeric() for c in df.columns]
    lines = [
        "  ".join(
            c.rjust(w) if num else c.ljust(w) for c, w, num in zip(r, widths, numeric, strict=True)
        )
        for r in cells
    ]
    return "\n".join(line.rstrip() for line in lines)


P_VALUES = ("p_value", "p_corrected")


def readable(table: pl.DataFrame, columns: tuple[str, ...] = P_VALUES) -> pl.DataFrame:
    """`table` for a text table, each p-value column (`columns`) in one format for the whole
    column: 4 decimals (``0.0231``) when every value is at least 0.0001, else scientific
    notation with 2 significant digits (``3.4e-87``, ``2.3e-02``), which 4 decimals would print
    as 0.0000. A null is ``-``."""
    shown = []
    for name in (c for c in columns if c in table.columns):
        values = table[name].cast(pl.Float64)
        small = bool((values.fill_nan(0.0) < 1e-4).any())
        spec = ".1e" if small else ".4f"
        cells = ["-" if v is None else format(v, spec) for v in values.to_list()]
        shown.append(pl.Series(name, cells, dtype=pl.String))
    return table.with_columns(shown)


LATEX_PACKAGES = "% needs \\usepackage{booktabs} (\\toprule, \\midrule, \\bottomrule)"
_LATEX_SPECIAL = {c: "\\" + c for c in "&%$#_{}"} | {
    "\\": "\\textbackslash{}", "~": "\\textasciitilde{}", "^": "\\textasciicircum{}",
}  # fmt: skip


def latex_text(text: str) -> str:
    """`text` with LaTeX's special characters escaped (a system named ``bm25_rm3``)."""
    return "".join(_LATEX_SPECIAL.get(c, c) for c in str(text))


def paper_table(
    result: pl.DataFrame,
    fmt: str,
    *,
    test: str,
    correction: str,
    alpha: float,
    label: str = "tab:preval-compare",
) -> str:
    """The means of every system per measure as papers print them: a Markdown or LaTeX table
    where a superscript names the systems (by letter) that a system beats significantly, the
    best mean of each measure in bold, and a caption naming test, correction and alpha.

    LaTeX: a ``table`` float with ``\\caption`` and ``\\label`` (`label`) around a booktabs
    ``tabular`` (``\\toprule``, ``\\midrule``, ``\\bottomrule``), after a comment line naming
    the package it needs; names are escaped. Markdown: the table, then the caption.
    """
    systems = sorted(set(result["system"]) | set(result["baseline"]))
    letter = {s: chr(ord("a") + i) for i, s in enumerate(systems)}
    measures = list(dict.fromkeys(result["measure"]))
    means: dict[tuple[str, str], float] = {}
    beats: dict[tuple[str, str], list[str]] = {}
    for row in result.iter_rows(named=True):
        means[(row["system"], row["measure"])] = row["mean"]
        means[(row["baseline"], row["measure"])] = row["baseline_mean"]
        if row["significant"] and row["delta"] is not None and row["delta"] != 0:
            pair = (row["system"], row["baseline"])
            winner, loser = pair if row["delta"] > 0 else pair[::-1]
            beats.setdefault((winner, row["measure"]), []).append(letter[loser])
    best = {
        m: max(v for (_, mm), v in means.items() if mm == m and v is not None) for m in measures
    }
    latex = fmt == "latex"
    escape = latex_text if latex else str
    lines = []
    header = ["system", *map(escape, measures)]
    if latex:
        lines += ["\\begin{tabular}{l" + "r" * len(measures) + "}", "\\toprule",
                  " & ".join(header) + " \\\\", "\\midrule"]  # fmt: skip
    else:
        lines += ["| " + " | ".join(header) + " |", "|---|" + "---:|" * len(measures)]
    for s in systems:
        cells = [f"({letter[s]}) {escape(s)}"]
        for m in measures:
            value = means.get((s, m))
            text = "" if value is None else f"{value:.4f}"
            if value is not None and value == best[m]:
                text = f"\\textbf{{{text}}}" if latex else f"**{text}**"
            marks = "".join(sorted(beats.get((s, m), [])))
            if marks:
                text += f"$^{{{marks}}}$" if latex else f"<sup>{marks}</sup>"
            cells.append(text)
        lines.append(" & ".join(cells) + " \\\\" if latex else "| " + " | ".join(cells) + " |")
    # Tukey's HSD holds the family-wise level itself: `compare` applies no correction on top
    family = ("Tukey's HSD, family-wise per measure" if test == "tukey"
              else f"{test} test, {correction} correction per measure")  # fmt: skip
    caption = (
        f"Superscripts: systems beaten significantly ({family}, alpha = {alpha:g}); "
        "best mean of each measure in bold."
    )
    if not latex:
        return "\n".join([*lines, "", caption]) + "\n"
    listed = ", ".join(map(escape, measures))
    head = [LATEX_PACKAGES, "\\begin{table}", "\\centering",
            f"\\caption{{Mean {listed} per system. {caption}}}", f"\\label{{{label}}}"]  # fmt: skip
    return "\n".join([*head, *lines, "\\bottomrule", "\\end{tabular}", "\\end{table}"]) + "\n"


def _cell(value: object, integer: bool, decimals: int) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value != value:  # NaN
            return "nan"
        return str(round(value)) if integer else f"{value:.{decimals}f}"
    return str(value)


def counts_as_integers(data: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame | pl.LazyFrame:
    """`data` with its count columns (``NumQ`` and the measures summed in a summary: NumRet,
    NumRel, NumRelRet ...) as Int64, as the text table shows them.

    The planner computes every measure as Float64; a count written to CSV or JSON as ``12.0``
    reads as a rate. Per-query and summary outputs both pass here, so they agree. Other
    columns (a long table's mixed ``value`` column) are left as they are.
    """
    schema = data.collect_schema() if isinstance(data, pl.LazyFrame) else data.schema
    specs = measure_columns(schema)
    names = {n for n, s in specs.items() if s.summary == "sum"} | {"NumQ"}
    counts = [n for n in schema.names() if n in names and schema[n].is_float()]
    return data.with_columns(pl.col(counts).cast(pl.Int64)) if counts else data


def render(df: pl.DataFrame, fmt: str) -> str:
    """`df` as text in one of FORMATS (parquet is not text); counts as integers."""
    df = counts_as_integers(df)
    if fmt == "table":
        return table(df) + "\n"
    if fmt == "csv":
        return df.write_csv()
    if fmt == "tsv":
        return df.write_csv(separator="\t")
    if fmt == "json":
        return df.write_json() + "\n"
    if fmt == "ndjson":
        return df.write_ndjson()
    msg = f"format {fmt!r} cannot be printed; write it to a file instead"
    raise InputError(msg)


def write(data: pl.DataFrame | pl.LazyFrame, path: str | Path) -> None:
    """Write a frame to `path` in the format of its suffix, atomically (see `Outputs`)."""
    with Outputs() as outputs:
        outputs.write(data, path)


# the outputs put in place by this process's command so far: a signal held back while they
# were renamed (`_signals.held`) ends the command after them, which its message then says
WRITTEN: list[Path] = []


class Outputs:
    """Files written to temporary files beside their targets, renamed into place together.

    A failed write never leaves a partial or truncated file behind, and the outputs of one run
    appear together when the block ends without error: two runs racing on the same paths
    leave one run's files, never a mix. A LazyFrame is streamed to Parquet, CSV, TSV and
    NDJSON by Polars' sinks, never held whole in memory (unless its plan needs that, like a
    sort); the other formats collect it first.
    """

    def __init__(self) -> None:
        self._staged: list[tuple[str, Path]] = []
        self._streamed: list[tuple[str, Path]] = []

    def __enter__(self) -> Outputs:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        # the renames and the clean-up run with the ending signals held back: one arriving
        # between two renames, or while the temporary files are removed, is delivered (and
        # raised) once all of them are renamed or gone
        try:
            with _signals.held():
                try:
                    if kind is None:
                        for tmp, path in self._staged:
                            target = placed(path)
                            _keep_mode(tmp, target)
                            os.replace(tmp, target)
                            WRITTEN.append(path)
                finally:  # failed, or interrupted: no temporary file stays behind
                    self._remove_staged()
        finally:
            # a signal that came as the handlers were being swapped (Ctrl-C that Polars'
            # sink had deferred, sent again as it ended) left the block before its clean-up
            self._remove_staged()
        # a stream gets its complete output after the files are in place (its reader may be a
        # step that reads them too); a signal now ends the copy, and the copy is removed
        try:
            for tmp, path in self._streamed if kind is None else ():
                try:  # (appended: a descriptor a shell opened with >> keeps what it holds)
                    with open(tmp, "rb") as source, open(path, "ab") as sink:
                        shutil.copyfileobj(source, sink)
                except OSError as exc:
                    reason = exc.strerror or str(exc)
                    msg = f"cannot write {path}: {reason} (free space or choose another path)"
                    raise InputError(msg) from exc
                WRITTEN.append(path)
        finally:
            for tmp, _ in self._streamed:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)

    def _remove_staged(self) -> None:
        for tmp, _ in self._staged:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    def stage(self, path: str | Path) -> str:
        """A new temporary file for `path`, put in place when the block ends: hidden beside
        the file (beside a link's target), or in the temporary directory for a stream. It is
        listed before it exists, so that whatever interrupts its writing removes it, and made
        exclusively: a file or link that appeared under its name is refused, not written
        through (the writers open the name again, ours by then)."""
        path = Path(path)
        if is_stream(path):
            # named and listed before it is made, as beside a file (mkstemp made it first: a
            # signal raised as mkstemp returned left it in the temporary directory)
            tmp = str(Path(temp_dir()) / f"preval-{os.urandom(8).hex()}.tmp")
            self._streamed.append((tmp, path))
            os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            return tmp
        tmp = hidden_beside(placed(path), ".tmp")
        self._staged.append((tmp, path))
        os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
        return tmp

    def write(self, data: pl.DataFrame | pl.LazyFrame, path: str | Path) -> None:
        path = Path(path)
        fmt = check_target(path)
        data = counts_as_integers(data)
        tmp = str(path)  # (named in a message until the temporary file is made)
        try:
            tmp = self.stage(path)
            if isinstance(data, pl.LazyFrame) and fmt in ("parquet", "csv", "tsv", "ndjson"):
                _sink(data, tmp, fmt)
            else:
                df = data.collect() if isinstance(data, pl.LazyFrame) else data
                if fmt == "parquet":
                    df.write_parquet(tmp)
                else:
                    Path(tmp).write_text(render(df, fmt), encoding="utf-8")
        except (pl.exceptions.PolarsError, OSError) as exc:
            # the user gave `path`: the hidden temporary file beside it is no name to show
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else "write failed"
            text = text.replace(str(Path(tmp).resolve()), str(path)).replace(tmp, str(path))
            reason = getattr(exc, "strerror", None) or text
            hint = "free space or choose another path"
            limited = file_size_limit(exc)
            if limited:
                reason, hint = f"it would be larger than {limited}", "raise the limit"
            msg = f"cannot write {path}: {reason} (nothing was written; {hint})"
            raise InputError(msg) from exc


def _keep_mode(tmp: str, target: Path) -> None:
    """Give the temporary file that replaces `target` the permission bits `target` has (a
    file made 0o640 stays 0o640, as a shell's ``>`` keeps it); a new file keeps its own
    (0o666 less the umask). The rename makes a new file all the same: hard links to the old
    one keep the old contents, and its owner and group are the writer's (docs/cli.md)."""
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode) & 0o777
    except FileNotFoundError:
        return
    os.chmod(tmp, mode)


def hidden_beside(path: Path, suffix: str) -> str:
    """A name for a temporary file beside `path`, hidden and random (64 bits: no run meets
    another's), chosen before the file is made so that whoever removes it knows it first."""
    return str(path.parent / f".{path.name}.{os.urandom(8).hex()}{suffix}")


def _sink(lf: pl.LazyFrame, path: str, fmt: str) -> None:
    if fmt == "parquet":
        lf.sink_parquet(path)
    elif fmt == "ndjson":
        lf.sink_ndjson(path)
    else:
        lf.sink_csv(path, separator="\t" if fmt == "tsv" else ",")
