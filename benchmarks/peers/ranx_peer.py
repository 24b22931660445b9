"""ranx peer: Parquet joined table -> run/qrels dicts -> ranx.Qrels.from_dict /
ranx.Run.from_dict -> ranx.evaluate -> mean per measure.

Usage: ranx_peer.py DATA.parquet MEASURE [MEASURE ...] [--summary OUT.csv]
where MEASURE is a preval name (AP, RR, Rprec, P@5, P@10) or a ranx metric name.

``from_dict`` is the constructor ``Qrels.from_df`` / ``Run.from_df`` end in: they
group a pandas frame with a Python lambda per query and then call ``from_dict``
(and they require ``object`` id columns, which pandas 3 no longer produces for
strings). Building the dicts with a Polars ``group_by`` is the faster route.
"""

from common import RANX_MEASURES as MEASURES
from common import arguments, parquet_dicts, report
from ranx import Qrels, Run, evaluate

args = arguments("data")
names = {m: MEASURES.get(m, m) for m in args.measures}
run_dict, qrels_dict = parquet_dicts(args.data)
run, qrels = Run.from_dict(run_dict), Qrels.from_dict(qrels_dict)
del run_dict, qrels_dict

# returns {metric: mean over the run's queries} (a float when there is one metric)
scores = evaluate(qrels, run, list(names.values()), make_comparable=True)
if not isinstance(scores, dict):
    scores = {next(iter(names.values())): scores}
report([(m, float(scores[t])) for m, t in names.items()], args.summary)
