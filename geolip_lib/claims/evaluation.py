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
from typing import Any, Iterable, Mapping, Optional, Union

from .. import roots
from ..metrics.intervals import format_value
from ..params import ParamsError, load_model_params
from ..results import kind_of, separates
from .power import MAX_DOUBLINGS, MAX_SEEDS, kink_power, observed_curves
from .registry import Claim, ClaimSet, Form, load
from .schema import PATH_FIELDS, render_sentence
from .rules import (FORCED, HELD, HELD_NULL, NOT_HELD, NOT_TESTED, UNDECIDED, VERDICTS, Rule, display_null)

__all__ = ["evaluate", "summarize", "readings", "required_jobs", "missing_jobs", "trained", "dequantized",
           "pipeline_checks", "describe", "model_descriptions", "READING_DISAGREES", "forced_balance",
           "quantization_verdict"]

#: the verdict over a claim's readings when they disagree (a reading of the seed's words decides it)
READING_DISAGREES = "undecided (reading)"


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


def _dig(tree: Any, path: Iterable[str]) -> Any:
    for k in path:
        if not isinstance(tree, Mapping) or k not in tree:
            return None
        tree = tree[k]
    return tree


def _num(x: float, scale: float, unit: str) -> str:
    return f"{x * scale:.4g}{' ' + unit if unit else ''}"


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


def _power_verdict(c: Claim, form: Form, h: Mapping, data: Mapping) -> tuple[str, str, Optional[dict]]:
    """A change-point test that found nothing: not held only when its power, computed from the
    job's own observed seed curves (:func:`geolip_lib.claims.power.kink_power`), is shown."""
    p, bp = h.get("p_value"), h.get("best_breakpoint")
    base = "no change point found" + (f" (p = {p:.2g}" if _is_num(p) else " (") + \
           (f"; best breakpoint {bp:.3g})" if _is_num(bp) else ")")
    spec = form.power
    if spec is None:
        return UNDECIDED, base + "; the test's power is not known, so non-detection decides nothing", None
    fields = {k: str(h.get(k)) for k in PATH_FIELDS if isinstance(h.get(k), str)}
    fit_path = render_sentence(spec.fit_path, **fields)
    metrics = data.get("metrics") or {}
    fit = _dig(metrics, fit_path.split("."))
    fit = fit if isinstance(fit, Mapping) else {}
    quantity = h.get("quantity") if isinstance(h.get("quantity"), str) else "pearson"
    curves = observed_curves(_dig(metrics, render_sentence(spec.sweep_path, **fields).split(".")), quantity)
    null = fit.get("null") if fit.get("null") in ("line", "quadratic") else \
        (h.get("null") if h.get("null") in ("line", "quadratic") else "line")
    method = fit.get("model") if fit.get("model") in ("segmented", "step") else "segmented"
    pw = kink_power(curves[0], curves[1], at=spec.at, slope_change=spec.slope_change, method=method, null=null,
                    reps=spec.reps, n_boot=spec.n_boot, target=spec.target) if curves is not None else None
    if pw is None or pw["power"] is None:
        why = ("no per-seed curves recorded at metrics." + spec.sweep_path) if curves is None else \
            "one seed: no seed-to-seed spread to draw experiments from"
        return UNDECIDED, (base + f"; its power could not be computed ({why}), so non-detection decides nothing"), pw
    kink = f"a kink of slope change {spec.slope_change:g} at {spec.at:g} ({spec.basis})"
    grid = (f"on this {len(pw['grid'])}-point grid the {null} no-change model absorbs {pw['absorbed']:.0%} of a "
            f"hinge's energy at {spec.at:g} (a line {pw['absorbed_line']:.0%})")
    sim = (f"{pw['reps']} simulated experiments of {pw['n_seeds']} seeds drawn around the observed no-change fit "
           f"with the observed seeds' covariance along the grid; observed sd of the per-seed hinge coefficient "
           f"{pw['hinge_sd']:.3g}; {grid}")
    inj = ", ".join(f"{i['multiple']:g}x: {'found' if i['found'] else 'not found'} (p = {i['p_value']:.2g})"
                    for i in pw["injected"])
    sim += f"; the kink added to the observed curves: {inj}"
    if pw["power"] >= spec.target:
        return NOT_HELD, (f"{base}, although the test finds {kink} {pw['power']:.0%} of the time ({sim}): the "
                          "absence of a change contradicts the claim"), pw
    decide = []
    if pw["smallest_detectable"] is not None:
        decide.append(f"the test finds a kink of slope change {pw['smallest_detectable']:.3g} "
                      f"({pw['smallest_detectable'] / spec.slope_change:.0f}x the seed's) "
                      f"{spec.target:.0%} of the time")
    else:
        decide.append(f"no kink up to {2 ** MAX_DOUBLINGS}x the seed's is found {spec.target:.0%} of the time "
                      "on this grid")
    if pw["seeds_needed"] is not None:
        decide.append(f"about {pw['seeds_needed']} seeds would find the seed's kink {spec.target:.0%} of the time")
    else:
        decide.append(f"{MAX_SEEDS} seeds on this grid would not find the seed's kink {spec.target:.0%} of the time "
                      "either: a finer grid around the seed's value is needed")
    return UNDECIDED, (f"{base}; the test's power against {kink} is {pw['power']:.0%} ({sim}): too low to read "
                       f"non-detection as absence. What would decide it: {'; '.join(decide)}"), pw


