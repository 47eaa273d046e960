"""Reading a report root's metrics.json files and giving each claim, reading and model its verdict.

The verdict of one value (:mod:`geolip_lib.claims.rules`) is reached in three steps:

1. the rule: an exact value is compared as it is (at the seed's printed precision); a sampled
   or over-seeds value by its whole interval (inside: satisfied; disjoint: **not held**;
   straddling: **undecided**, with the sample size that would decide); a change-point test
   that found nothing is **undecided** unless its power against the seed's kink is shown
   (:func:`geolip_lib.claims.power.kink_power`), **not held** when it is;
2. the nulls that bear on the claim (the claims file's ``nulls``): a satisfied rule is
   **held** only when every such null was recorded, does not satisfy the rule itself and is
   separated from the value; a null that satisfies the rule, or that the value is not
   separated from, makes it **held, but the null gives it too**; a bearing null not recorded
   leaves it **undecided** (the reason says which to record);
3. a value marked ``forced_by_shape`` (the weight shapes fix it) is kept out: status
   **forced by shape**, in no verdict.

A record marked ``repeats`` (another record's number again: a table PCA-projected to its own
width is a rotation, its CV the native one) is shown as **not tested**, never a second verdict;
a record's ``rows`` (``{"text": "20 of 25 rows: 5 special tokens left out"}``) is named in its
reason.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Iterable, Mapping, Optional, Union

from .. import roots
from ..metrics.intervals import format_value
from ..params import ParamsError, load_model_params
from ..results import kind_of, separates
from . import pairs
from .registry import Claim, ClaimSet, Form, load
from .rules import FORCED, HELD, HELD_NULL, NOT_HELD, NOT_TESTED, UNDECIDED, VERDICTS, Rule, display_null
from .schema import render_sentence
from .summary import READING_DISAGREES, readings, summarize
from .verdict_cases import dig as _dig
from .verdict_cases import forced_balance, null_beyond, null_fails_too, quantization_verdict, reach
from .verdict_cases import power_verdict as _power_verdict
from .verdict_cases import show_num as _num

__all__ = ["evaluate", "summarize", "readings", "required_jobs", "missing_jobs", "trained", "dequantized",
           "pipeline_checks", "describe", "model_descriptions", "READING_DISAGREES", "forced_balance",
           "quantization_verdict"]



def _read_jobs(root: Path, notebook: str) -> dict[str, dict]:
    """model name -> metrics.json payload of every finished job of ``notebook`` under ``root``
    (read through :mod:`geolip_lib.roots`: a job folder that is a link, or a file too large or
    too deep, is never read)."""
    out: dict[str, dict] = {}
    for job, data in roots.finished_metrics(root, notebook):
        out[data.get("model") if isinstance(data.get("model"), str) else job.name] = data
    return out


def _bounds(h: Mapping) -> tuple[Optional[float], Optional[float]]:
    iv = h.get("interval") or {}
    lo, hi = iv.get("lo"), iv.get("hi")
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return None, None
    return float(lo), float(hi)


def _nulls(h: Mapping) -> dict[str, dict]:
    out = {}
    for k, n in (h.get("nulls") or {}).items():
        if isinstance(n, Mapping) and n.get("value") is not None:
            out[display_null(k)] = dict(n)
        elif isinstance(n, (int, float)) and not isinstance(n, bool):
            out[display_null(k)] = {"value": n, "interval": None}
    return out


def _show(h: Optional[Mapping], scale: float = 1.0, unit: str = "") -> str:
    """``value [lo, hi]`` at the precision the interval supports; an exact value with its method."""
    if not h or h.get("value") is None:
        return "–"
    v = h["value"]
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return str(v)
    lo, hi = _bounds(h)
    iv = None if lo is None else (lo * scale, hi * scale)
    s = format_value(v * scale, iv, h.get("fmt") if scale == 1 else ".2f") + (f" {unit}" if unit else "")
    if kind_of(h.get("interval")) == "exact":
        s += f" {(h.get('interval') or {}).get('method') or 'exact'}"
    return s


def _fold_nulls(c: Claim, form: Form, rule: Rule, verdict: str, reason: str, value: float, lo, hi, exact: bool,
                nulls: Mapping[str, dict], fmt: Optional[str]) -> tuple[str, str, str]:
    """(verdict, reason, null sentence) once the nulls are folded in: every null that bears on the
    claim (the claims file's) and every null the record lists beside the value, by the same
    rule — a null shown beside a reading that satisfies its rule makes it at most "held, but the
    null gives it too" (a modulator that does nothing must not pass)."""
    iv = (value, value) if exact or lo is None else (lo, hi)
    bearing = [display_null(n) for n in (c.nulls if form.nulls is None else form.nulls)]
    if verdict == NOT_HELD:
        return null_fails_too(c, rule, reason, iv, nulls, bearing, fmt)
    if verdict != HELD:
        return verdict, reason, ""
    against = null_beyond(c, form, rule, value, iv, nulls, fmt)
    if against:
        return NOT_HELD, reason + "; but " + against, ""
    missing, gives, apart = [], [], []
    for name in dict.fromkeys(bearing + list(nulls)):
        n = nulls.get(name)
        if n is None:
            missing.append(name)
            continue
        nlo, nhi = _bounds(n)
        shown = format_value(n["value"] * c.scale, None if nlo is None else (nlo * c.scale, nhi * c.scale),
                             fmt if c.scale == 1 else ".2f") + (f" {c.unit}" if c.unit else "")
        if rule.satisfied_by(n["value"], None if nlo is None else (nlo, nhi)):
            gives.append((name, shown, "it satisfies the rule too"))
        elif separates(iv, n["value"], n.get("interval")) is False:
            gives.append((name, shown, "the value is not separated from it"))
        else:
            apart.append(f"{name} {shown}")
    if gives:
        name, shown, why = gives[0]
        sentence = render_sentence(c.null_sentence, null=name, value=shown) if c.null_sentence else ""
        return HELD_NULL, reason + "; but " + "; ".join(f"the {n} gives {s} ({w})" for n, s, w in gives), sentence
    if missing:
        return UNDECIDED, (reason + f"; whether training produced it is open: the {', '.join(missing)} null that "
                           "bears on it was not recorded (record it to decide)"), ""
    if apart:
        reason += "; separated from " + ", ".join(apart)
    return HELD, reason, ""


def _row(c: Claim, fi: int, form: Form, model: str, job: str, scope: str, h: Mapping, seed_model: bool,
         data: Mapping) -> dict:
    rule = form.rule_for(model, scope)
    ref = form.reference_for(model, scope)
    row = _base(c, fi, form, model, job, seed_model, rule)
    row["scope"] = scope
    if form.definition == "project":
        h = h.get("project") or {}
        if not h:
            row["reason"] = f"{job} recorded no project definition of '{scope}'"
            return row
    for k, want in form.requires.items():
        if h.get(k) != want:
            row["reason"] = (f"the record is not this reading ({k} = {h.get(k)!r}, this reading needs {want!r})"
                             + (f": {h['note']}" if h.get("note") else ""))
            return row
    lo, hi = _bounds(h)
    value = h.get("value")
    exact = kind_of(h.get("interval")) == "exact"
    nulls = _nulls(h)
    if isinstance(h.get("repeats"), str) and h["repeats"]:
        # a record that is another record's number (a PCA to the table's own width is a rotation: the native
        # CV again): shown, never a second verdict
        row.update({"measured": _show(h, c.scale, c.unit), "value": value, "lo": lo, "hi": hi,
                    "kind": kind_of(h.get("interval")), "verdict": NOT_TESTED,
                    "reason": f"not tested: {h['repeats']}; the same number is not a second verdict"})
        return row
    if value is None and isinstance(h.get("note"), str) and h["note"] and not h.get("per_layer") \
            and "found" not in h and not h.get("forced_by_shape"):
        # a record the notebook wrote without a value, and why: the measure does not apply to this model (a vocabulary
        # of amino acids has no English words for Gao's frequencies): not tested here, never "undecided". A change
        # point not found (found: false) is a result, read by its power below
        row.update({"measured": "–", "verdict": NOT_TESTED, "reason": f"does not apply to this model: {h['note']}"})
        return row
    pw = None
    deq = dequantized(data)
    forced = forced_balance(h) if h.get("forced_by_shape") else None
    if h.get("forced_by_shape"):
        verdict, reason, sentence = FORCED, (f"forced by shape: {h['forced_by_shape']}"
                                             + (f"; {forced['text']}" if forced else "") + "; kept out of the verdict"), ""
    elif h.get("found") is False:
        verdict, reason, pw = _power_verdict(c, form, h, data)
        sentence = ""
    else:
        verdict, reason = rule.judge(value, lo, hi, exact=exact, per_layer=h.get("per_layer"), scale=c.scale,
                                     unit=c.unit)
        verdict, reason, sentence = _fold_nulls(c, form, rule, verdict, reason, value, lo, hi, exact, nulls,
                                                h.get("fmt"))
        verdict, reason = reach(c, rule, verdict, reason, h)
    if deq is not None and c.quantization and verdict in VERDICTS:
        verdict, reason = quantization_verdict(rule, verdict, reason, h, deq, c)
    rows = h.get("rows") if isinstance(h.get("rows"), Mapping) else {}
    if isinstance(rows.get("text"), str) and rows["text"]:  # which rows of the table the value used
        reason += f"; on {rows['text']}"
    if ref is not None and lo is not None and not exact and isinstance(value, (int, float)):
        reason += (f"; the interval {'contains' if lo <= ref <= hi else 'excludes'} the seed's "
                   f"{_num(ref, c.scale, c.unit)}")
    row.update({
        "seed value": _num(ref, c.scale, c.unit) if ref is not None else c.seed_value,
        # a forced value shows what it is made of, not a number such as 0.5001 that reads like "locked at 0.500"
        "measured": f"nonzero balance {forced['balance']:.4g}" if forced else _show(h, c.scale, c.unit),
        "value": value, "lo": lo, "hi": hi, "kind": kind_of(h.get("interval")),
        "project definition": _show(h.get("project"), c.scale, c.unit) if form.definition == "seed" and
        isinstance(h.get("project"), Mapping) else "",
        "nulls": "; ".join(f"{k}: {_show(n, c.scale, c.unit)}" for k, n in nulls.items()),
        "null values": {k: n.get("value") for k, n in nulls.items()},
        "verdict": verdict, "reason": reason, "null explains": sentence, "power": pw, "dequantized": deq,
        "forced": forced,
    })
    return row


def _base(c: Claim, fi: int, form: Form, model: str, job: str, seed_model: bool, rule: Optional[Rule] = None,
          reason: str = "") -> dict:
    return {"claim": c.id, "title": c.title, "form": fi, "reading": form.name, "measured as": form.measured_as,
            "by": form.whose(model), "extrapolation": form.extrapolated.get(model, ""),
            "model": model, "job": job, "scope": "", "seed model": seed_model, "seed value": c.seed_value,
            "measured": "–", "value": None, "lo": None, "hi": None, "kind": None, "project definition": "",
            "nulls": "", "null values": {}, "verdict": NOT_TESTED, "reason": reason,
            "rule": (rule or form.rule).text, "null explains": "", "power": None, "dequantized": None, "forced": None, "stand-in reading": "",
            "note": form.note}


def _provenance_models(data: Mapping) -> list[Mapping]:
    prov = data.get("provenance") if isinstance(data.get("provenance"), Mapping) else {}
    out = [prov.get("model")] + list(prov.get("models") or [])
    return [m for m in out if isinstance(m, Mapping)]


def dequantized(data: Mapping) -> Optional[str]:
    """"dequantized <types>" when a job's model was loaded from quantized weights (GGUF:
    ``provenance.model.dequantized`` or its weights' ``dequantized`` flag), else None."""
    for m in _provenance_models(data):
        w = m.get("weights") if isinstance(m.get("weights"), Mapping) else {}
        if m.get("dequantized") is True or w.get("dequantized") is True:
            q = w.get("quantization") if isinstance(w.get("quantization"), Mapping) else {}
            types = sorted({str(t) for t in q.values()})[:4]
            return "dequantized" + (f" {', '.join(types)}" if types else "")
    return None


def trained(model: str, data: Mapping) -> bool:
    """Whether a job's model has trained weights (a stand-in may be listed beside the claims):
    not a tiny random model (params source ``tiny``) and not a random-init twin. Read from the
    job's provenance, else from the model's params file; a model with neither is taken as
    trained (a user's own folder)."""
    for m in _provenance_models(data):
        if m.get("name") in (None, model):
            if m.get("source") == "tiny" or m.get("random_init") is True:
                return False
            if m.get("source") is not None:
                return True
    try:
        mp = load_model_params(model)
    except (ParamsError, OSError, ValueError):
        return True
    tw = getattr(mp, "trained_weights", None)
    return bool(tw) if tw is not None else mp.source != "tiny"


DESCRIPTION_CHARS = 400  # a description longer than this is cut (it is shown beside every matrix)


def describe(model: str, data: Mapping) -> str:
    """What a model is, in one line (a stand-in's verdict says what the stand-in is: "a
    Q4_K_M Coder model", "possibly fine-tuned", "Whisper, not T5"): the ``description`` its job's
    provenance records, else its params file's; '' when neither has one. Cut at
    :data:`DESCRIPTION_CHARS`, whitespace folded (it is text, escaped where it is shown)."""
    text = next((m.get("description") for m in _provenance_models(data)
                 if m.get("name") in (None, model) and isinstance(m.get("description"), str)), None)
    if text is None:
        try:
            text = getattr(load_model_params(model), "description", None)
        except (ParamsError, OSError, ValueError):
            text = None
    text = " ".join(str(text or "").split())
    return text if len(text) <= DESCRIPTION_CHARS else text[:DESCRIPTION_CHARS - 1] + "…"


def model_descriptions(root: Union[str, Path], claims: Union[str, Path, ClaimSet, None] = None) -> dict[str, str]:
    """model -> :func:`describe` for every trained model under ``root`` that ran a notebook the claims read."""
    out: dict[str, str] = {}
    for nb in required_jobs(claims):
        for model, data in _read_jobs(Path(root), nb).items():
            if model not in out and trained(model, data):
                out[model] = describe(model, data)
    return {k: v for k, v in out.items() if v}


def pipeline_checks(root: Union[str, Path], claims: Union[str, Path, ClaimSet, None] = None) -> list[str]:
    """The models under ``root`` that ran a notebook the claims read but have no trained weights
    (tiny random models): pipeline checks, never given a verdict nor listed beside the claims
    ("the pipeline also ran on N tiny models")."""
    out: list[str] = []
    cache: dict[str, dict] = {}
    for c in load(claims).claims:
        for form in c.forms:
            jobs = cache.setdefault(form.notebook, _read_jobs(Path(root), form.notebook))
            for unit, (_, data) in _units(form, jobs).items():  # a pair's or a set's models, one by one
                out += [m for m in pairs.members(unit) if m not in out and not trained(m, data)]
    return sorted(out)


def _records(c: Claim, form: Form, data: Mapping, seed_model: bool) -> tuple[Optional[dict], bool]:
    """(scope -> headline dict of this reading in one job's metrics.json, or None; whether it is
    the form's ``standin_record``, shown whole for a stand-in that lacks the claim's own)."""
    metrics = data.get("metrics") or {}
    if form.path:
        h = _dig(data, form.path)
        return ({form.scope: h} if isinstance(h, Mapping) and "value" in h else None), False
    recorded = metrics.get("claims") or {}
    rec = recorded.get(form.record)
    if not rec and not seed_model and form.standin_record and recorded.get(form.standin_record):
        kind = form.standin_record.split("_")[1]  # qk_self_balance -> "self"
        return {f"{s} ({kind}-attention)": h for s, h in recorded[form.standin_record].items()}, True
    return rec or None, False


def _path_absent(job: str, path: tuple, data: Mapping) -> str:
    """Why a ``path:`` reading found no headline in a job's metrics.json: the first key of ``path`` that is not
    there, and the keys that are (a typo in the claims file says so, rather than "the job predates this record"),
    or that what is there is no headline (no ``value``)."""
    tree, found = data, []
    for k in path:
        if not isinstance(tree, Mapping) or k not in tree:
            break
        tree, found = tree[k], found + [k]
    at = ".".join(found) or "its top level"
    if len(found) == len(path):
        return (f"{job}'s metrics.json has {'.'.join(path)}, but it is not a headline (no value); path: names a "
                "headline dict (headline.<name>)")
    if not isinstance(tree, Mapping):
        return f"{job}'s metrics.json has no {'.'.join(path)}: {at} is a {type(tree).__name__}, not a mapping"
    keys = sorted(map(str, tree))
    shown = ", ".join(keys[:30]) + (f" and {len(keys) - 30} more" if len(keys) > 30 else "")
    return (f"{job}'s metrics.json has no {'.'.join(path)}: {at} has no key {path[len(found)]!r} (it has: "
            f"{shown or 'nothing'}); fix path: in the claims file")


def standin_reading(form: Form) -> str:
    """What a stand-in's ``standin_record`` reads instead of the claim's quantity (the
    "cross-attention QK balance" row was read on encoders' self-attention, and said nothing)."""
    kind = form.standin_record.split("_")[1]  # qk_self_balance -> "self"
    return (f"a stand-in reading of {kind}-attention (the model has no {form.record.split('_')[1]}-attention; "
            f"metrics.claims.{form.standin_record})")


def _units(form: Form, jobs: Mapping[str, dict]) -> dict[str, tuple[str, dict]]:
    """unit -> (job, its metrics.json payload): a model-scoped reading's units are the jobs' models; a pair- or
    set-scoped one's are the pairs its notebook's jobs recorded (:func:`geolip_lib.claims.pairs.split_jobs`)."""
    if form.about == "model":
        return {m: (f"{form.notebook}/{m}", d) for m, d in jobs.items()}
    return {u: (f"{form.notebook}/{j}", v) for u, (j, v) in pairs.split_jobs(jobs, form.record or "").items()}


def evaluate(root: Union[str, Path], claims: Union[str, Path, ClaimSet, None] = None,
             seed_models_only: bool = False) -> list[dict]:
    """One row per (claim, reading, model, scope) recorded under the report root ``root``, plus
    one "not tested" row per model of a reading that has no job there.

    ``claims``: a claims file (name under params/claims/, path, or loaded set; default seed 001).
    Each row: claim, title, form (index of the reading), reading ("as the table says", ...),
    measured as, model, job, scope, seed model (bool), seed value, measured, value, lo, hi,
    kind (exact / sampled / over_seeds), project definition, nulls, null values, verdict
    (:data:`~geolip_lib.claims.rules.STATUSES`), reason, rule, null explains, power (the
    change-point power simulation, where one ran), note.
    """
    root = Path(root)
    cs = load(claims)
    cache: dict[str, dict] = {}
    rows: list[dict] = []
    for c in cs.claims:
        for fi, form in enumerate(c.forms):
            jobs = cache.setdefault(form.notebook, _read_jobs(root, form.notebook))
            units = _units(form, jobs)
            for model, (job, data) in units.items():
                seed_model = model in form.models
                if seed_models_only and not seed_model:
                    continue
                if not seed_model and not all(trained(m, data) for m in pairs.members(model)):
                    continue  # a tiny random model is a pipeline check (pipeline_checks), never a stand-in
                if isinstance(data.get(pairs.NOT_RUN), str):  # a pair the notebook could not measure, and why
                    rows.append(_base(c, fi, form, model, job, seed_model, reason=f"not run: {data[pairs.NOT_RUN]}"))
                    continue
                rec, standin = _records(c, form, data, seed_model)
                where = "/".join(form.path) if form.path else f"claims.{form.record}"
                if not rec:
                    if seed_model:
                        rows.append(_base(c, fi, form, model, job, True, reason=_path_absent(job, form.path, data) if
                                          form.path else (f"{job} recorded no metrics.{where} (the quantity does not "
                                                          "apply to this model, or the job predates this record)")))
                    continue
                want = form.scopes_for(model)
                scopes = [s for s in rec if want is None or standin or s in want]
                if not scopes and seed_model:
                    rows.append(_base(c, fi, form, model, job, True, reason=(
                        f"no {' / '.join(want or ())} scope in {job} metrics.{where} (recorded: {', '.join(rec)})")))
                for scope in scopes:
                    if isinstance(rec[scope], Mapping):
                        rows.append(_row(c, fi, form, model, job, scope, rec[scope], seed_model, data))
                        if standin:  # the claim's own quantity is absent: a different attention is read
                            rows[-1]["stand-in reading"] = standin_reading(form)
                            rows[-1]["reason"] = f"{rows[-1]['stand-in reading']}; {rows[-1]['reason']}"
            for m in form.models:
                if m not in units:
                    why = (f"no finished {form.notebook} job for {m} in this profile" if form.about == "model" or not jobs
                           else f"no finished {form.notebook} job recorded {m} in this profile (recorded: "
                                f"{', '.join(sorted(units)) or 'none'})")
                    rows.append(_base(c, fi, form, m, f"{form.notebook}/{m}", True, reason=why))
    return rows


def required_jobs(claims: Union[str, Path, ClaimSet, None] = None) -> dict[str, list[str]]:
    """notebook -> the models a profile must run it on to test every reading of every claim."""
    need: dict[str, list[str]] = {}
    for c in load(claims).claims:
        for f in c.forms:
            lst = need.setdefault(f.notebook, [])
            # a pair- or set-scoped reading needs its notebook's one job over the models, not a job per unit
            lst += [m for m in f.models if m not in lst and f.about == "model"]
    return need


def missing_jobs(profile_jobs: Iterable[tuple[str, Optional[str]]],
                 claims: Union[str, Path, ClaimSet, None] = None) -> list[str]:
    """``notebook/model`` pairs :func:`required_jobs` lists that ``profile_jobs`` (pairs of
    notebook and model) lacks."""
    have = {(nb, m) for nb, m in profile_jobs}
    return [f"{nb}/{m}" for nb, ms in required_jobs(claims).items() for m in ms if (nb, m) not in have]
