"""The claims' section of the findings: the verdict matrix (claims down, models across), its legend
and figure, one bottom-line sentence per claim and the details (readings, rules, reasons, nulls)."""
from __future__ import annotations

import base64
import functools
import html
import re
from pathlib import Path

import matplotlib.pyplot as plt
import yaml

from .. import claims, params, plotting
from ..claims import plots as claims_plots
from ..claims import tables as claims_tables
from ..paths import PARAMS
from ..results import nonempty_columns  # one rule for every table (job.table too)
from . import glossary
from .markup import _th, _verdict, _verdict_glyph, breakable, executed_link, href, linked, linked_html, tip
from .notebook_sections import _img_src, figure_title, key_figures
from .records import JobRecord


# ------------------------------------------------------------------------------ seed claims
CLAIMS_NOTEBOOK = "15_seed_claims"


def _claims_table(rows: list[dict], columns: list[str], whose: str = "the seed's") -> str:
    """A claims table; a paper's claims (``whose`` "the paper's") head its columns "paper's value", "paper's
    models" where a seed's read "seed value", "seed models"."""
    columns = nonempty_columns(rows, columns)
    word = claims_tables.owner_word(whose)
    label = {c: claims_tables.for_owner(c.replace("seed ", f"{word}'s ", 1) if word != "seed" and c.startswith("seed ")
                                        else c, whose) for c in columns}
    head = "".join(_th(label[c], c.replace(' ', '-')) for c in columns)
    def cell(r: dict, c: str) -> str:
        return _verdict(str(r[c])) if c == "verdict" else breakable(claims_tables.for_owner(str(r.get(c) or ""), whose))
    body = "".join("<tr>" + "".join(f"<td class='{html.escape(c.replace(' ', '-'), quote=True)}'>{cell(r, c)}</td>"
                                    for c in columns) + "</tr>" for r in rows)
    return f"<div class='tablewrap'><table class='claims'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


#: the claims file of the report's lead matrix ("Do the seed's claims hold?")
SEED_CLAIMS = "seed-001"


def claims_file_of(rec: JobRecord) -> str:
    """The claims file a notebook-15 job evaluated: a name under params/claims/ when it is one
    (its metrics' ``claims_file``, else its ``CLAIMS`` parameter; default seed 001), else the path."""
    f = str((rec.data.get("metrics") or {}).get("claims_file") or (rec.data.get("parameters") or {}).get("CLAIMS")
            or SEED_CLAIMS)
    return Path(f).stem if Path(f).stem in claims.claim_files() else f


def claims_records(groups: dict[str, list[JobRecord]]) -> list[tuple[JobRecord, str]]:
    """Notebook 15's finished jobs under this root with the claims file each evaluated, seed 001's
    first: one verdict matrix each (a second claims job, e.g. ``CLAIMS: ethayarajh-2019``, is a
    second matrix)."""
    recs = [(r, claims_file_of(r)) for r in groups.get(CLAIMS_NOTEBOOK) or [] if r.ok]
    return sorted(recs, key=lambda t: t[1] != SEED_CLAIMS)


def claims_record(groups: dict[str, list[JobRecord]]) -> JobRecord | None:
    """Notebook 15's finished job of seed 001's claims under this root, if it ran."""
    return next((r for r, f in claims_records(groups) if f == SEED_CLAIMS), None)


SEEDS_MODELS = "seed's models"
#: at most this many model columns; more and the matrix is transposed (models down, claims across)
MATRIX_MAX_COLUMNS = 8


def _mx_cell(cell: dict, model: str, claim_title: str) -> str:
    v = cell["verdict"]
    words = f"{model} · {claim_title}: {v} ({claims_tables.VERDICT_MEANING.get(v, '')})"
    if cell["reading"]:
        words += f". Reading: {cell['reading']}"
    if cell["reason"]:
        words += f". {cell['reason']}"
    if cell["other readings"]:
        words += f". Also measured: {', '.join(cell['other readings'])} (details below)"
    deq = f"<span class='kind'>({html.escape(cell['dequantized'])})</span>" if cell["dequantized"] else ""
    return (f"<td class='mx {claims.VERDICT_CLASS.get(v, 'v-not-testable')}'{tip(words)}>"
            f"<span class='glyph'>{claims_tables.VERDICT_GLYPHS.get(v, '')}</span>"
            f"<span class='mv'>{html.escape(cell['text'])}</span>{deq}</td>")


