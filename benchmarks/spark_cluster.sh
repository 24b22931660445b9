#!/usr/bin/env bash
# A Spark standalone cluster on this machine from the pyspark distribution's own scripts: one
# master and two workers (one core each), bound to the loopback address.
#
#   benchmarks/spark_cluster.sh start    # master at spark://127.0.0.1:7077
#   benchmarks/spark_cluster.sh stop
#
# The pip package of pyspark ships sbin/spark-daemon.sh but not start-master.sh or
# start-worker.sh, so the daemons are started with it directly, as those scripts do. Workers
# run the Python of the active environment (PYSPARK_PYTHON), which must have preval installed.
set -euo pipefail

SPARK_HOME="${SPARK_HOME:-$(python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')}"
export SPARK_HOME
export SPARK_LOCAL_IP=127.0.0.1
export SPARK_LOG_DIR="${SPARK_LOG_DIR:-/tmp/preval-spark-logs}"
export SPARK_PID_DIR="${SPARK_PID_DIR:-/tmp/preval-spark-pids}"
export PYSPARK_PYTHON="${PYSPARK_PYTHON:-$(command -v python)}"
MASTER=spark://127.0.0.1:7077
WORKER_MEMORY="${WORKER_MEMORY:-4g}"
DAEMON="$SPARK_HOME/sbin/spark-daemon.sh"

case "${1:-}" in
start)
  "$DAEMON" start org.apache.spark.deploy.master.Master 1 \
    --host 127.0.0.1 --port 7077 --webui-port 8080
  for i in 1 2; do
    "$DAEMON" start org.apache.spark.deploy.worker.Worker "$i" \
      --cores 1 --memory "$WORKER_MEMORY" --webui-port $((8080 + i)) "$MASTER"
  done
  ;;
stop)
  for i in 1 2; do "$DAEMON" stop org.apache.spark.deploy.worker.Worker "$i" || true; done
  "$DAEMON" stop org.apache.spark.deploy.master.Master 1 || true
  ;;
*)
  echo "usage: $0 start|stop" >&2
  exit 2
  ;;
esac
