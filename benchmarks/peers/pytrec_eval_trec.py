"""pytrec_eval peer on TREC text files: qrels + run -> dicts -> RelevanceEvaluator.evaluate
-> mean per measure.

Usage: pytrec_eval_trec.py QRELS RUN [--summary OUT.csv] [--parse loop|pytrec_eval]
                           MEASURE [MEASURE ...]
where MEASURE is a preval name (AP, RR, Rprec, P@5, P@10) or a pytrec_eval name.

Reading: ``--parse loop`` (default) is the fastest plain-Python reader found: one
``str.split`` per line, the inner dict looked up once per query (lines of a query are
contiguous), and a duplicate (query, doc) detected by comparing the line count with
the number of entries (trec_eval and preval reject duplicates). ``--parse pytrec_eval``
uses the package's own ``pytrec_eval.parse_run`` / ``parse_qrel`` (``strip().split()``,
a defaultdict and an ``assert`` per line): same dicts, ~15% slower to read.
"""

import pytrec_eval
from common import PYTREC_MEASURES, arguments, pytrec_means, read_qrels, read_run, report

args = arguments(
    "qrels",
    "run",
    extra=lambda p: p.add_argument("--parse", choices=["loop", "pytrec_eval"], default="loop"),
)
names = {m: PYTREC_MEASURES.get(m, m) for m in args.measures}

if args.parse == "pytrec_eval":
    with open(args.qrels) as f:
        qrels = pytrec_eval.parse_qrel(f)
    with open(args.run) as f:
        run = pytrec_eval.parse_run(f)
else:
    qrels = read_qrels(args.qrels)
    run = read_run(args.run)

report(pytrec_means(qrels, run, names), args.summary)
