"""The first screen of a report on one's own model: its headline numbers, and its trajectory.

A report leads with the verdict matrix when the root holds a model of the seed's — every model the
paper profile runs (``params/profiles/paper.yaml``: "the seed's models and sample sizes", MiniLM
among them) and every model a claims file's readings name (``params/claims/*.yaml``). The demo,
paper and real profiles hold one. A root that holds none (``run_all.py --models my-llama``, one's own
profile, a tiny model) leads with what it measured: :func:`own_model_section`, one table of each
notebook's headline numbers of those models (value [95 % interval], its nulls below), and the
trajectory over checkpoints where a job has one; the claims' matrices follow it.
"""
from __future__ import annotations

import functools
import html

from .. import claims
from ..results import nonempty_columns  # one rule for every table (job.table too)
from . import glossary
from .claims_section import CLAIMS_NOTEBOOK, _paper_jobs
from .headline_tables import MAX_TABLE_COLUMNS, _cell, _chunks, duplicate_columns
from .markup import executed_link, fragment, linked, tip
from .notebook_sections import _img_src, figure_title, title_and_question, trajectory_html
from .records import JobRecord

#: the id of the section (the measure of the first screen finds its table by this class)
OWN_TABLE_CLASS = "composite yours"


@functools.lru_cache(maxsize=1)
def seed_models() -> frozenset:
    """The seed's models, as the project's files name them: the paper profile's models and every model a
    claims file's readings are about (another paper's BERT-base, whether or not this project can run it)."""
    names = {m for _, m in _paper_jobs() if m}
    for f in claims.claim_files():
        try:
            names |= {str(m) for c in claims.load(f).claims for form in c.forms for m in form.models}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):  # a claims file being written: the rest
            continue
    return frozenset(names)


def model_of(rec: JobRecord) -> str | None:
    """The model a finished job measured: its ``metrics.json``'s ``model``, else its provenance's first model
    (a job without a model gives None; so does notebook 15's, which reads the others' records)."""
    if not rec.ok or rec.notebook == CLAIMS_NOTEBOOK:
        return None
    m = rec.data.get("model")
    if isinstance(m, str) and m:
        return m
    named = [x.get("name") for x in rec.provenance.get("models") or [] if isinstance(x, dict) and x.get("name")]
    return str(named[0]) if named else None


def ran_models(groups: dict[str, list[JobRecord]]) -> list[str]:
    """Every model a finished job of the root measured (by its record or its provenance), sorted."""
    return sorted({m.get("name") for rs in groups.values() for r in rs if r.ok
                   for m in (r.provenance.get("models") or []) if isinstance(m, dict) and m.get("name")}
                  | {r.data["model"] for rs in groups.values() for r in rs if r.ok and isinstance(r.data.get("model"), str)})


def is_tiny(model: str, groups: dict[str, list[JobRecord]]) -> bool:
    """Whether a model is a tiny random one, by its jobs' provenance (``source: tiny``)."""
    for rs in groups.values():
        for r in rs:
            for m in (r.provenance.get("models") or []) if r.ok else []:
                if isinstance(m, dict) and m.get("name") == model and m.get("source") is not None:
                    return m.get("source") == "tiny"
    return model.startswith("tiny")


def own_models(groups: dict[str, list[JobRecord]]) -> list[str]:
    """The models the first screen leads with: those of the jobs' own records, when none of the root's
    models is a seed's (:func:`seed_models`); trained ones first, then tiny ones. Empty: lead with the claims."""
    ran = ran_models(groups)
    if not ran or set(ran) & seed_models():
        return []
    mine = sorted({m for rs in groups.values() for r in rs if (m := model_of(r))})
    return sorted(mine, key=lambda m: is_tiny(m, groups))


def _rows(groups: dict[str, list[JobRecord]], models: list[str]) -> list[tuple[str, str, list[str], dict]]:
    """``[(notebook, its title, [metric key, ...], {model: its job})]``: each notebook's headline numbers of
    ``models``, the empty ones and those that repeat another left out (as the notebook's own table does)."""
    out = []
    for nb, recs in groups.items():
        jobs: dict[str, JobRecord] = {}
        for r in recs:
            m = model_of(r)
            if m in models and m not in jobs and r.headline:
                jobs[m] = r
        if not jobs:
            continue
        keys = list(dict.fromkeys(k for r in jobs.values() for k in r.headline))
        keys = nonempty_columns([{k: (r.headline.get(k) or {}).get("value") for k in keys} for r in jobs.values()],
                                keys)
        dup = duplicate_columns(list(jobs.values()), keys)
        keys = [k for k in keys if k not in dup]
        if keys:
            out.append((nb, title_and_question(recs, nb)[0], keys, jobs))
    return out


