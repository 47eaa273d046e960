"""The findings page: header, seed claims, one section per notebook, failures, provenance."""
from __future__ import annotations

import html
from datetime import datetime, timezone
from pathlib import Path

from .records import JobRecord
from .sections import (CLAIMS_NOTEBOOK, _md_inline, composite_table, figures_html, provenance_footer,


                       seed_claims_section, title_and_question)
from .style import BIAS_MARK, CSS, MATHJAX_CONFIG, MATHJAX_PRECONFIG, SEPARATED


# ------------------------------------------------------------------------------ pages
def findings_body(profile: str, groups: dict[str, list[JobRecord]], description: str = "", *,
                  embed: bool = False, prefix: str = "", out_root: Path | None = None) -> str:
    """The findings: header, the seed claims with verdicts (when ``out_root`` is given), table
    of contents, one section per notebook, failures, provenance."""
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    n_ok = sum(r.ok for rs in groups.values() for r in rs)
    n_fail = sum(not r.ok for rs in groups.values() for r in rs)
    parts = [f"<h1>geolip findings report — profile <code>{html.escape(profile)}</code></h1>",
             f"<p>{html.escape(description)}</p>",
             f"<p class='note'>Generated {now}. {n_ok} completed job(s), {n_fail} failed. Each headline number "
             "is printed as <b>value [95 % interval]</b> to the decimal its interval supports; the null models "
             "follow below it (gaussian: isotropic Gaussian of matched shape and scale; random_init: the same "
             f"architecture at random initialisation; sphere: uniform on the unit sphere; shuffled: pairing "
             f"destroyed). <span style='color:#1a6b2a'>{SEPARATED}</span> marks a null that the interval excludes; "
             f"{BIAS_MARK} marks a bias-corrected interval that the sample value lies outside (the table's notes say "
             "why: a participation ratio of sampled rows is biased low, and its interval is centred on the "
             "corrected value).</p>"]
    if out_root is not None:
        parts.append(seed_claims_section(out_root, groups, embed=embed, prefix=prefix))
    sections = {nb: recs for nb, recs in groups.items()
                if not (out_root is not None and nb == CLAIMS_NOTEBOOK and all(r.ok for r in recs))}
    titles = {nb: title_and_question(recs, nb) for nb, recs in sections.items()}
    toc = "".join(f"<li><a href='#{nb}'>{html.escape(titles[nb][0])}</a></li>" for nb in sections)
    parts.append(f"<ol>{toc}</ol>")
    for i, (nb, recs) in enumerate(sections.items()):
        title, question = titles[nb]
        parts.append(f"<h2 id='{nb}' class='{'first' if i == 0 and out_root is None else ''}'>{html.escape(title)}</h2>")
        if question:
            parts.append(f"<div class='question'>{_md_inline(question)}</div>")
        parts.append(figures_html(recs, embed=embed, prefix=prefix))
        parts.append(composite_table(recs, link_prefix=prefix))
        for r in recs:
            if not r.ok:
                parts.append(f"<p class='fail'>FAILED {html.escape(r.job_id)}: {html.escape(r.error or '')} "
                             f"(<a href='{prefix}{nb}/{r.job_id}.failed/error.txt'>log</a>)</p>")
    parts.append(provenance_footer(groups))
    return "\n".join(p for p in parts if p)


def page(title: str, body: str, mathjax: str, extra_css: str = "") -> str:
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{CSS}{extra_css}</style>{MATHJAX_PRECONFIG}"
            f"<script src='{mathjax}/MathJax.js?config={MATHJAX_CONFIG}'></script>"
            f"</head><body>{body}</body></html>")


def index_html(profile: str, groups: dict[str, list[JobRecord]], description: str = "",
               mathjax: str = "_static/mathjax", out_root: Path | None = None) -> str:
    return page(f"geolip — {profile}", findings_body(profile, groups, description, out_root=out_root), mathjax)
