"""Notebook 02's random-init null at the cost of about one model.

The full null (:func:`battery_null_full`, kept as the reference) runs the whole battery on 5
random-init twins: 5 models' worth of generation, SVDs and QK problems. At initialisation the
layers are i.i.d., so :func:`battery_null` runs it on a sample of each twin's layers instead:
per init seed, layer 0 (where T5's relative position bias and the layer-0 QK form live) and
``m − 1`` further layers drawn without replacement (``m = max(2, ceil(L / seeds))``, so that
the seeds together see about ``L`` layers: one model), generated tensor by tensor
(:class:`geolip_lib.models.twin.RandomInitStore`: nothing else of the twin is built). Tensors
outside the layers (embeddings, final norms) are measured for the first seed only (its tables
and figures show them). Each headline's null is then the prediction interval of one whole model
from those samples (:func:`geolip_lib.metrics.sampled_null.null_over_sampled_seeds`, with the
fraction of the model's layers or layer pairs each seed saw), returned as a
:class:`~geolip_lib.metrics.sampled_null.SampledNull` that the tables read as they read the
full null's list of summaries.

Seeds ``1 …`` are read from / written to the null cache (:mod:`geolip_lib.nullcache`), keyed by
the architecture, the init seeds, the layers sampled and the thresholds; seed 0 is always
computed (its battery result feeds the tables and figures).
"""
from __future__ import annotations

import dataclasses
import json
import math
import warnings
from typing import Any, Optional, Sequence

import numpy as np

from .. import nullcache
from ..metrics.intervals import N_NULL_SEEDS
from ..metrics.sampled_null import SampledNull
from ..devices import pick_device
from ..families import catalog
from ..results import to_jsonable
from .battery import run_battery
from .battery.sparsity import THRESHOLDS
from .tables.by_stack import stack_items

__all__ = ["battery_null", "battery_null_full", "sample_layers", "layer_count", "model_layers", "twin", "twin_device_key",
           "BatteryNull"]


@dataclasses.dataclass
class BatteryNull:
    """The random-init null of notebook 02.

    seeds : SampledNull (or list, for the full reference) of per-seed battery summaries.
    stack_seeds : per seed, :func:`~geolip_lib.weights.tables.stack_items` of that twin.
    first : the first seed's :class:`~geolip_lib.weights.BatteryResult` (tables and figures).
    drivers : what the null cost (seeds, layers sampled) for ``metrics.json`` and the plan.
    """

    seeds: list
    stack_seeds: list
    first: Any
    drivers: dict

    @property
    def first_summary(self) -> Optional[dict]:
        """The first seed's summary as computed (no JSON round trip), for the tables; None without a null."""
        return None if self.first is None else _summary(self.first)


def layer_count(cat) -> int:
    """Layers of the deepest stack of a catalog (0 when no tensor has a layer)."""
    layers = [e.layer for e in cat.entries if e.layer is not None]
    return max(layers) + 1 if layers else 0


def sample_layers(n_layers: int, n_seeds: int, seed: int, per_seed: Optional[int] = None) -> list[list[int]]:
    """Per init seed, the layers its battery measures: layer 0 and ``m − 1`` more drawn without
    replacement (``default_rng([seed, 31, k])``), ``m = per_seed`` or ``max(2, ceil(L / n_seeds))``,
    at most ``L``. Every layer when ``m ≥ L``."""
    if n_layers < 0 or n_seeds < 0:
        raise ValueError(f"n_layers, n_seeds: expected ≥ 0, got {n_layers}, {n_seeds}")
    m = per_seed if per_seed is not None else max(2, math.ceil(n_layers / max(n_seeds, 1)))
    if m < 1:
        raise ValueError(f"per_seed: expected ≥ 1 layer per seed, got {per_seed}")
    m = min(m, n_layers)
    out = []
    for k in range(n_seeds):
        rest = np.random.default_rng([int(seed), 31, k]).choice(np.arange(1, n_layers), m - 1, replace=False) \
            if m > 1 else []
        out.append(sorted([0, *map(int, rest)]) if n_layers else [])
    return out


def twin(lm: Any, init_seed: int, max_params: Optional[int] = None, *, generated: bool = True, device: Any = None):
    """``(store, catalog)`` of a random-init twin. ``generated``: tensor by tensor (only the
    tensors a caller reads are ever built: a sample of the layers) where the family's catalog
    reads the model's own tensor names; else, and for families whose checkpoints are stored in
    a canonical layout the model does not use (GPT-2's Conv1D, fused experts:
    ``models.loading.checkpoint_state``), the twin of ``lm.random_init_weights`` (whole in memory
    up to ``max_params`` parameters, as notebook 02 and 06 built it before the null was sampled).

    ``device`` (default "auto": CUDA when available): where a generated twin's tensors are drawn
    (:class:`geolip_lib.models.twin.RandomInitStore`), so that on a GPU they are made there,
    not on the host and moved; on the CPU the values are those of before. The in-memory twin
    is built where ``lm`` is (``lm.random_init``)."""
    kw = {} if max_params is None else {"max_params": max_params}
    with warnings.catch_warnings():  # the twin has the trained model's architecture: its catalog's
        warnings.simplefilter("ignore")  # notices (unclassified tensors) were shown once, for the trained weights
        if generated:
            store = lm.random_init_weights(seed=init_seed, max_params=0)
            if hasattr(store, "device") and hasattr(store, "generate"):  # a generated twin: drawn on the device
                store.device = pick_device(device)
            try:
                return store, catalog(store, config=lm.config, family=lm.family)
            except ValueError:
                pass
        store = lm.random_init_weights(seed=init_seed, **kw)
        if hasattr(store, "device") and hasattr(store, "generate"):
            store.device = pick_device(device)
        return store, catalog(store, config=lm.config, family=lm.family)


