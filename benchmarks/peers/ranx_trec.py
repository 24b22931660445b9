"""ranx peer on TREC text files: ranx.Qrels.from_file / ranx.Run.from_file (its own TREC
readers) -> ranx.evaluate -> mean per measure.

Usage: ranx_trec.py QRELS RUN MEASURE [MEASURE ...] [--summary OUT.csv]
where MEASURE is a preval name (AP, RR, Rprec, P@5, P@10) or a ranx metric name.
ranx compiles its Numba kernels in every new process; the wall time includes it.
ranx breaks score ties differently from trec_eval (AP/RR may differ in the 4th decimal on
tied scores).
"""

from common import RANX_MEASURES, arguments, report
from ranx import Qrels, Run, evaluate

args = arguments("qrels", "run")
names = {m: RANX_MEASURES.get(m, m) for m in args.measures}
qrels = Qrels.from_file(args.qrels, kind="trec")
run = Run.from_file(args.run, kind="trec")
scores = evaluate(qrels, run, list(names.values()), make_comparable=True)
if not isinstance(scores, dict):
    scores = {next(iter(names.values())): scores}
report([(m, float(scores[t])) for m, t in names.items()], args.summary)
