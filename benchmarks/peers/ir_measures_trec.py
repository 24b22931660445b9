"""ir_measures peer on TREC text files: qrels + run -> dicts of dicts (the reader of
pytrec_eval_trec.py) -> ir_measures.calc_aggregate -> mean per measure.

Usage: ir_measures_trec.py QRELS RUN MEASURE [MEASURE ...] [--summary OUT.csv]
where MEASURE is a preval name (AP, RR, Rprec, P@5, P@10) or an ir_measures name.
The dict of dicts is the fastest of the inputs calc_aggregate takes (its provider for these
measures, pytrec_eval, converts the others into it); ir_measures' own readers
(read_trec_run / read_trec_qrels) yield namedtuples, converted the same way, more slowly.
"""

import ir_measures
from common import arguments, read_qrels, read_run, report

args = arguments("qrels", "run")
names = {m: ir_measures.parse_measure(m) for m in args.measures}
qrels, run = read_qrels(args.qrels), read_run(args.run)
agg = ir_measures.calc_aggregate(list(names.values()), qrels, run)
report([(m, float(agg[t])) for m, t in names.items()], args.summary)
