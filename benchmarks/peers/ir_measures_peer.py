"""ir_measures peer: Parquet joined table -> run/qrels dicts ->
ir_measures.calc_aggregate -> mean per measure.

Usage: ir_measures_peer.py DATA.parquet MEASURE [MEASURE ...] [--summary OUT.csv]
where MEASURE is a preval name (AP, RR, Rprec, P@5, P@10) or an ir_measures name.

``calc_aggregate`` accepts qrels and run as an iterable of namedtuples, a pandas
DataFrame or a dict of dicts; its provider for these measures (pytrec_eval)
converts the first two into the dict of dicts, so the dicts are passed directly.
"""

import ir_measures
from common import arguments, parquet_dicts, report

args = arguments("data")
# preval and ir_measures share these names (AP, RR, Rprec, P@5, P@10, nDCG@10, R@100)
names = {m: ir_measures.parse_measure(m) for m in args.measures}
run, qrels = parquet_dicts(args.data)
agg = ir_measures.calc_aggregate(list(names.values()), qrels, run)
report([(m, float(agg[t])) for m, t in names.items()], args.summary)
