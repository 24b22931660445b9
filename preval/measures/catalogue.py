"""The catalogue as rows (`preval measures`) and as the README's markdown table."""

from __future__ import annotations

from .registry import CATALOGUE


def catalogue_rows() -> list[dict[str, str]]:
    """One row per measure for `preval measures` and the README table."""
    rows = []
    for d in CATALOGUE.values():
        form = d.name
        if d.params:
            form += "(" + ",".join(f"{k}=" for k in d.params) + ")"
        form += {"required": "@K", "optional": "[@K]", "none": ""}[d.cutoff]
        rows.append(
            {
                "measure": form,
                "summary": d.summary,
                "trec_eval": d.trec,
                "aliases": ", ".join(d.aliases),
                "definition": d.doc,
            }
        )
    return rows


def markdown_table() -> str:
    rows = catalogue_rows()
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(r[c].replace("|", "\\|") for c in cols) + " |" for r in rows]
    return "\n".join(lines)
