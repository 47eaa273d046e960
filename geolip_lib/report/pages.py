"""The findings page: header, seed claims, one section per notebook, failures, provenance."""
from __future__ import annotations

import html
from datetime import datetime, timezone
from pathlib import Path

from .records import FAILED, INCOMPLETE, JobRecord
from .sections import (CLAIMS_NOTEBOOK, _md_inline, anchor, composite_table, figures_html, fragment, href,
                       provenance_footer, seed_claims_section, title_and_question)
from .style import BIAS_MARK, CSS, MATHJAX_CONFIG, MATHJAX_PRECONFIG, SEPARATED


# ------------------------------------------------------------------------------ pages
def findings_body(profile: str, groups: dict[str, list[JobRecord]], description: str = "", *,
                  embed: bool = False, prefix: str = "", out_root: Path | None = None) -> str:
    """The findings: header, the seed claims with verdicts (when ``out_root`` is given), table
    of contents, one section per notebook, failures, provenance."""
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    n_ok = sum(r.ok for rs in groups.values() for r in rs)
    n_fail = sum(r.status == FAILED for rs in groups.values() for r in rs)
    n_incomplete = sum(r.status == INCOMPLETE for rs in groups.values() for r in rs)
    parts = [f"<h1>geolip findings report — profile <code>{html.escape(profile)}</code></h1>",
             f"<p>{html.escape(description)}</p>",
             f"<p class='note'>Generated {now}. {n_ok} completed job(s), {n_fail} failed"
             + (f", {n_incomplete} incomplete" if n_incomplete else "") + ". Each headline number "
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
    toc = "".join(f"<li><a href='{fragment(nb)}'>{html.escape(titles[nb][0])}</a></li>" for nb in sections)
    parts.append(f"<ol>{toc}</ol>")
    for i, (nb, recs) in enumerate(sections.items()):
        title, question = titles[nb]
        parts.append(f"<h2 id='{anchor(nb)}' class='{'first' if i == 0 and out_root is None else ''}'>"
                     f"{html.escape(title)}</h2>")
        if question:
            parts.append(f"<div class='question'>{_md_inline(question)}</div>")
        parts.append(figures_html(recs, embed=embed, prefix=prefix))
        parts.append(composite_table(recs, link_prefix=prefix))
        parts += [job_status_line(r, prefix) for r in recs if not r.ok]
        parts += [f"<p class='problem'>{html.escape(line)}</p>" for r in recs for line in r.problems]
    parts.append(provenance_footer(groups))
    return "\n".join(p for p in parts if p)


def job_status_line(rec: JobRecord, prefix: str = "") -> str:
    """One line for a job that did not finish: FAILED with its log, or INCOMPLETE with what is left."""
    if rec.status == INCOMPLETE:
        return f"<p class='fail'>INCOMPLETE {html.escape(rec.job_id)}: {html.escape(rec.error or '')}</p>"
    log = rec.path / "error.txt"
    link = (f" (<a href='{href(rec.notebook, rec.path.name, 'error.txt', prefix=prefix)}'>log</a>)"
            if log.is_file() else "")
    return f"<p class='fail'>FAILED {html.escape(rec.job_id)}: {html.escape(rec.error or '')}{link}</p>"


def page(title: str, body: str, mathjax: str, extra_css: str = "") -> str:
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{CSS}{extra_css}</style>{MATHJAX_PRECONFIG}"
            f"<script src='{mathjax}/MathJax.js?config={MATHJAX_CONFIG}'></script>"
            f"</head><body>{body}</body></html>")


def index_html(profile: str, groups: dict[str, list[JobRecord]], description: str = "",
               mathjax: str = "_static/mathjax", out_root: Path | None = None) -> str:
    return page(f"geolip — {profile}", findings_body(profile, groups, description, out_root=out_root), mathjax)
