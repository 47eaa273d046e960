"""Assemble the findings report of one profile: per-job HTML, ``index.html``, ``report.pdf``.

Reads back what the jobs recorded (``reports/<profile>/<notebook>/<job>/``):

- each ``executed.ipynb`` -> ``executed.html`` (nbconvert, lab template, code shown);
- ``index.html`` leads with findings: for each notebook its question, one to three key
  figures as thumbnails linking to the executed notebook, and the composite table of
  headline numbers across models — ``value [95 % interval]`` at the precision the interval
  supports, every null model beside it, ``✱`` where the interval excludes that null — then
  the failed jobs with their one-line errors and a provenance footer (commit, packages,
  devices, models and weight digests, wall times);
- ``report.pdf``: the same findings, then each notebook's narrative with its figures and
  tables (code, printed streams and plain-text dumps left out), printed by headless
  Chromium (Debian ``chromium``). The executed notebooks stay as linked HTML.

Math renders offline: MathJax 2.7 is copied from the ``jupyter-server-mathjax`` package into
``<profile>/_static/mathjax``. That copy lacks MathJax's TeX fonts ("File failed to load:
.../fonts/TeX/fontdata.js"), and the STIX-Web fonts it has are web fonts that a browser
refuses to load from ``file://`` pages (CORS). So every page selects MathJax's NativeMML
output before MathJax loads: TeX becomes MathML, which Chromium and Firefox render
natively, with no font files.
"""
from __future__ import annotations

import base64
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from .metrics.intervals import format_value
from .results import REPORTS, atomic_write_text

