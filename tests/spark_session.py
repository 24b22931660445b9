"""One small local Spark session for the tests that need Spark (skipped without Java)."""

from __future__ import annotations

import os
import shutil
import sys

import pytest


def spark_session():
    """A local[2] SparkSession with a small fixed cost, or a visible skip without Java/pyspark.

    Workers run this interpreter (`PYSPARK_PYTHON`), the driver binds to the loopback address
    (these machines' hostnames do not resolve to a reachable one), the UI is off and shuffles
    use few partitions: the test data is small.
    """
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark tests need Java (no `java` on PATH and no JAVA_HOME)")
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'preval[spark]')")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("preval-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark
