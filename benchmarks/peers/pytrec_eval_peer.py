"""pytrec_eval peer: Parquet joined table -> run/qrels dicts ->
RelevanceEvaluator.evaluate -> mean per measure.

Usage: pytrec_eval_peer.py DATA.parquet --summary OUT.csv MEASURE [MEASURE ...]
where MEASURE is a preval name (AP, RR, Rprec, P@5, P@10) or a trec_eval name.
"""

from common import PYTREC_MEASURES, arguments, parquet_dicts, pytrec_means, report

args = arguments("data")
names = {m: PYTREC_MEASURES.get(m, m) for m in args.measures}
run, qrels = parquet_dicts(args.data)
report(pytrec_means(qrels, run, names), args.summary)