MATHJAX_CONFIG = "TeX-AMS-MML_HTMLorMML-full,Safe"
#: set before MathJax.js loads (window.MathJax is MathJax 2.7's documented pre-load config)
MATHJAX_PRECONFIG = ("<script>window.MathJax={menuSettings:{renderer:'NativeMML'},messageStyle:'none',"
                     "tex2jax:{inlineMath:[['$','$'],['\\\\(','\\\\)']],processEscapes:true}};</script>")
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
SEPARATED = "✱"
BIAS_MARK = "†"
MAX_KEY_FIGURES = 3
CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;max-width:1200px;margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}
h1{border-bottom:2px solid #446;padding-bottom:.2em}h2{margin-top:2em;color:#335;border-bottom:1px solid #ccd}
table.composite{border-collapse:collapse;font-size:.86em;margin:.6em 0 1em}
table.composite th,table.composite td{border:1px solid #ccd;padding:.25em .5em;text-align:right;vertical-align:top}
table.composite th{background:#eef;text-align:center}table.composite td.model{text-align:left;font-weight:600}
span.null{display:block;color:#666;font-size:.85em}div.tablewrap{overflow-x:auto;max-width:100%}span.null.sep{color:#1a6b2a}
.fail{color:#b00}.note{color:#555;font-size:.9em}.question{margin:.3em 0 .8em}
a{color:#2a5db0}.figs{display:flex;flex-wrap:wrap;gap:12px;margin:.5em 0}
figure.thumb{margin:0;width:370px}figure.thumb img{width:100%;border:1px solid #ccd}
figure.thumb figcaption{font-size:.8em;color:#555}
section.claims{border:2px solid #446;border-radius:6px;padding:.3em 1em 1em;margin:1em 0 2em;background:#fbfbfe}
table.claims{border-collapse:collapse;font-size:.86em;margin:.5em 0}table.claims th,table.claims td{border:1px solid #ccd;
padding:.25em .5em;text-align:left;vertical-align:top}table.claims th{background:#eef}
table.claims td.reason{min-width:22em}figure.wide{margin:.5em 0;max-width:900px}figure.wide img{width:100%}
.v-held{color:#1a7f37;font-weight:700}.v-not-held{color:#c62828;font-weight:700}.v-not-testable{color:#666;font-weight:700}
footer{margin-top:3em;border-top:2px solid #446;padding-top:.5em;font-size:.85em;color:#444}
footer table{border-collapse:collapse;font-size:.95em}footer td,footer th{border:1px solid #dde;padding:.15em .45em;
text-align:left}
"""
PRINT_CSS = """
@page{size:A4;margin:12mm 11mm}
body{max-width:none;margin:0;padding:0;font-size:9pt;line-height:1.25}
figure.thumb{width:31.5%}figure.thumb.small{width:19%}h2.appendix{margin-top:1.2em;border-top:2px solid #446;padding-top:.3em}
.jp-RenderedHTMLCommon tbody tr:nth-child(n+11){display:none}
.jp-RenderedHTMLCommon table:has(tbody tr:nth-child(11)) caption::after{content:" (first 10 rows here; all in the executed notebook)"}h2,h3{break-after:avoid}
.jp-OutputArea-output img{max-width:60%;max-height:7.5cm;break-inside:avoid}
figure,tr{break-inside:avoid}
.jp-RenderedHTMLCommon table{font-size:7pt}.jp-RenderedHTMLCommon td,.jp-RenderedHTMLCommon th{padding:1px 4px}
.jp-InputPrompt,.jp-OutputPrompt,.jp-InputArea-prompt,.jp-OutputArea-prompt{display:none}
.jp-Cell{padding:1px 0}.jp-RenderedHTMLCommon p{margin:.3em 0}
table.composite{font-size:7pt;width:100%}table.composite td,table.composite th{padding:1px 3px}
span.null{white-space:normal}
table.claims{font-size:7pt;width:100%;table-layout:fixed}table.claims .reason{min-width:0;width:22%}
table.claims .stand-ins{width:20%}table.claims .null-explains{width:16%}
table.claims .title,table.claims .seed-value,table.claims .seed-models,table.claims .verdict,table.claims .model,
table.claims .scope,table.claims .measured{width:10%}table.claims td{overflow-wrap:anywhere}table.claims td,table.claims th{padding:1px 3px}section.claims{break-after:page}
.figs{display:block}figure.thumb{display:inline-block;vertical-align:top;margin:0 .6% .4em 0}
"""


@dataclass
class JobRecord:
    notebook: str
    job_id: str
    path: Path
    data: dict = field(default_factory=dict)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def headline(self) -> dict:
        return self.data.get("headline") or {}

    @property
    def figures(self) -> list[dict]:
        return [f for f in self.data.get("figures") or [] if (self.path / f.get("file", "")).exists()]

    @property
    def provenance(self) -> dict:
        return self.data.get("provenance") or {}


def collect(out_root: Path) -> dict[str, list[JobRecord]]:
    """Every completed and failed job under ``out_root``, grouped by notebook (sorted).

    An unreadable ``metrics.json`` makes its job a failed record naming the file (the rest
    of the report still builds).
    """
    groups: dict[str, list[JobRecord]] = {}
    for nb_dir in sorted(p for p in out_root.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))):
        recs = []
        for job in sorted(nb_dir.iterdir()):
            if job.name.startswith(".") or not job.is_dir():
                continue  # .partial (running or killed) and .old directories never count
            if job.name.endswith(".failed"):
                err = (job / "error.txt").read_text(encoding="utf-8", errors="replace").split("\n", 1)[0] \
                    if (job / "error.txt").exists() else "failed (no error.txt)"
                recs.append(JobRecord(nb_dir.name, job.name[:-7], job, error=err or "failed"))
            elif (job / "metrics.json").exists():
                try:
                    data = json.loads((job / "metrics.json").read_text(encoding="utf-8"))
                    if not isinstance(data, dict):
                        raise ValueError("not a JSON object")
                except (OSError, ValueError) as exc:
                    recs.append(JobRecord(nb_dir.name, job.name, job,
                                          error=f"{job / 'metrics.json'}: unreadable ({exc}); rerun with --resume"))
                    continue
                failed = nb_dir / f"{job.name}.failed"
                if failed.is_dir() and failed.stat().st_mtime > (job / "metrics.json").stat().st_mtime:
                    continue  # a rerun failed after this result: the failure is what is current
                recs.append(JobRecord(nb_dir.name, job.name, job, data))
        if recs:
            groups[nb_dir.name] = recs
    return groups


# ------------------------------------------------------------------------------ tables
def _cell(h: dict) -> str:
    iv = h.get("interval") or {}
    value = format_value(h.get("value"), iv, h.get("fmt"))
    parts = [f"<span class='val' title='{html.escape(iv.get('method', ''), quote=True)}'>{html.escape(value)}</span>"]
    v, lo, hi = h.get("value"), iv.get("lo"), iv.get("hi")
    if v is not None and lo is None:
        parts.append(f"<span class='null' title='{html.escape(iv.get('method') or '', quote=True)}'>(no interval)</span>")
    elif isinstance(v, (int, float)) and lo is not None and hi is not None and not lo <= v <= hi:
        parts[0] = parts[0].replace("</span>", f" {BIAS_MARK}</span>", 1)
    for kind, n in (h.get("nulls") or {}).items():
        if n is None or n.get("value") is None:
            continue
        nv = format_value(n.get("value"), n.get("interval"), h.get("fmt"))
        sep = n.get("separated")
        mark = f" {SEPARATED}" if sep else ""
        parts.append(f"<span class='null{' sep' if sep else ''}'>{html.escape(kind)}: {html.escape(nv)}{mark}</span>")
    return "".join(parts)


def composite_table(records: list[JobRecord], link_prefix: str = "") -> str:
    """HTML table: one row per job, one column per headline metric.

    Each cell holds ``value [lo, hi]`` and, below it, each null model's value; ``✱`` marks
    a null that the interval excludes.
    """
    ok = [r for r in records if r.ok]
    keys: list[str] = []
    labels: dict[str, str] = {}
    notes: dict[str, str] = {}
    for r in ok:
        for k, h in r.headline.items():
            if k not in keys:
                keys.append(k)
                labels[k] = (h or {}).get("label") or k
            if (h or {}).get("note") and k not in notes:
                notes[k] = h["note"]
    if not ok or not keys:
        return "<p class='note'>No headline metrics recorded.</p>"
    head = "".join(f"<th>{html.escape(labels[k])}</th>" for k in keys)
    rows = []
    for r in ok:
        cells = "".join(f"<td>{_cell(r.headline[k])}</td>" if r.headline.get(k) else "<td>n/a</td>" for k in keys)
        link = f"{link_prefix}{r.notebook}/{r.job_id}/executed.html"
        rows.append(f"<tr><td class='model'><a href='{link}'>{html.escape(r.job_id)}</a></td>{cells}</tr>")
    methods = sorted({(r.headline[k].get("interval") or {}).get("method", "") for r in ok for k in keys
                      if r.headline.get(k) and r.headline[k].get("value") is not None} - {""})
    note_items = "".join(f"<li><b>{html.escape(labels[k])}</b>: {html.escape(v)}</li>" for k, v in notes.items())
    foot = ("<p class='note'>Intervals: " + html.escape("; ".join(_shorten_methods(methods))) + ".</p>") if methods else ""
    return (f"<div class='tablewrap'><table class='composite'><thead><tr><th>job</th>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></div>{foot}"
            + (f"<ul class='note'>{note_items}</ul>" if note_items else ""))


def _shorten_methods(methods: list[str]) -> list[str]:
    """Distinct interval methods with the sample counts dropped (they differ per job)."""
    out: list[str] = []
    for m in methods:
        s = re.sub(r"\b\d+ (?=resamples)", "", m)
        s = re.sub(r"of \d+ ", "of ", s)
        s = re.sub(r"\(\d+ rows\)", "", s).strip()
        s = re.sub(r"over \d+ ", "over ", s)
        if s not in out:
            out.append(s)
    return out


# ------------------------------------------------------------------------------ notebook facts
def _markdown_cells(rec: JobRecord) -> list[str]:
    try:
        import nbformat

        nb = nbformat.read(str(rec.path / "executed.ipynb"), as_version=4)
    except Exception:  # noqa: BLE001 - a missing notebook only costs the title
        return []
    return [c.source for c in nb.cells if c.cell_type == "markdown"]


def title_and_question(records: list[JobRecord], notebook: str) -> tuple[str, str]:
    """The notebook's first heading and its **Question.** paragraph (markdown)."""
    for rec in records:
        if not rec.ok:
            continue
        cells = _markdown_cells(rec)
        if not cells:
            continue
        first = cells[0]
        title = next((ln.lstrip("# ").strip() for ln in first.splitlines() if ln.startswith("#")), notebook)
        q = next((p for p in re.split(r"\n\s*\n", first) if p.strip().startswith("**Question")), "")
        return title, q.strip()
    return notebook, ""


def _md_inline(text: str) -> str:
    """Markdown of one paragraph -> HTML (bold, code, math left for MathJax)."""
    try:
        import mistune

        return mistune.html(text)
    except Exception:  # noqa: BLE001 - plain text is a fine fallback
        return f"<p>{html.escape(text)}</p>"


def lead_record(records: list[JobRecord]) -> JobRecord | None:
    """The job whose figures represent the notebook: a real model before tiny ones."""
    ok = [r for r in records if r.ok]
    real = [r for r in ok if not r.job_id.startswith("tiny")]
    return (real or ok or [None])[0]


def key_figures(records: list[JobRecord]) -> list[tuple[JobRecord, dict]]:
    """One to three key figures of a notebook: the lead job's first, then other jobs'."""
    lead = lead_record(records)
    order = ([lead] if lead else []) + [r for r in records if r.ok and r is not lead]
    picked: list[tuple[JobRecord, dict]] = []
    for r in order:
        figs = r.figures
        keys = [f for f in figs if f.get("key")] or figs[:1]
        for f in keys:
            if len(picked) < MAX_KEY_FIGURES and all(f["file"] != p[1]["file"] for p in picked):
                picked.append((r, f))
    return picked


def _img_src(rec: JobRecord, fig: dict, embed: bool, prefix: str) -> str:
    if embed:
        data = base64.b64encode((rec.path / fig["file"]).read_bytes()).decode()
        return f"data:image/png;base64,{data}"
    return f"{prefix}{rec.notebook}/{rec.job_id}/{fig['file']}"


def figures_html(records: list[JobRecord], embed: bool = False, prefix: str = "") -> str:
    items = []
    for rec, fig in key_figures(records):
        link = f"{prefix}{rec.notebook}/{rec.job_id}/executed.html"
        cap = f"{html.escape(fig.get('title') or fig['file'])} — <a href='{link}'>{html.escape(rec.job_id)}</a>"
        items.append(f"<figure class='thumb'><a href='{link}'><img src='{_img_src(rec, fig, embed, prefix)}' "
                     f"alt='{html.escape(fig.get('title') or fig['file'])}'></a><figcaption>{cap}</figcaption></figure>")
    return f"<div class='figs'>{''.join(items)}</div>" if items else ""


# ------------------------------------------------------------------------------ provenance
def provenance_footer(groups: dict[str, list[JobRecord]]) -> str:
    """Commits, package versions, devices, models (source, revision, weight digests), wall times."""
    ok = [r for rs in groups.values() for r in rs if r.ok]
    commits, versions, devices, models = {}, {}, {}, {}
    rows = []
    for r in ok:
        p = r.provenance
        g = p.get("git") or {}
        if g.get("commit"):
            commits[g["commit"][:12] + (" (dirty)" if g.get("dirty") else "")] = None
        v = p.get("versions") or {}
        if v:
            versions[", ".join(f"{k} {val}" for k, val in v.items() if val)] = None
        d = p.get("device") or {}
        if d:
            devices[f"{d.get('kind')} × {d.get('count')} ({d.get('name')})"] = None
        for m in p.get("models") or []:
            w = m.get("weights") or {}
            digest = ", ".join(f"{name}: {info.get('sha256', '')[:12]}" for name, info in w.items()) \
                or (m.get("weights_note") or "–")
            src = m.get("id") or m.get("local_dir") or "–"
            rev = m.get("commit_hash") or m.get("revision") or "–"
            models[m.get("name")] = (m.get("source"), src, rev, m.get("dtype"), digest)
        rows.append(f"<tr><td>{html.escape(r.notebook)}</td><td>{html.escape(r.job_id)}</td>"
                    f"<td>{p.get('wall_time_s', '–')}</td><td>{html.escape(str(p.get('dtype') or '–'))}</td>"
                    f"<td>{html.escape(str(p.get('model_device') or '–'))}</td></tr>")
    if not ok:
        return ""
    mrows = "".join(f"<tr><td>{html.escape(str(n))}</td>" + "".join(f"<td>{html.escape(str(x))}</td>" for x in vals)
                    + "</tr>" for n, vals in sorted(models.items(), key=lambda kv: str(kv[0])))
    return ("<footer><h3>Provenance</h3>"
            f"<p>Commit: <code>{html.escape(' / '.join(commits) or 'unknown')}</code><br>"
            f"Packages: {html.escape(' / '.join(versions) or 'unknown')}<br>"
            f"Devices: {html.escape(' / '.join(devices) or 'unknown')}</p>"
            "<table><thead><tr><th>model</th><th>source</th><th>id / directory</th><th>revision</th><th>dtype</th>"
            f"<th>weights sha256</th></tr></thead><tbody>{mrows}</tbody></table>"
            "<details><summary>Jobs: wall time, dtype, device</summary><table><thead><tr><th>notebook</th>"
            "<th>job</th><th>wall s</th><th>dtype</th><th>device</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></details></footer>")


# ------------------------------------------------------------------------------ seed claims
CLAIMS_NOTEBOOK = "15_seed_claims"


def _verdict(v: str) -> str:
    cls = {"held": "v-held", "not held": "v-not-held"}.get(v, "v-not-testable")
    return f"<span class='{cls}'>{html.escape(v)}</span>"


def _claims_table(rows: list[dict], columns: list[str]) -> str:
    head = "".join(f"<th class='{c.replace(' ', '-')}'>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td class='{c.replace(' ', '-')}'>"
                                    f"{_verdict(r[c]) if c == 'verdict' else html.escape(str(r.get(c) or ''))}</td>"
                                    for c in columns) + "</tr>" for r in rows)
    return f"<div class='tablewrap'><table class='claims'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def seed_claims_section(out_root: Path, groups: dict[str, list[JobRecord]], *, embed: bool = False,
                        prefix: str = "") -> str:
    """The findings' lead: seed 001's summary table with a verdict and reason per claim
    (:mod:`geolip_lib.claims`, read from every job under ``out_root``), notebook 15's
    figure, and every model's measured value beside the seed's."""
    from . import claims

    rows = claims.evaluate(out_root)
    summary = claims.summarize(rows)
    measured = [r for r in rows if r["value"] is not None]
    parts = ["<section class='claims' id='seed-claims'><h2 class='first'>Do the seed's claims hold?</h2>",
             "<p class='note'>Seed 001's summary table of \"universal constants\" and its best modulator result, "
             "each tested in the seed's own definition on this profile's jobs. <b>held</b>: the 95 % interval "
             "satisfies the claim's rule on every tested seed model; <b>not held</b>: an interval contradicts it; "
             "<b>not testable on this profile</b>: a seed model's job is missing, the quantity does not apply, or "
             "an interval straddles the threshold. Stand-ins are the models the seed did not measure (the demo's "
             "MiniLM and tiny random models): whether the property holds there, not a verdict on the seed's "
             f"claim. Details: <a href='{prefix}{CLAIMS_NOTEBOOK}/all/executed.html'>notebook 15</a>.</p>",
             _claims_table(summary, ["title", "seed value", "seed models", "verdict", "reason", "stand-ins",
                                     "null explains"])]
    for rec, fig in key_figures([r for r in groups.get(CLAIMS_NOTEBOOK) or [] if r.ok])[:1]:
        parts.append(f"<figure class='wide'><img src='{_img_src(rec, fig, embed, prefix)}' "
                     f"alt='{html.escape(fig.get('title') or fig['file'])}'></figure>")
    if measured:
        parts.append("<h3>Measured values, per model and scope</h3>")
        parts.append(_claims_table(measured, ["title", "model", "scope", "seed value", "measured",
                                              "project definition", "nulls", "verdict", "reason"]))
    parts.append("</section>")
    return "\n".join(p for p in parts if p)


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


def install_mathjax(out_root: Path) -> Path:
    """Copy MathJax 2.7 (from the jupyter-server-mathjax package) into ``_static/mathjax``."""
    import jupyter_server_mathjax

    src = Path(jupyter_server_mathjax.__file__).parent / "static"
    dest = out_root / "_static" / "mathjax"
    if not (dest / "MathJax.js").exists():
        tmp = out_root / "_static" / ".mathjax.partial"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(src, tmp)
        shutil.rmtree(dest, ignore_errors=True)
        os.replace(tmp, dest)
    return dest


def _with_preconfig(page_html: str) -> str:
    """Insert the MathJax font configuration before the first script of an nbconvert page."""
    return page_html.replace("<script", MATHJAX_PRECONFIG + "<script", 1)


def notebook_html(executed: Path, mathjax_rel: str, exclude_input: bool = False) -> str:
    """An executed notebook as a lab-template HTML page with local MathJax."""
    from nbconvert import HTMLExporter

    exp = HTMLExporter(template_name="lab", exclude_input=exclude_input)
    exp.mathjax_url = f"{mathjax_rel}/MathJax.js?config={MATHJAX_CONFIG}"
    body, _ = exp.from_filename(str(executed))
    return _with_preconfig(body)


def _is_displayed_result(out: dict) -> bool:
    """Figures and tables stay in the PDF; printed streams, errors and plain-text dumps do not."""
    if out.get("output_type") not in ("display_data", "execute_result"):
        return False
    data = out.get("data") or {}
    return "image/png" in data or "text/html" in data or "text/markdown" in data


def _is_headline_table(out: dict) -> bool:
    """The runtime's headline table (and its notes): the findings already show them."""
    data = out.get("data") or {}
    html_text = "".join(data.get("text/html", ""))
    return "Headline numbers: value [95 % interval]" in html_text or (
        "text/markdown" in data and out.get("metadata", {}).get("geolip") == "headline-notes")


def narrative_cells(rec: JobRecord) -> list:
    """The executed notebook's markdown cells and its displayed figures/tables (no code,
    no printed streams, no plain-text dumps; the references section is left to the HTML)."""
    import nbformat

    nb = nbformat.read(str(rec.path / "executed.ipynb"), as_version=4)
    cells = []
    for c in nb.cells:
        tags = c.get("metadata", {}).get("tags", [])
        if "parameters" in tags or "injected-parameters" in tags:
            continue
        if c.cell_type == "markdown":
            if not c.source.lstrip().startswith("## References"):
                cells.append(c)
            continue
        if c.cell_type != "code":
            continue
        outs = [o for o in c.get("outputs", []) if _is_displayed_result(o) and not _is_headline_table(o)]
        if outs:
            cc = nbformat.v4.new_code_cell("")
            cc.outputs = outs
            cells.append(cc)
    return cells


def key_figure_grid(records: list[JobRecord]) -> str:
    """The key figures of several jobs in one grid, three per row, embedded (the other models
    of a notebook in the PDF; their numbers are in the findings' composite table)."""
    items = []
    for rec in records:
        figs = [f for f in rec.figures if f.get("key")] or rec.figures[:1]
        items += [f"<figure class='thumb small'><img src='{_img_src(rec, f, True, '')}' "
                  f"alt='{html.escape(f['title'])}'><figcaption><b>{html.escape(rec.job_id)}</b>: "
                  f"{html.escape(f.get('title') or f['file'])}</figcaption></figure>" for f in figs]
    return f"<div class='figs'>{''.join(items)}</div>"


def document_notebook(profile: str, groups: dict[str, list[JobRecord]], findings: str):
    """One notebook for the PDF: the findings, then per notebook the lead job's narrative,
    figures and tables, then the other jobs' key figures (their numbers are in the findings'
    composite tables; everything else is in their executed HTML)."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_markdown_cell(findings))
    for name, recs in groups.items():
        if name == CLAIMS_NOTEBOOK:
            continue  # its tables and figure are the findings' first pages
        ok = [r for r in recs if r.ok and (r.path / "executed.ipynb").exists()]
        lead = lead_record(ok)
        if lead is None:
            continue
        nb.cells.append(nbformat.v4.new_markdown_cell(
            f"<h2 class='appendix'>Appendix · {html.escape(name)} — {html.escape(lead.job_id)}</h2>"))
        nb.cells.extend(narrative_cells(lead))
        others = [r for r in ok if r is not lead]
        if others:
            nb.cells.append(nbformat.v4.new_markdown_cell(
                f"<h3>{html.escape(name)} — the other models' key figures</h3>{key_figure_grid(others)}"))
    for i, cell in enumerate(nb.cells):  # cells of different notebooks may share ids
        cell["id"] = f"cell-{i}"
    return nb


def find_chromium() -> str | None:
    for name in CHROMIUM_NAMES:
        p = shutil.which(name)
        if p:
            return p
    return None


def chromium_cmd(chromium: str, profile_dir: str, *extra: str) -> list[str]:
    """Headless Chromium that stays off the (closed) network."""
    return [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-dev-shm-usage", f"--user-data-dir={profile_dir}", *extra]


def print_pdf(html_path: Path, pdf_path: Path, timeout: int = 600) -> None:
    """Print an HTML file to PDF with headless Chromium (waits for MathJax via a time budget)."""
    chromium = find_chromium()
    if chromium is None:
        raise RuntimeError("report.pdf needs Chromium: install Debian's 'chromium' package "
                           "(make setup does it as root), or rerun with --no-pdf")
    with tempfile.TemporaryDirectory() as profile_dir:
        tmp_pdf = pdf_path.with_name(f".{pdf_path.name}.tmp")
        cmd = chromium_cmd(chromium, profile_dir, "--virtual-time-budget=30000",
                           "--run-all-compositor-stages-before-draw", "--no-pdf-header-footer",
                           f"--print-to-pdf={tmp_pdf}", html_path.resolve().as_uri())
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0 or not tmp_pdf.exists() or tmp_pdf.stat().st_size == 0:
            tmp_pdf.unlink(missing_ok=True)
            raise RuntimeError(f"chromium failed to print {html_path.name} (exit {r.returncode}): "
                               f"{(r.stderr or '').strip().splitlines()[-1:]}")
        os.replace(tmp_pdf, pdf_path)


def console_messages(html_path: Path, timeout: int = 120) -> list[str]:
    """Console messages (errors, warnings, failed loads) Chromium logs while loading a page."""
    chromium = find_chromium()
    if chromium is None:
        raise RuntimeError("console_messages needs Chromium (Debian package 'chromium')")
    with tempfile.TemporaryDirectory() as profile_dir:
        cmd = chromium_cmd(chromium, profile_dir, "--enable-logging=stderr", "--v=0", "--log-level=0",
                           "--virtual-time-budget=15000", "--dump-dom", html_path.resolve().as_uri())
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return [ln for ln in r.stderr.splitlines() if ":CONSOLE" in ln or "ERR_FILE_NOT_FOUND" in ln]


def build(profile: str, out_root: Path | None = None, pdf: bool = True) -> list[Path]:
    """Build HTML for every job, ``index.html`` and (optionally) ``report.pdf``.

    Returns the paths of ``index.html`` and ``report.pdf`` (when produced).
    """
    from .params import load_profile

    out_root = Path(out_root) if out_root else REPORTS / profile
    out_root.mkdir(parents=True, exist_ok=True)
    try:
        prof = load_profile(profile, notebooks_dir=os.environ.get("GEOLIP_NOTEBOOKS") or None)
        profile, description = prof.name, prof.description
    except Exception:  # noqa: BLE001 - the report of an ad-hoc output root has no profile
        description = ""
    install_mathjax(out_root)
    groups = collect(out_root)
    for recs in groups.values():
        for r in recs:
            if r.ok and (r.path / "executed.ipynb").exists():
                atomic_write_text(r.path / "executed.html", notebook_html(r.path / "executed.ipynb",
                                                                          "../../_static/mathjax"))
    index = out_root / "index.html"
    atomic_write_text(index, index_html(profile, groups, description, out_root=out_root))
    paths = [index]
    if pdf:
        import nbformat

        findings = findings_body(profile, groups, description, embed=True, prefix="../", out_root=out_root)
        nb = document_notebook(profile, groups, findings)
        combined = out_root / "_static" / "report_document.ipynb"
        atomic_write_text(combined, nbformat.writes(nb))
        doc = notebook_html(combined, "mathjax", exclude_input=True)
        doc = doc.replace("</head>", f"<style>{CSS}{PRINT_CSS}</style></head>", 1)
        doc_html = out_root / "_static" / "report_document.html"
        atomic_write_text(doc_html, doc)
        pdf_path = out_root / "report.pdf"
        try:
            print_pdf(doc_html, pdf_path)
            paths.append(pdf_path)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            print(f"warning: report.pdf not written: {exc}", file=sys.stderr)
    return paths


def pdf_text(pdf_path: Path) -> str:
    """Extract the text of a PDF (pypdf) — used by tests to check the report is readable."""
    import unicodedata

    from pypdf import PdfReader

    text = "\n".join(page.extract_text() or "" for page in PdfReader(str(pdf_path)).pages)
    return unicodedata.normalize("NFKC", text)  # undo ligatures such as "fi"


def pdf_image_count(pdf_path: Path) -> int:
    """Number of images embedded in a PDF's pages (pypdf)."""
    from pypdf import PdfReader

    return sum(len(page.images) for page in PdfReader(str(pdf_path)).pages)


__all__ = ["build", "collect", "composite_table", "console_messages", "findings_body", "index_html",
           "install_mathjax", "key_figures", "pdf_image_count", "pdf_text", "print_pdf", "provenance_footer"]