def _is_num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _span_int(v: list[int]) -> str:
    return f"{min(v)}" if min(v) == max(v) else f"{min(v)}–{max(v)}"


def forced_balance(h: Mapping) -> Optional[dict]:
    """What a value forced by shape is made of (issue 37): the balance of the NONZERO eigenvalues
    n_pos / (n_pos + n_neg), with the counts of positive, negative and (round-off) zero
    eigenvalues per layer (``eigen_counts`` of the record), instead of a number such as 0.5001
    (n_pos / inner: the forced third plus the signs of round-off zeros) that reads like "locked at
    0.500". Returns ``{"balance", "n_pos", "n_neg", "n_zero" (per layer), "layers", "text"}``, or
    ``{"balance", "text"}`` from the project's form alone (no counts recorded), or None."""
    c = h.get("eigen_counts") if isinstance(h.get("eigen_counts"), Mapping) else {}
    pos, neg, zero = (list(c.get(k) or []) for k in ("n_pos", "n_neg", "n_zero"))
    if pos and len(pos) == len(neg) == len(zero) and all(p + n > 0 for p, n in zip(pos, neg)):
        bal = [p / (p + n) for p, n in zip(pos, neg)]
        b = sum(bal) / len(bal)
        every = "in every one of" if min(bal) == max(bal) else "averaged over"
        return {"balance": b, "n_pos": pos, "n_neg": neg, "n_zero": zero, "layers": len(pos),
                "text": (f"the balance of the nonzero eigenvalues n_pos / (n_pos + n_neg) is {b:.4g} {every} "
                         f"{len(pos)} layers ({_span_int(pos)} positive, {_span_int(neg)} negative, "
                         f"{_span_int(zero)} zero per layer)")}
    p = h.get("project") if isinstance(h.get("project"), Mapping) else {}
    if _is_num(p.get("value")):
        return {"balance": float(p["value"]),
                "text": f"the balance of the nonzero eigenvalues n_pos / (n_pos + n_neg) is {p['value']:.4g} "
                        "(no per-layer counts recorded)"}
    return None


def _fold_nulls(c: Claim, form: Form, rule: Rule, verdict: str, reason: str, value: float, lo, hi, exact: bool,
                nulls: Mapping[str, dict], fmt: Optional[str]) -> tuple[str, str, str]:
    """(verdict, reason, null sentence) once the nulls are folded in: every null that bears on the
    claim (the claims file's) and every null the record lists beside the value, by the same
    rule — a null shown beside a reading that satisfies its rule makes it at most "held, but the
    null gives it too" (a modulator that does nothing must not pass)."""
    if verdict != HELD:
        return verdict, reason, ""
    iv = (value, value) if exact or lo is None else (lo, hi)
    bearing = [display_null(n) for n in (c.nulls if form.nulls is None else form.nulls)]
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