def _label(jobs: dict, key: str) -> tuple[str, str]:
    """(a metric's label, its explanation: the glossary's terms and the headline's note)."""
    h = next((r.headline[key] for r in jobs.values() if r.headline.get(key)), {}) or {}
    label = h.get("label") or key
    return label, "; ".join(x for x in (glossary.explain(label), h.get("note") or "") if x)


def headline_table(groups: dict[str, list[JobRecord]], models: list[str], prefix: str = "") -> str:
    """One table of ``models``' headline numbers over the notebooks: a row per (notebook, metric), a column
    per model (split into several tables past :data:`MAX_TABLE_COLUMNS`), each cell the value [95 % interval]
    with its nulls below it (``✱``: the interval excludes that null). The notebook links to its section."""
    rows = _rows(groups, models)
    if not rows:
        return "<p class='note'>No headline numbers recorded for " + html.escape(", ".join(models)) + ".</p>"
    tables = []
    for part in _chunks(models, MAX_TABLE_COLUMNS):
        one = len(models) == 1
        head = ("<tr><th>notebook</th><th>metric</th>"
                + ("<th>value [95 % interval] · nulls</th>" if one else
                   "".join(f"<th class='model'>{html.escape(m)}</th>" for m in part)) + "</tr>")
        body = []
        for nb, title, keys, jobs in rows:
            for i, k in enumerate(keys):
                label, words = _label(jobs, k)
                nb_cell = (f"<td class='nb' rowspan='{len(keys)}'><a href='{fragment(nb)}'>{html.escape(title)}</a>"
                           "</td>") if i == 0 else ""
                cells = "".join(f"<td>{_cell(jobs[m].headline[k])}</td>" if m in jobs and jobs[m].headline.get(k)
                                else "<td>n/a</td>" for m in part)
                body.append(f"<tr>{nb_cell}<td class='metric'{tip(words)}>{html.escape(label)}</td>{cells}</tr>")
        tables.append(f"<table class='{OWN_TABLE_CLASS}'><thead>{head}</thead><tbody>{''.join(body)}</tbody></table>")
    return f"<div class='tablewrap'>{''.join(tables)}</div>"


def _trajectory_figures(recs: list[JobRecord], embed: bool, prefix: str) -> str:
    """The trajectory figure (``trajectory.png``) of each job that has one, linked to its executed notebook."""
    out = []
    for r in recs:
        for fig in r.figures:
            if fig["file"].rsplit("/", 1)[-1].rsplit(".", 1)[0] == "trajectory":
                title = html.escape(figure_title(fig))
                out.append(f"<figure class='thumb traj'><img src='{_img_src(r, fig, embed, prefix)}' alt='{title}'>"
                           f"<figcaption>{title} — {linked(r.job_id, executed_link(r, prefix))}</figcaption></figure>")
    return "".join(out)


def own_model_section(groups: dict[str, list[JobRecord]], models: list[str], *, embed: bool = False,
                      prefix: str = "") -> str:
    """The lead of a report on one's own model(s): the headline table (:func:`headline_table`) with the
    trajectory's figure beside it and its table under it where a job has checkpoints; a line says why the
    page opens here and that the claims follow."""
    mine = [r for rs in groups.values() for r in rs if model_of(r) in models]
    has_traj = [r for r in mine if isinstance((r.data.get("metrics") or {}).get("trajectory"), dict)]
    who = html.escape(", ".join(models))
    figs = _trajectory_figures(has_traj, embed, prefix)
    words = (f"No model of the seed's ran on this root, so the report opens with what {who} measured: each "
             "notebook's headline numbers as value [95 % interval], each null model below it (✱: the interval "
             "excludes that null)" + ("; its geometry over training (checkpoints) beside and below" if has_traj
                                     else "") + ". The claims' verdict matrices follow below it; each notebook's figures are in its section.")
    return (f"<section class='yours' id='your-model'><h2 class='first'>Your model{'s' if len(models) > 1 else ''}: "
            f"{who}</h2><p class='note'>{words}</p>"
            f"<div class='yours-grid'>{headline_table(groups, models, prefix)}"
            + (f"<div class='yours-figs'>{figs}</div>" if figs else "") + "</div>"
            + trajectory_html(has_traj) + "</section>")


__all__ = ["OWN_TABLE_CLASS", "seed_models", "model_of", "ran_models", "is_tiny", "own_models", "headline_table",
           "own_model_section"]