#: what tests a claim the seed's models did not run for here: the paper profile on a GPU box
PAPER_RUN = "make report PROFILE=paper, with hub access, on a GPU box"


@functools.lru_cache(maxsize=1)
def _paper_jobs() -> frozenset:
    """(notebook, model) of every job the paper profile lists (its YAML read as it stands; empty if unreadable)."""
    try:
        data = yaml.safe_load((PARAMS / "profiles" / "paper.yaml").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return frozenset()
    return frozenset((nb, m) for nb, e in (data.get("notebooks") or {}).items() if isinstance(e, dict)
                     for m in list(e.get("models") or []) + [j.get("model") for j in e.get("jobs") or []
                                                              if isinstance(j, dict)])


def untested_hint(c) -> str:
    """For a claim no model of the seed's tested on this root: what would test it (the notebooks and
    seed models of its readings that the paper profile runs), as a small line under its verdict; where the
    paper profile runs none of them, the models this project has no params file for (a paper's BERT-base,
    GPT-2, ELMo), or nothing."""
    pairs = [(f.notebook, x) for f in c.forms for x in f.models if (f.notebook, x) in _paper_jobs()]
    if not pairs:
        known = set(params.model_names())
        missing = list(dict.fromkeys(x for f in c.forms for x in f.models if x not in known))
        if not missing:
            return ""
        words = (f"{', '.join(missing)}: no params file in params/models/, so no profile runs "
                 f"{'it' if len(missing) == 1 else 'them'} (params/README.md says how to add a model)")
        return (f"<span class='kind untested'{tip(words)}>not in this project's model set: "
                f"{html.escape(', '.join(missing))}</span>")
    nbs = list(dict.fromkeys(nb.split("_", 1)[0] for nb, _ in pairs))
    models = list(dict.fromkeys(x for _, x in pairs))
    who = models[0] if len(models) == 1 else f"{len(models)} seed models"
    words = f"What would test it: notebook {', '.join(nbs)} on {', '.join(models)}, the paper profile ({PAPER_RUN})."
    return (f"<span class='kind untested'{tip(words)}>tested by the paper profile: {html.escape(' and '.join(nbs))} "
            f"on {html.escape(who)} (hub, GPU box)</span>")


def _seed_verdict(m: dict, c) -> str:
    """The "verdict on the seed's models" cell: the verdict, and where it is "not tested", what would test it."""
    v = m["verdict"][c.id]
    return _verdict(v) + (untested_hint(c) if v == claims.NOT_TESTED else "")


def matrix_table(m: dict, whose: str = "the seed's") -> str:
    """The verdict matrix as HTML: claims down and models across (the seed's models, then the
    trained stand-ins); transposed when there are more than :data:`MATRIX_MAX_COLUMNS` models.
    ``whose``: who the claims' own models belong to, in the headers ("the paper's" for a paper's file)."""
    cols = m["seed"] + m["stand-ins"]
    empty = "" if cols else ("<p class='note'>No model of the seed's and no trained stand-in ran a notebook the "
                             "claims read: no model columns.</p>")
    what = m.get("descriptions") or {}
    group = {x: (f"{whose} model" if x in m["seed"] else "trained stand-in") for x in cols}
    hover = {x: group[x] + (f": {what[x]}" if what.get(x) else "") for x in cols}
    if len(cols) <= MATRIX_MAX_COLUMNS:
        spans = ""
        if m["seed"]:
            spans += (f"<th colspan='{len(m['seed'])}' class='grp'{tip(glossary.TERMS[SEEDS_MODELS])}>"
                      f"{html.escape(whose, quote=False)} models</th>")
        if m["stand-ins"]:
            spans += (f"<th colspan='{len(m['stand-ins'])}' class='grp'{tip(glossary.TERMS['stand-in'])}>"
                      "trained stand-ins</th>")
        span = " rowspan='2'" if cols else ""
        head = ("<tr>" + _th("claim", attrs=span) + _th(claims_tables.value_head(whose), attrs=span)
                + _th(f"verdict on {whose} models", attrs=span) + spans + "</tr>"
                + ("<tr>" + "".join(f"<th class='model'{tip(hover[x])}>{html.escape(x)}</th>" for x in cols) + "</tr>"
                   if cols else ""))
        body = "".join(
            f"<tr><td class='claim'{tip(c.definition)}>{html.escape(c.title)}</td>"
            f"<td class='seedv'>{html.escape(c.seed_value)}</td><td class='seedverdict'>{_seed_verdict(m, c)}</td>"
            + "".join(_mx_cell(m["cells"][(c.id, x)], x, c.title) for x in cols) + "</tr>" for c in m["claims"])
    else:  # transposed: one row per model
        head = ("<tr><th>model</th>" + "".join(
            f"<th class='claimh'{tip(c.definition)}>{html.escape(c.title)}"
            f"<br><span class='kind'>{claims_tables.owner_word(whose)}: {html.escape(c.seed_value)}</span></th>"
            for c in m["claims"]) + "</tr>")
        body = (f"<tr><td class='model'>verdict on {html.escape(whose, quote=False)} models</td>"
                + "".join(f"<td class='seedverdict'>{_seed_verdict(m, c)}</td>" for c in m["claims"]) + "</tr>")
        body += "".join(f"<tr><td class='model'{tip(hover[x])}>{html.escape(x)}"
                        f"<span class='kind'>{html.escape(group[x])}</span></td>"
                        + "".join(_mx_cell(m["cells"][(c.id, x)], x, c.title) for c in m["claims"]) + "</tr>"
                        for x in cols)
    stand = [x for x in m["stand-ins"] if what.get(x)]
    named = ("<p class='note standins'>What the trained stand-ins are (a verdict on one is about that model, not "
             f"{html.escape(whose)} models): "
             + "; ".join(f"<b>{html.escape(x)}</b>: {html.escape(what[x].rstrip().rstrip('.'))}" for x in stand)
             + ".</p>") if stand else ""
    return (f"{empty}<div class='tablewrap'><table class='matrix'><thead>{head}</thead><tbody>{body}</tbody></table>"
            f"</div>{named}")


def verdict_legend() -> str:
    items = "".join(f"<li>{_verdict(v)}<span class='meaning'>: {html.escape(claims_tables.VERDICT_MEANING[v])}</span></li>"
                    for v in claims_tables.VERDICT_GLYPHS)
    return f"<ul class='legend'>{items}</ul>"


def what_this_tests(m: dict | None = None) -> str:
    """The "What this report tests" paragraph: the seed documents, the claims table, stand-ins."""
    seeds = "".join(f"<li>{html.escape(line)}</li>" for line in glossary.seed_lines())
    return ("<div class='about'><h3>What this report tests</h3>"
            "<p>geolip measures the geometry of neural networks (embedding spectra, simplex volumes, weight "
            "statistics, attention operators) to test the claims of five <b>seed documents</b>, the research notebooks "
            f"the project was created from:</p><ul class='seeds'>{seeds}</ul>"
            "<p>The claims tested below are seed 001's summary table of \"universal constants\" and its best "
            "modulator result (<code>params/claims/seed-001.yaml</code>). Only the models the seed measured (T5, "
            "BERT-large, CLIP, DINOv2, Qwen) decide a claim's verdict. A <b>trained stand-in</b> is a pretrained model "
            "the seed did not measure: it shows whether the property holds there, not whether the seed's claim does. "
            "Tiny random models only check that the pipeline runs; they are never given a verdict. Every number is "
            "<b>value [95 % interval]</b> (an exact value has none) beside its <b>nulls</b>, what the same "
            "measurement gives without training.</p></div>")


def no_seed_claims_note(groups: dict[str, list[JobRecord]]) -> str:
    """Where seed 001's matrix would stand and notebook 15 made none for it: one line that says what is true
    of this root. Notebook 15 did not run at all; or its job for seed 001's claims stopped (its line under
    notebook 15 says why); or it ran only for other claims files, whose matrices follow."""
    recs = groups.get(CLAIMS_NOTEBOOK) or []
    run = (f"<code>python run_all.py --profile &lt;profile&gt; --notebooks {CLAIMS_NOTEBOOK} --resume</code>")
    # a job that stopped recorded nothing: its id names its claims file where it is one ("seed-004")
    stopped = [r.job_id for r in recs if not r.ok and (r.job_id if r.job_id in claims.claim_files() else
                                                        SEED_CLAIMS) == SEED_CLAIMS]
    others = [f for r, f in claims_records(groups) if f != SEED_CLAIMS]
    if stopped:
        what = (f"notebook 15's job {html.escape(', '.join(stopped))} did not finish (its line under notebook 15 "
                "says why)")
    elif others:
        what = f"notebook 15 ran here only for {html.escape(', '.join(others))}, whose matrices follow"
    elif recs:
        return ""  # a seed-001 job that finished has its matrix; nothing to say
    else:
        return ("<p class='note' id='seed-claims'>Whether the seed's claims hold is tested by notebook "
                f"<code>{CLAIMS_NOTEBOOK}</code>, which did not run on this output root: run it after the other "
                f"notebooks ({run}; it is in the tiny, demo, shapes and paper profiles) and its verdict matrix "
                "appears here.</p>")
    return f"<p class='note' id='seed-claims'>Seed 001's claims were not evaluated on this root: {what}. {run} " \
           "evaluates them.</p>"


def _claims_data(out_root: Path, claims_file: str | None = None):
    """(rows, summary, matrix) of the claims under ``out_root`` (:mod:`geolip_lib.claims`);
    ``claims_file``: a name under params/claims/ or a path (default seed 001)."""
    extra = () if claims_file is None else (claims_file,)
    rows = claims.evaluate(out_root, *extra)
    summary = claims.summarize(rows, *extra)
    pipeline = getattr(claims.evaluation, "pipeline_checks", None)
    tiny = pipeline(out_root, *extra) if pipeline else []
    m = claims_tables.matrix(rows, summary, *extra, pipeline_checks=tiny)  # its rows are that file's claims
    m["descriptions"] = claims.model_descriptions(out_root, *extra)  # what each model is
    return rows, summary, m


def claims_matrix_figure(m: dict, out_root: Path, embed: bool, prefix: str, name: str = "claims_matrix.png",
                         title: str = "") -> str:
    """The matrix figure (:func:`geolip_lib.claims.plots.claims_matrix`), written to
    ``_static/<name>`` under the root (one per claims file); a link to it at full size. ``title``: another
    claims file's heading (default: seed 001's)."""
    fig = claims_plots.claims_matrix(m, title)
    data = plotting.png_bytes(fig)
    plt.close(fig)
    path = Path(out_root) / "_static" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    src = ("data:image/png;base64," + base64.b64encode(data).decode()) if embed else href("_static", name,
                                                                                            prefix=prefix)
    img = f"<img src='{src}' alt='the claims matrix: verdict and value per claim and model'>"
    return f"<figure class='matrixfig'>{img if embed else linked_html(img, src)}</figure>"


def seed_claims_section(out_root: Path, groups: dict[str, list[JobRecord]], *, embed: bool = False,
                        prefix: str = "", details: list[str] | None = None, claims_file: str | None = None) -> str:
    """The findings' lead: the claims matrix (claims down, models across, a status and value per
    cell: :func:`geolip_lib.claims.matrix`), its figure, one bottom-line sentence per claim; then
    the details (readings side by side, the verdict and reason per reading, every measured value
    with its nulls, notebook 15's figure) in a ``<details>`` block — or, when ``details`` is a
    list (the PDF), appended there for an appendix.

    Shown only where notebook 15 ran on this root; otherwise one line says where to see it.
    ``claims_file``: another claims file a notebook-15 job evaluated (:func:`claims_records`): the
    same section, headed "Do <its source>'s claims hold?" (the text of its title before ':').
    """
    other = claims_file not in (None, SEED_CLAIMS)
    rec15 = next((r for r, f in claims_records(groups) if f == claims_file), None) if other else claims_record(groups)
    if other:
        table = claims.load(claims_file)
        who = table.title.split(":")[0].strip()
        whose = claims_tables.owner(table)  # another seed document (seed 004) or a paper's table
        sid, heading = f"claims-{re.sub(r'[^a-z0-9]+', '-', str(claims_file).lower()).strip('-')}", \
            f"Do {who}'s claims hold?"
        lead = (f"Each row is a claim of {html.escape(who)} (<code>{html.escape(table.file)}</code>, the same verdict "
                f"rules as seed 001's table); each column a model that ran here: first {whose} own models, then "
                f"trained stand-ins (their verdict says whether the property holds there, not whether {whose} claim "
                "about its models does). A cell's mark gives the verdict (colour and shape), the number under it the "
                "measured value [95 % interval]")
    else:
        sid, heading, whose = "seed-claims", "Do the seed's claims hold?", "the seed's"
        lead = ("Each row is a claim of seed 001's table; each column a model that ran here: first the "
                "seed's own models, then trained stand-ins. A cell's mark gives the verdict (colour and shape), the "
                "number under it the measured value [95 % interval]")
    if rec15 is None:
        return "" if other else no_seed_claims_note(groups)
    try:
        rows, summary, m = _claims_data(out_root, claims_file if other else None)
    except (AttributeError, KeyError, TypeError, ValueError, OSError) as exc:  # a job's record of the wrong shape
        return (f"<p class='problem' id='{sid}'>{'The claims of ' + html.escape(who) if other else 'The seed' + chr(39) + 's claims'} could not be evaluated from {html.escape(str(out_root))} "
                f"({html.escape(type(exc).__name__)}: {html.escape(str(exc))}); the rest of the report is built. "
                "Rerun the job whose metrics.json is named, then --report-only.</p>")
    link = linked("notebook 15", executed_link(rec15, prefix))
    bottom = "".join(f"<li>{_verdict_glyph(m['verdict'][c.id])}{html.escape(m['bottom line'][c.id])}</li>"
                     for c in m["claims"])
    tiny = m["pipeline checks"]
    parts = [f"<section class='claims' id='{sid}'><h2 class='{'' if other else 'first'}'>{html.escape(heading, quote=False)}</h2>",
             f"<p class='note'>{lead}"
             + ("; hover a cell for its reading and reason" if details is None else
                "; the appendix \"the claims in detail\" gives each one's reading and reason")
             + f". Exact values are compared at {whose} printed precision.</p>",
             verdict_legend(), matrix_table(m, whose),
             "<h3>The bottom line, claim by claim</h3>", f"<ul class='bottom'>{bottom}</ul>"]
    if tiny:
        parts.append(f"<p class='note'>The pipeline also ran on {len(tiny)} tiny random model(s) "
                     f"({html.escape(', '.join(tiny))}): pipeline checks, never given a verdict.</p>")
    try:
        if m["seed"] or m["stand-ins"]:  # an empty matrix is said in one line above, not drawn
            parts.append(claims_matrix_figure(m, out_root, embed, prefix,
                                              f"claims_matrix-{sid}.png" if other else "claims_matrix.png",
                                              f"{heading} Trained stand-ins (not {whose} models)" if other else ""))
    except (OSError, ValueError) as exc:
        parts.append(f"<p class='problem'>The matrix figure could not be drawn ({html.escape(str(exc))}).</p>")
    measured = [r for r in rows if r["value"] is not None]
    more = [f"<p class='note'>Each claim read as the table says and as {whose} cells measured it, with the rule, "
            f"the verdict and its reason; then every measured value beside its nulls. Computed by {link}.</p>",
            _claims_table(claims.readings(summary), claims.READINGS_COLUMNS, whose),
            _claims_table(summary, [c for c in claims.SUMMARY_COLUMNS if c != "stand-ins"], whose)]
    for rec, fig in key_figures([rec15])[:1]:
        more.append(f"<figure class='wide'><img src='{_img_src(rec, fig, embed, prefix)}' "
                    f"alt='{html.escape(figure_title(fig))}'></figure>")
    if measured:
        more.append("<h3>Measured values, per claim</h3>")
        cols = [c for c in claims.DETAIL_COLUMNS if c not in ("title", "null explains", "seed value")]
        for c in m["claims"]:
            mine = [r for r in measured if r["claim"] == c.id]
            if mine:
                more.append(f"<h4>{html.escape(c.title)} <span class='kind'>{claims_tables.owner_word(whose)}: "
                            f"{html.escape(c.seed_value)}</span></h4>")
                more.append(_claims_table(mine, cols, whose))
    if details is None:
        parts.append("<details class='claims-details'><summary>Details: readings, rules, reasons and nulls, per "
                     "claim and model</summary>" + "".join(more) + "</details>")
    else:
        details.append(f"<h2 class='appendix' id='{sid + '-details' if other else 'claims-details'}'>Appendix · "
                       f"{'the claims of ' + html.escape(who) if other else 'the claims'} in detail</h2>" + "".join(more))
        parts.append("<p class='note'>The readings, rules, reasons and nulls per claim and model are in the "
                     "appendix \"the claims in detail\".</p>")
    parts.append("</section>")
    return "\n".join(p for p in parts if p)