def quantization_verdict(rule: Rule, verdict: str, reason: str, h: Mapping, deq: str, c: Claim) -> tuple[str, str]:
    """The verdict of a value measured on dequantized weights (issue 37): Q4_1 moves each weight by at
    most half its block's step, so a record may carry ``quantization_bound`` ``{"lo", "hi"}``: the
    range the unquantized value can lie in, from the stored scales (e.g. for the fraction |w| < 0.1:
    the value ± the fraction of weights within half a step of 0.1). When the rule says the same at
    both ends of that range, the bound cannot flip the verdict and it is kept; otherwise, or with no
    bound recorded, it is "undecided (quantization)"."""
    b = h.get("quantization_bound") if isinstance(h.get("quantization_bound"), Mapping) else {}
    lo, hi = b.get("lo"), b.get("hi")
    if _is_num(lo) and _is_num(hi) and lo <= hi:
        ends = {rule.judge(x, exact=True)[0] for x in (lo, hi)}
        inside = rule.inside(lo) == rule.inside(hi) and not (rule.lo is not None and lo < rule.lo < hi) \
            and not (rule.hi is not None and lo < rule.hi < hi)
        rng = f"[{_num(lo, c.scale, c.unit)}, {_num(hi, c.scale, c.unit)}]"
        if len(ends) == 1 and inside and (verdict == NOT_HELD) == (ends == {NOT_HELD}):
            return verdict, (f"{reason}; measured on dequantized weights ({deq}), but the unquantized value lies in "
                             f"{rng} (each weight moved at most half a step), where the rule says the same: the "
                             "quantization cannot flip it")
        return UNDECIDED, (f"undecided (quantization): measured on dequantized weights ({deq}), and the unquantized "
                           f"value can lie anywhere in {rng}, across an edge of the rule; the rule alone would say "
                           f"'{verdict}': {reason}. What would decide it: the unquantized weights")
    return UNDECIDED, (f"undecided (quantization): measured on dequantized weights ({deq}), and the quantization step "
                       f"could decide this rule ({c.quantization}); no bound of its effect was recorded "
                       f"(quantization_bound); the rule alone would say '{verdict}': {reason}. What would decide it: "
                       "the bound from the stored scales, or the unquantized weights")


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
        # CV again; issue 37): shown, never a second verdict
        row.update({"measured": _show(h, c.scale, c.unit), "value": value, "lo": lo, "hi": hi,
                    "kind": kind_of(h.get("interval")), "verdict": NOT_TESTED,
                    "reason": f"not tested: {h['repeats']}; the same number is not a second verdict"})
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
    if deq is not None and c.quantization and verdict in VERDICTS:
        verdict, reason = quantization_verdict(rule, verdict, reason, h, deq, c)
    rows = h.get("rows") if isinstance(h.get("rows"), Mapping) else {}
    if isinstance(rows.get("text"), str) and rows["text"]:  # which rows of the table the value used (issue 37)
        reason += f"; on {rows['text']}"
    if ref is not None and lo is not None and not exact and isinstance(value, (int, float)):
        reason += (f"; the interval {'contains' if lo <= ref <= hi else 'excludes'} the seed's "
                   f"{_num(ref, c.scale, c.unit)}")
    row.update({
        "seed value": _num(ref, c.scale, c.unit) if ref is not None else c.seed_value,
        "measured": _show(h, c.scale, c.unit), "value": value, "lo": lo, "hi": hi,
        "kind": kind_of(h.get("interval")),
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
    """What a model is, in one line (issue 36 §5: a stand-in's verdict says what the stand-in is: "a
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
    for nb in required_jobs(claims):
        for model, data in _read_jobs(Path(root), nb).items():
            if not trained(model, data) and model not in out:
                out.append(model)
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


def standin_reading(form: Form) -> str:
    """What a stand-in's ``standin_record`` reads instead of the claim's quantity (issue 37: the
    "cross-attention QK balance" row was read on encoders' self-attention, and said nothing)."""
    kind = form.standin_record.split("_")[1]  # qk_self_balance -> "self"
    return (f"a stand-in reading of {kind}-attention (the model has no {form.record.split('_')[1]}-attention; "
            f"metrics.claims.{form.standin_record})")


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
            for model, data in jobs.items():
                seed_model = model in form.models
                if seed_models_only and not seed_model:
                    continue
                if not seed_model and not trained(model, data):
                    continue  # a tiny random model is a pipeline check (pipeline_checks), never a stand-in
                job = f"{form.notebook}/{model}"
                rec, standin = _records(c, form, data, seed_model)
                where = "/".join(form.path) if form.path else f"claims.{form.record}"
                if not rec:
                    if seed_model:
                        rows.append(_base(c, fi, form, model, job, True, reason=(
                            f"{job} recorded no metrics.{where} (the quantity does not apply to this model, or the "
                            "job predates this record)")))
                    continue
                want = form.scopes_for(model)
                scopes = [s for s in rec if want is None or standin or s in want]
                if not scopes and seed_model:
                    rows.append(_base(c, fi, form, model, job, True, reason=(
                        f"no {' / '.join(want or ())} scope in {job} metrics.{where} (recorded: {', '.join(rec)})")))
                for scope in scopes:
                    if isinstance(rec[scope], Mapping):
                        rows.append(_row(c, fi, form, model, job, scope, rec[scope], seed_model, jobs[model]))
                        if standin:  # the claim's own quantity is absent: a different attention is read
                            rows[-1]["stand-in reading"] = standin_reading(form)
                            rows[-1]["reason"] = f"{rows[-1]['stand-in reading']}; {rows[-1]['reason']}"
            for m in form.models:
                if m not in jobs:
                    rows.append(_base(c, fi, form, m, f"{form.notebook}/{m}", True,
                                      reason=f"no finished {form.notebook} job for {m} in this profile"))
    return rows


def _tested_reason(tested: list[dict], untested: list[dict]) -> str:
    models = sorted({r["model"] for r in tested})
    out = f"{len(tested)} tested scope(s) of {len(models)} model(s) ({', '.join(models)})"
    if untested:
        out += "; not tested: " + "; ".join(f"{r['model']}: {r['reason']}" for r in untested[:3])
    return out


def summarize(rows: Iterable[dict], claims: Union[str, Path, ClaimSet, None] = None) -> list[dict]:
    """One row per (claim, reading): the verdict over the reading's own models, and the stand-ins.

    not held: any tested scope is not held. undecided: any is undecided, or some of the
    reading's models were not tested while the rest held (the reason names the jobs that
    would decide). held, but the null gives it too: every tested scope held, at least one
    only because a null gives it too. held: every model tested, every scope held. not tested
    on this profile: none of its models was tested. forced by shape: every tested value is.
    """
    rows = list(rows)
    cs = load(claims)
    out = []
    for c in cs.claims:
        for fi, form in enumerate(c.forms):
            mine = [r for r in rows if r["claim"] == c.id and r["form"] == fi]
            seed = [r for r in mine if r["seed model"]]
            tested = [r for r in seed if r["verdict"] in VERDICTS]
            forced = [r for r in seed if r["verdict"] == FORCED]
            untested = [r for r in seed if r["verdict"] == NOT_TESTED]
            if not tested:
                if forced:
                    verdict, reason = FORCED, "; ".join(f"{r['model']} {r['scope']}: {r['reason']}" for r in forced[:3])
                else:
                    verdict = NOT_TESTED
                    by_nb: dict[str, list[str]] = {}
                    for r in seed:
                        nb, _, m = r["job"].partition("/")
                        by_nb.setdefault(nb, []).append(m)
                    recorded_not = [r["reason"] for r in seed if not r["reason"].startswith("no finished")]
                    reason = ("needs " + "; ".join(f"{nb} on {', '.join(sorted(set(ms)))}" for nb, ms in by_nb.items())
                              + (f" ({recorded_not[0]})" if recorded_not else "")) if by_nb else "no model recorded"
            elif any(r["verdict"] == NOT_HELD for r in tested):
                verdict = NOT_HELD
                reason = "; ".join(f"{r['model']} {r['scope']}: {r['reason']}"
                                   for r in [r for r in tested if r["verdict"] == NOT_HELD][:3])
            elif any(r["verdict"] == UNDECIDED for r in tested) or untested:
                verdict = UNDECIDED
                und = [r for r in tested if r["verdict"] == UNDECIDED]
                reason = "; ".join(f"{r['model']} {r['scope']}: {r['reason']}" for r in und[:3])
                if untested:
                    ok = ", ".join(f"{r['model']}{' ' + r['scope'] if r['scope'] else ''}: {r['verdict']}"
                                   for r in tested if r["verdict"] != UNDECIDED)
                    reason = "; ".join(filter(None, [reason, ok, "what would decide it: " + "; ".join(
                        f"{r['model']}: {r['reason']}" for r in untested[:3])]))
            elif any(r["verdict"] == HELD_NULL for r in tested):
                verdict = HELD_NULL
                reason = (_tested_reason(tested, []) + "; "
                          + next(r["reason"] for r in tested if r["verdict"] == HELD_NULL))
            else:
                verdict, reason = HELD, "held on " + _tested_reason(tested, [])
            if forced and verdict != FORCED:
                reason += "; kept out (forced by shape): " + ", ".join(f"{r['model']} {r['scope']}" for r in forced)
            extra = [m for m in form.models if m in form.extrapolated]
            if extra:
                reason += ("; extrapolations (the seed never measured them so): "
                           + "; ".join(f"{m}: {form.extrapolated[m]}" for m in extra))
            stand = [r for r in mine if not r["seed model"] and r["verdict"] != NOT_TESTED]
            tally = ", ".join(f"{r['model']}{' ' + r['scope'] if r['scope'] not in ('', 'embedding') else ''}: "
                              f"{r['verdict']}" for r in stand)
            ex = sorted((r for r in mine if r["null explains"]), key=lambda r: not r["seed model"])
            explains = f"{ex[0]['model']} {ex[0]['scope']}: {ex[0]['null explains']}".replace("  ", " ") if ex else ""
            out.append({"claim": c.id, "title": c.title, "form": fi, "reading": form.name, "by": form.by,
                        "extrapolated": sorted(form.extrapolated), "measured as": form.measured_as, "seed value": c.seed_value,
                        "seed models": c.seed_models_text, "verdict": verdict, "reason": reason,
                        "stand-ins": tally or "–", "null explains": explains, "definition": c.definition,
                        "stand-in verdicts": {m: sorted({r["verdict"] for r in stand if r["model"] == m})
                                              for m in dict.fromkeys(r["model"] for r in stand)},
                        "rule": form.rule.text, "note": form.note})
    return out


def readings(summary: list[dict]) -> list[dict]:
    """One row per claim with each reading's verdict side by side: "as the table says" beside
    "as the seed measured" (and the project's own reading where the file adds one), each labelled
    by whose reading it is; ``over the readings``: the verdict they share, or
    ``"undecided (reading): ..."`` when defensible readings of the seed's words disagree (a
    reading of the words then decides the verdict, and the page says so)."""
    out: dict[str, dict] = {}
    tested: dict[str, list[tuple[str, str]]] = {}
    stand: dict[str, dict[str, dict[str, str]]] = {}  # claim -> stand-in -> reading -> its verdicts
    for s in summary:
        for m, vs in (s.get("stand-in verdicts") or {}).items():
            stand.setdefault(s["claim"], {}).setdefault(m, {})[s["reading"]] = " / ".join(vs)
        r = out.setdefault(s["claim"], {"claim": s["claim"], "title": s["title"], "seed value": s["seed value"],
                                        "as the table says": [], "as the seed measured": [],
                                        "the project's own reading": [], "over the readings": ""})
        name = s["reading"]
        cols = (["as the table says", "as the seed measured"] if name.startswith("as the table says = ") else
                ["as the table says"] if name.startswith("as the table says") else
                ["as the seed measured"] if name.startswith("as the seed measured") else
                ["the project's own reading"])
        label = name.partition(" (")[2].rstrip(")")
        by = s.get("by") or "seed"
        whose = "" if (by == "project") == (cols == ["the project's own reading"]) else f"[{by}'s] "
        for col in cols:
            r[col].append(f"{s['verdict']}" + (f" ({whose}{label})" if label or whose else ""))
        if s["verdict"] in VERDICTS:
            tested.setdefault(s["claim"], []).append((name, s["verdict"]))
    for cid, r in out.items():
        got = tested.get(cid, [])
        verdicts = list(dict.fromkeys(v for _, v in got))
        if not got:
            r["over the readings"] = "–"
        elif len(verdicts) == 1:
            r["over the readings"] = verdicts[0]
        else:
            r["over the readings"] = (f"{READING_DISAGREES}: " + "; ".join(f"{n}: {v}" for n, v in got))
        split = {m: by for m, by in stand.get(cid, {}).items() if len(by) > 1 and len(set(by.values())) > 1}
        if split:  # a stand-in whose verdict turns on the reading (MiniLM's cross-layer poolings)
            r["over the readings"] += "; stand-ins: " + "; ".join(
                f"{m}: {READING_DISAGREES} (" + "; ".join(f"{n}: {v}" for n, v in by.items()) + ")"
                for m, by in split.items())
    return [{k: ("; ".join(v) or "–") if isinstance(v, list) else v for k, v in r.items()} for r in out.values()]


def required_jobs(claims: Union[str, Path, ClaimSet, None] = None) -> dict[str, list[str]]:
    """notebook -> the models a profile must run it on to test every reading of every claim."""
    need: dict[str, list[str]] = {}
    for c in load(claims).claims:
        for f in c.forms:
            lst = need.setdefault(f.notebook, [])
            lst += [m for m in f.models if m not in lst]
    return need


def missing_jobs(profile_jobs: Iterable[tuple[str, Optional[str]]],
                 claims: Union[str, Path, ClaimSet, None] = None) -> list[str]:
    """``notebook/model`` pairs :func:`required_jobs` lists that ``profile_jobs`` (pairs of
    notebook and model) lacks."""
    have = {(nb, m) for nb, m in profile_jobs}
    return [f"{nb}/{m}" for nb, ms in required_jobs(claims).items() for m in ms if (nb, m) not in have]