def model_layers(lm: Any) -> int:
    """Layers of ``lm``'s deepest stack, from its catalog (names and shapes only)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # shown once by the notebook for the trained weights
        return layer_count(catalog(lm, config=lm.config, family=lm.family))


def _restrict(cat, layers: Sequence[int], keep_rest: bool):
    keep = set(layers)
    return dataclasses.replace(cat, entries=[e for e in cat.entries
                                             if (e.layer in keep) or (e.layer is None and keep_rest)])


def _init_seed(seed: int, k: int) -> int:
    return int(seed) + 1000 + k  # notebook 02's init seeds (SEED + 1000 + k), as before


def _summary(r) -> dict:
    s = r.summary()
    s.pop("seconds", None)  # wall times are not deterministic; not recorded
    return s


def battery_null(lm: Any, n_seeds: int = N_NULL_SEEDS, *, seed: int = 0, layers_per_seed: Optional[int] = None,
                 device: Any = None, thresholds: Sequence[float] = THRESHOLDS, cache: bool = True,
                 max_params: Optional[int] = None) -> BatteryNull:
    """The random-init null of ``lm``'s architecture from a sample of each seed's layers
    (module docstring). ``n_seeds`` 0 gives an empty null (``first`` None). ``max_params``:
    the in-memory twin's limit where a generated twin cannot be catalogued (:func:`twin`)."""
    if n_seeds < 1:
        return BatteryNull(SampledNull(), [], None, {})
    L = model_layers(lm)
    picks = sample_layers(L, n_seeds, seed, layers_per_seed)
    m = len(picks[0])
    sampled = m < L  # generated tensor by tensor only where layers are left out (else the whole twin, as before)
    drivers = {"method": "sampled layers" if m < L else "every layer", "seeds": n_seeds,
               "init_seeds": [_init_seed(seed, k) for k in range(n_seeds)], "layers_in_model": L,
               "layers_per_seed": m, "layers_sampled": picks,
               "model_equivalents": round(n_seeds * m / L, 3) if L else float(n_seeds)}

    def one(k: int):
        store, cat = twin(lm, _init_seed(seed, k), max_params, generated=sampled, device=device)
        r = run_battery(store, cat=_restrict(cat, picks[k], keep_rest=k == 0), device=device, thresholds=thresholds)
        return r, {"summary": _summary(r), "stack_items": stack_items(r)}

    first, rec0 = one(0)
    rec0 = _json(rec0)

    def rest():
        return [one(k)[1] for k in range(1, n_seeds)]

    key = {**_key(lm, None, thresholds, device, seed, None), "picks": picks, **twin_device_key(device)}
    recs = [rec0] + (nullcache.cached("battery_null", key, rest, expect_len=n_seeds - 1, note=drivers)[0] if cache and n_seeds > 1 else _json(rest()))
    f = {"layers": m / L if L else 1.0, "pairs": (m - 1) / (L - 1) if L > 1 and m > 1 else 1.0, "first": 1.0}
    return BatteryNull(SampledNull([r["summary"] for r in recs], fractions=f, drivers=drivers),
                       [r["stack_items"] for r in recs], first, drivers)


def twin_device_key(device: Any) -> dict:
    """The null cache's key entry for where generated twins are drawn: none on the CPU (the keys
    and values of before), ``{"twin_device": "cuda"}`` elsewhere (another random stream)."""
    dev = pick_device(device)
    return {} if dev.type == "cpu" else {"twin_device": dev.type}


def _json(value):
    """The JSON form a cache hit returns (so that hit and miss give the same values)."""
    return json.loads(json.dumps(to_jsonable(value), allow_nan=False))


def _key(lm, picks, thresholds, device, seed, k) -> dict:
    cfg = lm.config.to_dict() if hasattr(lm.config, "to_dict") else lm.config
    return {"family": lm.family, "config": cfg, "dtype": str(lm.dtype), "seed": int(seed), "k": k,
            "picks": picks, "thresholds": list(map(float, thresholds)), "device": str(device)}


def battery_null_full(lm: Any, n_seeds: int = N_NULL_SEEDS, *, seed: int = 0, max_params: Optional[int] = None,
                      device: Any = None, thresholds: Sequence[float] = THRESHOLDS) -> BatteryNull:
    """The reference: the whole battery on ``n_seeds`` whole random-init twins (init seeds
    ``seed + 1000 + k``), as notebook 02 computed its null before it was sampled. Slow (``n_seeds``
    models); kept for the equivalence test and ``benchmarks/nulls.py``."""
    kw = {} if max_params is None else {"max_params": max_params}
    seeds, stacks, first = [], [], None
    for k in range(n_seeds):
        twin = lm.random_init_weights(seed=_init_seed(seed, k), **kw)
        r = run_battery(twin, config=lm.config, family=lm.family, device=device, thresholds=thresholds)
        del twin
        seeds.append(_summary(r))
        stacks.append(stack_items(r))
        first = r if k == 0 else first
    L = model_layers(lm) if n_seeds else 0
    drivers = {"method": "whole models", "seeds": n_seeds, "init_seeds": [_init_seed(seed, k) for k in range(n_seeds)],
               "layers_in_model": L, "layers_per_seed": L, "model_equivalents": float(n_seeds)}
    return BatteryNull(seeds, stacks, first, drivers)
