"""The findings page: header, seed claims, one section per notebook, failures, provenance."""
from __future__ import annotations

import html
from datetime import datetime, timezone
from pathlib import Path

from .records import FAILED, INCOMPLETE, JobRecord
from .claims_section import CLAIMS_NOTEBOOK, SEED_CLAIMS, claims_records, seed_claims_section, what_this_tests
from .headline_tables import composite_table
from .markup import anchor, fragment, href
from .notebook_sections import (_md_inline, figures_html, not_run_html, provenance_footer, quantization_html,
                                title_and_question, trajectory_html)
from .own_model import is_tiny, own_model_section, own_models, ran_models
from .style import BIAS_MARK, CSS, MATHJAX_CONFIG, MATHJAX_PRECONFIG, SEPARATED


# ------------------------------------------------------------------------------ pages
def run_description(profile: str, groups: dict[str, list[JobRecord]], run: dict | None = None) -> str:
    """The header's account of this root's run: the profile, the notebooks and models that ran
    (trained models apart from tiny random ones), and the ``--models`` / ``--notebooks`` selection
    that narrowed it (``run["selection"]``, from the root's ``.profile.json``: every run of the root
    together, ``runner.root_record.merged_selection``, not its last run). The profile's own
    description is printed only where the run was not narrowed to other models: a ``--models
    my-phi3`` report is not headed with the demo's description."""
    run = run or {}
    sel = run.get("selection") or {}
    notebooks = list(groups)
    models = ran_models(groups)
    tiny = sorted(m for m in models if is_tiny(m, groups))
    trained = [m for m in models if m not in tiny]
    narrowed = [f"--{k} {' '.join(map(str, v))}" for k, v in sel.items() if v and k in ("models", "notebooks")]
    outside = sorted(set(models) - set(run.get("profile models") or models))
    lines = [f"Profile <code>{html.escape(profile)}</code>"
             + (f" (this root's runs narrowed by <code>{html.escape(' '.join(narrowed))}</code>)" if narrowed else "") + ": "
             f"{len(notebooks)} notebook(s) ({html.escape(', '.join(notebooks))})."]
    if trained:
        lines.append(f"Trained models: {html.escape(', '.join(trained))}.")
    if tiny:
        lines.append(f"Tiny random models (pipeline checks only): {html.escape(', '.join(tiny))}.")
    if not models:
        lines.append("No job recorded a model.")
    desc = run.get("description") or ""
    if desc and not narrowed and not outside:
        lines.append(f"The profile: {html.escape(desc)}")
    return f"<p class='run'>{' '.join(lines)}</p>"


def findings_body(profile: str, groups: dict[str, list[JobRecord]], description: str = "", *,
                  embed: bool = False, prefix: str = "", out_root: Path | None = None, run: dict | None = None,
                  details: list[str] | None = None) -> str:
    """The findings: header (what ran, :func:`run_description`), the seed claims' matrix (when
    ``out_root`` is given: the first screen), what this report tests and how its numbers read,
    table of contents, one section per notebook
    (question, key figures, sections not run, trajectories, the composite table), failures,
    provenance. ``details`` (the PDF): a list that receives the claims' details for an appendix."""
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    n_ok = sum(r.ok for rs in groups.values() for r in rs)
    n_fail = sum(r.status == FAILED for rs in groups.values() for r in rs)
    n_incomplete = sum(r.status == INCOMPLETE for rs in groups.values() for r in rs)
    run = {"description": description, **(run or {})}
    # the first screen (1280 x 800) is the verdicts: the title, what ran, then the claims' matrix; or, where
    # no model of the seed's ran (one's own model), that model's headline numbers, the matrices after them.
    # What the report tests and how to read its numbers follow (checks.below_first_screen)
    parts = [f"<h1>geolip findings report — profile <code>{html.escape(profile)}</code></h1>",
             run_description(profile, groups, run)]
    yours = own_models(groups) if out_root is not None else []
    if yours:  # no model of the seed's ran: the page opens with the numbers of the models that did
        parts.append(own_model_section(groups, yours, embed=embed, prefix=prefix))
    if out_root is not None:
        parts.append(seed_claims_section(out_root, groups, embed=embed, prefix=prefix, details=details))
        parts += [seed_claims_section(out_root, groups, embed=embed, prefix=prefix, details=details, claims_file=f)
                  for _, f in claims_records(groups) if f != SEED_CLAIMS]  # a second paper's claims: its own matrix
    parts += [what_this_tests(),
             f"<p class='note'>Generated {now}. {n_ok} completed job(s), {n_fail} failed"
             + (f", {n_incomplete} incomplete" if n_incomplete else "") + ". Each headline number "
             "is printed as <b>value [95 % interval]</b> to the decimal its interval supports; the null models "
             "follow below it (gaussian: isotropic Gaussian of matched shape and scale; random_init: the same "
             f"architecture at random initialisation; sphere: uniform on the unit sphere; shuffled: pairing "
             f"destroyed). <span style='color:#1a6b2a'>{SEPARATED}</span> marks a null that the interval excludes; "
             f"{BIAS_MARK} marks a bias-corrected interval that the sample value lies outside (the table's notes say "
             "why: a participation ratio of sampled rows is biased low, and its interval is centred on the "
             "corrected value). "
             + ("Hover a column header for what it measures." if details is None else
                "The glossary at the end says what each column measures.") + "</p>"]
    if out_root is not None:
        parts.append(quantization_html(out_root))
    sections = {nb: recs for nb, recs in groups.items()
                if not (out_root is not None and nb == CLAIMS_NOTEBOOK and all(r.ok for r in recs))}
    titles = {nb: title_and_question(recs, nb) for nb, recs in sections.items()}
    toc = "".join(f"<li><a href='{fragment(nb)}'>{html.escape(titles[nb][0])}</a></li>" for nb in sections)
    parts.append(f"<h2 class='toc'>Findings per notebook</h2><ol class='toc'>{toc}</ol>")
    for nb, recs in sections.items():
        title, question = titles[nb]
        parts.append(f"<h2 id='{anchor(nb)}'>{html.escape(title)}</h2>")
        if question:
            parts.append(f"<div class='question'>{_md_inline(question)}</div>")
        parts.append(figures_html(recs, embed=embed, prefix=prefix))
        parts.append(not_run_html(recs))
        parts.append(composite_table(recs, link_prefix=prefix))
        parts.append(trajectory_html(recs))
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
               mathjax: str = "_static/mathjax", out_root: Path | None = None, run: dict | None = None) -> str:
    return page(f"geolip — {profile}", findings_body(profile, groups, description, out_root=out_root, run=run),
                mathjax)
