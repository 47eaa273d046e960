"""What a stored checkpoint is, by name and shape: the weight catalog's data model, its rule tables, the tensor store.

An adapter maps every tensor name of a checkpoint to a :class:`Entry` with a canonical
*role*; the catalog is built from tensor names and shapes only (safetensors headers,
no tensor data is read), so it costs nothing even for an 11B model.

API
---
::

    from geolip_lib.families import catalog
    from geolip_lib.checkpoints import TensorStore

    cat = catalog(weights_dir)            # or catalog(lm) for a LoadedModel,
                                          # or catalog(state_dict, config=cfg, family=lm.family)
    store = TensorStore(weights_dir)      # or TensorStore(lm) / TensorStore(state_dict)

    for blk in cat.attention_blocks():    # one per (stack, attn, layer), sorted
        blk.stack, blk.attn, blk.layer    # "encoder"|"decoder"|"vision"|"text", "self"|"cross", int
        blk.n_heads, blk.head_dim, blk.n_kv_heads, blk.d_model, blk.scale
        Wq = store.get(blk.q)             # (n_heads*head_dim, d_model) float32; row_slice applied
        Wk = store.get(blk.k)             # (n_kv_heads*head_dim, d_model)
        Wv = store.get(blk.v)             # (n_kv_heads*head_dim, d_model)
        Wo = store.get(blk.o)             # (d_model, n_heads*head_dim)
        Wq[blk.q_rows(h)]                 # (head_dim, d_model) rows of query head h
        Wk[blk.k_rows(h)]                 # rows of the kv head that query head h reads:
                                          #   blk.kv_head(h) == h // (n_heads // n_kv_heads)
        blk.biases                        # {"q": Entry, "k": Entry, ...} for 1-D biases (may be empty)

    # score(x_i, x_j) for head h (before softmax, before position terms) is
    #   blk.scale * x_i @ Wq[q_rows(h)].T @ Wk[k_rows(h)] @ x_j  (+ bias terms)
    # where x is the attention's input (after the pre-norm for pre-norm models).

Entries (:class:`Entry`, frozen dataclass) carry ``name`` (tensor name in the file),
``role`` (one of :data:`ROLES`), ``stack`` (``encoder``/``decoder``/``vision``/``text``
or ``None`` for model-level tensors such as a shared embedding), ``attn`` (``self``/
``cross``/``None``), ``layer`` (int or ``None``), ``shape`` (of the slice for views),
``dtype`` (storage dtype string), ``n_heads``/``head_dim``/``n_kv_heads`` (attention
entries), ``row_slice`` (``(start, stop)`` rows of the stored tensor for a view into a
fused QKV tensor, else ``None``), ``parent`` (name of the fused entry a view comes from)
``of`` (for 1-D biases and per-head q/k norms: the role of the weight they belong to)
and ``head_stride`` (rows between consecutive heads in the stored tensor when the
projection interleaves other rows, e.g. Qwen3.5's gated query: query head ``h`` is rows
``h*head_stride : h*head_stride+head_dim``; ``None`` means ``head_dim``) and ``note``
(why a tensor the adapter recognises is still role ``other``, e.g. "task head" or
"linear attention"; such tensors are not reported as unclassified).

Use ``blk.weight(store, "q")`` to get the clean (n_heads*head_dim, d_model) matrix of a
role whatever the storage (row slice of a fused tensor, interleaved gate rows).
``blk.qk_norm`` is non-empty when q and k are RMS-normalised per head before the
product (Qwen3): then the bilinear form W_Qᵀ W_K describes the scores only up to that
per-token normalisation.

A fused QKV tensor (open_clip ``in_proj_weight`` of shape (3D, D)) appears once with
role ``qkv`` and three times as views with roles ``q``/``k``/``v`` and row slices
``(0, D)``, ``(D, 2D)``, ``(2D, 3D)``; whole-model sums use :meth:`Catalog.stored`
(entries that are not views) so nothing is counted twice.

Layout (one file per family, imports one way): this package (layer 1) knows no
family. :mod:`.schema` is the data model (roles, :class:`Entry`, :class:`Catalog`, helpers for
building entries), :mod:`.rules` the ``(regex, role, stack, attn)`` tables most families are
written in, :mod:`.guess` the name guesses for a model no family knows, :mod:`.store`
:class:`TensorStore`. A family's name rules live in its one file, ``geolip_lib/families/<family>.py``
(``adapt(tensors, config) -> list[Entry]``, next to its :class:`~geolip_lib.families.FamilySpec`);
:func:`geolip_lib.families.catalog` picks the family (the caller's, ``catalog(lm)``: ``lm.family``,
or the registry's reading of the config) and builds the :class:`Catalog`. A config no family
knows falls back to :func:`.guess.adapt`, which warns; every catalog warns
(``UnclassifiedWeightsWarning``) listing each 2-D tensor it could not classify (role ``other``
without a note) — never a silent skip. This file only re-exports.
"""
from __future__ import annotations

from .rules import STACK_ALIASES, Heads, Rule, build, fused_views, need, rules
from .schema import (ATTN_ROLES, MATRIX_ROLES, MIXER_NOTE, MLP_ROLES, ROLES, STACKS, AdapterFn, AttentionBlock,
                     Catalog, Entry, MLPBlock, NotAnalysedWarning, TensorInfo, UnclassifiedWeightsWarning, attn_entry,
                     clean_weight, get_int, split_fused, strip_interleaved)
from .store import TensorStore

__all__ = ["ATTN_ROLES", "MATRIX_ROLES", "MIXER_NOTE", "MLP_ROLES", "ROLES", "STACKS", "STACK_ALIASES", "AdapterFn",
           "AttentionBlock", "Catalog", "Entry", "Heads", "MLPBlock", "NotAnalysedWarning", "Rule", "TensorInfo",
           "TensorStore", "UnclassifiedWeightsWarning", "attn_entry", "build", "clean_weight", "fused_views", "get_int",
           "need", "rules", "split_fused", "strip_interleaved"]
