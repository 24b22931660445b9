"""What the Spark faces (`preval.spark`, `preval.spark_fusion`) share: the hash bucket of the
query that groups whole queries into one worker call, how many buckets, and the conversions
between Polars, Arrow and Spark schemas. Spark itself is imported only inside the functions."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import polars as pl
import pyarrow as pa

from .errors import DuplicateError, InvalidValueError, PrevalError

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

# A bucket of about this many rows is one Python call: large enough that the per-call cost
# (building the plan, Arrow conversions) is small beside the work, small enough for a worker's
# memory (a bucket is held whole, as Arrow and as Polars).
ROWS_PER_BUCKET = 1_000_000
# Below this many rows per bucket, more buckets only add calls.
MIN_ROWS_PER_BUCKET = 100_000
_BUCKET = "_preval_bucket"


def default_buckets(sdf: DataFrame) -> int:
    """About one bucket per `ROWS_PER_BUCKET` rows, and at least the session's parallelism
    while buckets keep `MIN_ROWS_PER_BUCKET` rows; counts the rows (one Spark job)."""
    rows = sdf.count()
    conf = sdf.sparkSession.conf
    parallelism = 1
    for key in ("spark.default.parallelism", "spark.sql.shuffle.partitions"):
        value = conf.get(key, None)
        if value is not None and str(value).isdigit():
            parallelism = int(value)
            break
    by_size = math.ceil(rows / ROWS_PER_BUCKET)
    spread = min(parallelism, math.ceil(rows / MIN_ROWS_PER_BUCKET))
    return max(1, by_size, spread)


def _counted_in_bucket(error: PrevalError, num_buckets: int) -> PrevalError:
    """A data rule's error raised on one bucket, saying so: its count of offending rows (and
    its example) are the bucket's, not the table's, when there are several buckets."""
    if num_buckets <= 1 or not isinstance(error, (InvalidValueError, DuplicateError)):
        return error
    note = f"counted in the one bucket of whole queries, of {num_buckets}, that failed"
    said = type(error)(f"{error} ({note}: the table may hold more)")
    said.example, said.hints = error.example, error.hints
    return said


def _frame(table: pa.Table) -> pl.DataFrame:
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)  # a Table always converts to a DataFrame
    return frame.drop(_BUCKET, strict=False)


def _bucket(key: Column, num_buckets: int) -> Column:
    from pyspark.sql import functions as F

    return F.pmod(F.xxhash64(key), F.lit(num_buckets))


def _empty(sdf: DataFrame) -> pl.DataFrame:
    """An empty Polars frame with the Spark DataFrame's schema (no Spark job)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    frame = pl.from_arrow(to_arrow_schema(sdf.schema).empty_table())
    assert isinstance(frame, pl.DataFrame)
    return frame


def _collect(sdf: DataFrame) -> pl.DataFrame:
    """A small Spark DataFrame on the driver, as Polars."""
    frame = pl.from_arrow(sdf.toArrow())
    assert isinstance(frame, pl.DataFrame)
    return frame


# Arrow types that Spark does not take as they are, and the type it takes instead.
_SPARK_ARROW = {
    pa.large_string(): pa.string(),
    pa.string_view(): pa.string(),
    pa.large_binary(): pa.binary(),
    pa.uint8(): pa.int16(),
    pa.uint16(): pa.int32(),
    pa.uint32(): pa.int64(),
    pa.uint64(): pa.int64(),
}


def _spark_schema(schema: pl.Schema) -> Any:
    """The Spark StructType of a Polars schema (through Arrow, with Spark's types)."""
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import StructField, StructType

    arrow = pl.DataFrame(schema=schema).to_arrow().schema
    fields = []
    for f in arrow:
        fields.append(StructField(f.name, from_arrow_type(_SPARK_ARROW.get(f.type, f.type))))
    return StructType(fields)


def _arrow_schema(spark_schema: Any) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(spark_schema)


def _quote(name: str) -> str:
    """A column name as Spark's col() reads it literally (measure names hold '@', '(', '.')."""
    return "`" + name.replace("`", "``") + "`"
