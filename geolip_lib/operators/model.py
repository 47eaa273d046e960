"""Measure every attention group of a model through the canonical weight catalog.

A *group* is one (stack, attention kind) of a model: ``decoder.self`` for a decoder LM,
``encoder.self`` for BERT / MiniLM, ``encoder.self`` + ``decoder.self`` + ``decoder.cross``
for T5, ``vision.self`` for a ViT, ``vision.self`` + ``text.self`` for CLIP. Layers of a
group are analysed against each other (they share hidden size and head layout). Layers
without a query/key pair (e.g. Qwen3.5's linear-attention layers) are simply not part of
a group.
"""
from __future__ import annotations

import warnings
from typing import Any, Sequence

import torch

from ..devices import pick_device
from ..families import catalog
from ..weights import TensorStore
from .measure import QKOperators, measure_layers

__all__ = ["attention_groups", "measure_model", "measure_null_over_seeds", "load_group_weights"]


def attention_groups(source: Any, config: Any = None, family: str | None = None) -> dict:
    """Attention blocks of a model grouped as ``{"<stack>.<attn>": [AttentionBlock, ...]}``.

    Parameters
    ----------
    source : LoadedModel | weights directory | state dict | TensorStore
        Anything :func:`geolip_lib.models.adapters.catalog` accepts.
    config, family : optional
        Passed to the catalog (needed for a store without a ``config.json`` beside it, such as
        a random-init twin's; a store carrying ``config`` / ``family`` attributes supplies them,
        as :class:`geolip_lib.models.twin.RandomInitStore` does).

    Blocks whose head layout differs from the group's first block go to a separate group
    ``"<stack>.<attn>#<n_heads>x<head_dim>"`` so that every group is homogeneous.
    """
    if config is None:
        config = getattr(source, "config", None)
    if family is None:
        family = getattr(source, "family", None)
    cat = catalog(source, config=config, family=family)
    groups: dict = {}
    layout: dict = {}
    for b in cat.attention_blocks():
        if b.q is None or b.k is None:
            continue
        name = f"{b.stack or 'model'}.{b.attn or 'self'}"
        lay = (b.n_heads, b.n_kv_heads, b.head_dim, b.d_model)
        layout.setdefault(name, lay)
        if lay != layout[name]:
            name = f"{name}#{b.n_heads}x{b.head_dim}"
        groups.setdefault(name, []).append(b)
    return groups


def load_group_weights(store, blocks: Sequence, device: Any = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Stacked clean query and key weights of a group's blocks (on ``device``; default: where
    the store's tensors are).

    Returns
    -------
    W_Qs : torch.Tensor, shape (n_layers, n_heads * head_dim, hidden), float32
    W_Ks : torch.Tensor, shape (n_layers, n_kv_heads * head_dim, hidden), float32
    """
    Wq = torch.stack([b.weight(store, "q").to(device=device, dtype=torch.float32) for b in blocks])
    Wk = torch.stack([b.weight(store, "k").to(device=device, dtype=torch.float32) for b in blocks])
    return Wq, Wk


def measure_model(source: Any, *, top_k: int = 8, groups: Sequence[str] | None = None,
                  meta: dict | None = None, progress: bool = False, config: Any = None,
                  family: str | None = None, positions: dict | None = None, device: Any = None) -> dict:
    """Measure the QK operators of every attention group of a model.

    Parameters
    ----------
    source : LoadedModel | weights directory | state dict | TensorStore
        E.g. ``lm.random_init_weights()`` for the random-init twin (generated tensor by
        tensor above 1B parameters, see :mod:`geolip_lib.models.twin`).
    top_k : int
        Eigen-directions kept per layer and head (capped at 2·head_dim).
    groups : sequence of str, optional
        Only these group names (default: all).
    meta : dict, optional
        Provenance stored in every result (e.g. model name, random_init flag).
    progress : bool
        tqdm bars.
    config, family : optional
        See :func:`attention_groups`.
    positions : dict, optional
        ``{group: [positions of its layers]}``: measure only those layers of a group (the
        random-init null's sampled layers, :mod:`geolip_lib.operators.nulls`).
    device : "auto" | "cpu" | "cuda" | None
        Where the products and eigenproblems run (default: CUDA when available, as
        :func:`geolip_lib.weights.run_battery`); results come back on the CPU.

    Returns
    -------
    dict ``{group name: QKOperators}`` (empty when the model has no query/key weights).
    """
    store = source if isinstance(source, TensorStore) else TensorStore(source)
    dev = pick_device(device)
    all_groups = attention_groups(source, config, family)
    if groups is not None:
        unknown = sorted(set(groups) - set(all_groups))
        if unknown:
            raise ValueError(f"groups: unknown group(s) {unknown}; this model has {sorted(all_groups)}")
    out: dict[str, QKOperators] = {}
    for name, blocks in all_groups.items():
        if groups is not None and name not in groups:
            continue
        if positions is not None and name in positions:
            blocks = [blocks[i] for i in positions[name]]
        b0 = blocks[0]
        Wq, Wk = load_group_weights(store, blocks, dev)
        m = dict(meta or {})
        m.update(stack=b0.stack, attn=b0.attn, scale=b0.scale, qk_norm=sorted(b0.qk_norm),
                 has_bias=sorted(b0.biases))
        if b0.qk_norm:
            warnings.warn(f"{name}: q/k are RMS-normalised per head before the product; the operator "
                          "W_Qᵀ W_K describes the scores only up to that per-token normalisation",
                          stacklevel=2)
        out[name] = measure_layers(Wq, Wk, b0.n_heads, b0.n_kv_heads,
                                   top_k=min(top_k, 2 * b0.head_dim),
                                   layers=[b.layer if b.layer is not None else i for i, b in enumerate(blocks)],
                                   group=name, meta=m, progress=progress)
    return out


def measure_null_over_seeds(lm: Any, n_seeds: int, *, top_k: int = 8, groups: Sequence[str] | None = None,
                            max_params: int | None = None, model: str | None = None) -> list[dict]:
    """The random-init null as a distribution: :func:`measure_model` on ``lm``'s architecture
    at random init, once per init seed ``lm.params.seed + 1 + k`` for ``k < n_seeds``
    (``lm.random_init_weights``, generated tensor by tensor above ``max_params`` parameters).

    Returns one ``{group: QKOperators}`` per seed, in seed order (``[]`` when ``n_seeds`` is 0);
    each result's meta records ``model``, ``variant="random_init"`` and ``init_seed=k``.
    """
    kw = {} if max_params is None else {"max_params": max_params}
    return [measure_model(lm.random_init_weights(seed=lm.params.seed + 1 + k, **kw), config=lm.config,
                          family=lm.family, top_k=top_k, groups=groups,
                          meta={"model": model if model is not None else lm.name, "variant": "random_init",
                                "init_seed": k})
            for k in range(n_seeds)]
