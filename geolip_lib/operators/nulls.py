"""Notebook 06's random-init null at the cost of about two models, not five.

The full null (:func:`~geolip_lib.operators.model.measure_null_over_seeds`, kept as the
reference) measures every layer of 5 random-init twins. Every headline of notebook 06 is a
mean over layer pairs (to the anchor, adjacent) or layers and heads; at initialisation the
layers are i.i.d., so each init seed's mean can be drawn from a sample of the group's layers
(:func:`geolip_lib.weights.nulls.sample_layers`: position 0 and ``m − 1`` more, ``m =
max(2, ceil(L / seeds))``), and the null of one whole model follows from those samples
(:class:`~geolip_lib.metrics.sampled_null.SampledNull`: the prediction interval
``mean ± t·s·sqrt(f + 1/S)`` with ``f`` the fraction of the group's layer pairs or layers a
seed saw). The twins of seeds ``1 …`` are generated tensor by tensor (only their sampled query
and key matrices are ever built, :mod:`geolip_lib.models.twin`).

The first seed's twin is measured whole: its analysis is what the tables and figures show
beside the trained model, layer by layer; its contribution to the distribution is the same
sample of its layers as the other seeds' (:func:`select_layers`, no extra cost), so every seed
enters the interval alike. The sampled seeds' items are read from / written to the null cache
(:mod:`geolip_lib.nullcache`).
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any, Optional, Sequence

from .. import nullcache
from ..metrics.sampled_null import SampledNull
from ..results import to_jsonable
from ..weights.nulls import sample_layers, twin, twin_device_key
from .analyse import headline_samples
from .measure import QKOperators
from .model import measure_model

__all__ = ["OperatorNull", "operator_null", "select_layers", "ITEM_KIND"]

#: what each :func:`~geolip_lib.operators.headline_samples` item averages: layer pairs or layers
ITEM_KIND = {"cos_to_anchor": "pairs", "spec_cos_to_anchor": "pairs", "spec_minus_op": "pairs", "pa_deg": "pairs",
             "cos_adjacent": "pairs", "spec_cos_adjacent": "pairs", "sign_agree": "layers"}


@dataclasses.dataclass
class OperatorNull:
    """first: ``{group: QKOperators}`` of init seed 0, every layer (tables, figures).
    samples: ``{group: SampledNull of per-seed headline_samples}`` (the distribution).
    drivers: what the null cost (seeds, layers sampled per group) for ``metrics.json``."""

    first: dict
    samples: dict
    drivers: dict


def select_layers(ops: QKOperators, positions: Sequence[int]) -> QKOperators:
    """``ops`` restricted to the layers at ``positions`` (rows of every tensor, gram both ways):
    exactly what :func:`~geolip_lib.operators.measure_model` gives on those layers alone."""
    idx = list(positions)
    if not idx or any(not 0 <= i < ops.n_layers for i in idx):
        raise ValueError(f"positions: expected a non-empty list of positions below {ops.n_layers}, got {idx}")
    return dataclasses.replace(ops, layers=[ops.layers[i] for i in idx], fro_sq=ops.fro_sq[idx],
                               gram=ops.gram[idx][:, idx], sym_eigs=ops.sym_eigs[idx], eig_dirs=ops.eig_dirs[idx],
                               meta=dict(ops.meta))


def _samples(ops: QKOperators, k: Optional[int]) -> dict:
    # anchor -1: the last sampled layer (at random init which layer anchors is immaterial)
    return headline_samples(ops, anchor=-1, k=k)


def operator_null(lm: Any, n_seeds: int, *, k: Optional[int] = None, top_k: int = 8,
                  groups: Sequence[str] | None = None, max_params: Optional[int] = None, model: Optional[str] = None,
                  layers_per_seed: Optional[int] = None, cache: bool = True, device: Any = None) -> OperatorNull:
    """The random-init null of notebook 06 (module docstring). Init seeds ``lm.params.seed +
    1 + k`` as before; the layers sampled are drawn with ``lm.params.seed``. ``k``: the top-k
    of the sign-agreement item (``None``: no ``sign_agree``). ``n_seeds`` 0: an empty null.
    ``device`` (default auto): where generated twins are drawn and the operators computed."""
    if n_seeds < 1:
        return OperatorNull({}, {}, {})
    name = model if model is not None else lm.name
    seeds = [lm.params.seed + 1 + j for j in range(n_seeds)]
    meta0 = {"model": name, "variant": "random_init", "init_seed": 0}
    store0, _ = twin(lm, seeds[0], max_params, generated=False, device=device)  # measured whole: what the tables show
    first = measure_model(store0, config=lm.config, family=lm.family, top_k=top_k, groups=groups, meta=meta0,
                          device=device)
    del store0
    picks = {g: sample_layers(o.n_layers, n_seeds, lm.params.seed + 7919 * i, layers_per_seed)
             for i, (g, o) in enumerate(first.items())}
    per_seed = [{g: to_jsonable(_samples(select_layers(o, picks[g][0]), k)) for g, o in first.items()}]
    sampled = any(len(picks[g][0]) < o.n_layers for g, o in first.items())

    def rest():
        out = []
        for j in range(1, n_seeds):
            store, _ = twin(lm, seeds[j], max_params, generated=sampled, device=device)
            ops = measure_model(store, config=lm.config, family=lm.family, top_k=top_k, groups=list(first), device=device,
                                positions={g: picks[g][j] for g in first},
                                meta={"model": name, "variant": "random_init", "init_seed": j})
            out.append({g: _samples(o, k) for g, o in ops.items()})
        return out

    key = {"family": lm.family, "config": lm.config.to_dict() if hasattr(lm.config, "to_dict") else lm.config,
           "dtype": str(lm.dtype), "init_seeds": seeds, "picks": picks, "k": k, "top_k": top_k,
           "groups": sorted(first), **twin_device_key(device)}
    others = (nullcache.cached("operator_null", key, rest, expect_len=n_seeds - 1)[0] if cache
              else json.loads(json.dumps(to_jsonable(rest()), allow_nan=False))) if n_seeds > 1 else []
    per_seed = json.loads(json.dumps(per_seed, allow_nan=False)) + others
    samples, drivers = {}, {"method": "sampled layers", "seeds": n_seeds, "init_seeds": seeds, "groups": {}}
    for g, o in first.items():
        L, m = o.n_layers, len(picks[g][0])
        f = {"layers": m / L, "pairs": (m - 1) / (L - 1) if L > 1 and m > 1 else 1.0}
        samples[g] = SampledNull([s[g] for s in per_seed if g in s], fractions=f)
        drivers["groups"][g] = {"layers_in_group": L, "layers_per_seed": m, "layer_positions_sampled": picks[g]}
    L_all = sum(o.n_layers for o in first.values())
    drivers["model_equivalents"] = round(1 + sum((n_seeds - 1) * len(picks[g][0]) for g in first) / L_all, 3) \
        if L_all else 1.0
    drivers["method"] = "sampled layers" if sampled else "every layer"
    return OperatorNull(first, samples, drivers)

