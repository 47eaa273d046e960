"""Notebook 01's random-init null: the input-embedding tables of the architecture at random
initialisation, one per init seed, and (encoder-decoder models) a twin to run.

At or below :data:`geolip_lib.models.twin.TWIN_MAX_PARAMS` parameters seed 0 is the whole twin
``lm.random_init()`` (as 01 always built it: its table and its encoder-vs-decoder comparison are
bit-equal to before), the other seeds the table alone (:func:`random_init_table`). Above, no
second whole model is built beside the first (Qwen2.5-Coder-1.5B: 7.1 GB more): every seed's
table is drawn alone by the model's own initialisation (seed 0 too: the same distribution, other
draws than the whole twin's), and the encoder-vs-decoder comparison runs the twin one block at a
time (:func:`geolip_lib.models.layered.random_init_model`). :meth:`RandomInitNull.drivers` says
which (``metrics.json``'s ``random_init_null``).
"""
from __future__ import annotations

from typing import Any, Optional

import torch

from ..models import layered, twin as twins

__all__ = ["RandomInitNull", "random_init_table", "random_init_tables", "random_init_tables_full",
           "random_init_drivers"]


def random_init_table(lm: Any, seed: int) -> torch.Tensor:
    """The input-embedding table of ``lm``'s architecture at random init with init seed ``seed``
    (float32, CPU), generated alone: the table is drawn by the model's own initialisation on the
    twin's meta skeleton (:class:`geolip_lib.models.twin.RandomInitStore`), nothing else of the
    model is built. Where the family's table is not one stored tensor of the skeleton (DINOv2: a
    row of the position embeddings) or a skeleton cannot be built, the whole twin's
    (``lm.random_init(seed)``)."""
    try:
        store = lm.random_init_weights(seed=seed, max_params=0)
        name = store.name_of(lm.spec.input_embeddings(store.skeleton)) if hasattr(store, "name_of") else None
    except (ValueError, RuntimeError, AttributeError, TypeError):
        name = None
    if name is None:
        return lm.random_init(seed=seed).input_embeddings()
    return store.get(name, dtype=torch.float32).cpu()  # drawn where the model is (a GPU's stream), read on the host


def random_init_tables(lm: Any, twin: Any = None):
    """``init_table(k)`` for :func:`geolip_lib.probes.uncertainty.null_distributions`: the
    input-embedding table of ``lm``'s architecture at random init with init seed
    ``lm.params.seed + 1 + k`` (``k = 0`` is ``twin``, the notebook's ``lm.random_init()``, reused
    rather than built again; ``k ≥ 1`` the table alone, :func:`random_init_table`). Returns
    ``None`` when ``twin`` is ``None`` (no random-init null)."""
    if twin is None:
        return None
    first = twin.input_embeddings()

    def init_table(k: int):
        return first if k == 0 else random_init_table(lm, lm.params.seed + 1 + k)

    return init_table


def random_init_drivers(lm: Any, n_seeds: int, *, whole: bool = True) -> dict:
    """What notebook 01's random-init null cost, for ``metrics.json`` and the plan: the init
    seeds, and whether seed 0 is the whole twin (``whole``: at or below ``TWIN_MAX_PARAMS``) or,
    as the other seeds, the input-embedding table alone (:func:`random_init_table`)."""
    n = int(n_seeds)
    method = ("seed 0: whole twin; seeds 1…: the input-embedding table alone" if whole else
              f"every seed: the input-embedding table alone (above {twins.TWIN_MAX_PARAMS:.0e} parameters no whole "
              "twin is built; an encoder-decoder twin runs one block at a time)")
    return {"method": method, "seeds": n, "init_seeds": [lm.params.seed + 1 + k for k in range(n)],
            "tables_only": max(n - 1, 0) if whole else n}


def random_init_tables_full(lm: Any, twin: Any = None):
    """The reference of :func:`random_init_tables`: every seed's table from a whole random-init
    model ``lm.random_init(seed)``. Kept for the equivalence test."""
    if twin is None:
        return None
    first = twin.input_embeddings()

    def init_table(k: int):
        return first if k == 0 else lm.random_init(seed=lm.params.seed + 1 + k).input_embeddings()

    return init_table


class RandomInitNull:
    """Notebook 01's random-init null of ``lm`` (see the module docstring).

    Attributes
    ----------
    whole : bool
        Seed 0 is the whole twin (at or below ``max_params``, default ``TWIN_MAX_PARAMS``).
    twin : LoadedModel or None
        That whole twin (built here, where 01 built it); ``None`` above the threshold.
    """

    def __init__(self, lm: Any, *, max_params: Optional[int] = None):
        self.lm = lm
        limit = twins.TWIN_MAX_PARAMS if max_params is None else int(max_params)
        self.whole = sum(p.numel() for p in lm.model.parameters()) <= limit
        self.twin = lm.random_init() if self.whole else None
        self._table0 = (self.twin.input_embeddings() if self.whole
                        else random_init_table(lm, lm.params.seed + 1))
        self._tables = random_init_tables(lm, self.twin) if self.whole else None

    @property
    def table0(self) -> torch.Tensor:
        """Seed 0's table (above the threshold drawn again after :meth:`release`: the same values)."""
        if self._table0 is None:
            self._table0 = random_init_table(self.lm, self.lm.params.seed + 1)
        return self._table0

    def release(self) -> None:
        """Above the threshold, drop seed 0's table (0.9 GB on Qwen2.5-Coder-1.5B) once it is read;
        :attr:`table0` draws it again if asked (seeded per tensor: the same values). At or below,
        the twin's table stays (the twin holds it)."""
        if not self.whole:
            self._table0 = None

    def table(self, k: int) -> torch.Tensor:
        """``init_table(k)`` for ``null_distributions`` (above the threshold seed 0 is :attr:`table0` itself)."""
        if self._tables is not None:
            return self._tables(k)
        return self.table0 if k == 0 else random_init_table(self.lm, self.lm.params.seed + 1 + k)

    def model(self):
        """A twin to run (seed 0): the whole one, or above the threshold one run block by block."""
        return self.twin if self.whole else layered.random_init_model(self.lm, self.lm.params.seed + 1, max_params=0)

    def drivers(self, n_seeds: int) -> dict:
        """:func:`random_init_drivers` of this null."""
        return random_init_drivers(self.lm, n_seeds, whole=self.whole)
