"""The adapter of family ``any`` (a transformers model no family knows): every tensor, no attention semantics.

Roles, layers and stacks are guessed from names as the generic fallback does (``generic.py``:
``q_proj``/``query``/``fc1``/``down_proj``/``layers.N``...), so the battery's matrix-level
analyses (spectra by role, sparsity, norms, cross-layer correlation by module name) run over
every 2-D weight, as WeightWatcher does; but no entry carries head counts, so the catalog has no
attention blocks and the attention-specific sections (QK manifold, QK operators) are skipped,
each saying which adapter would enable them (:func:`missing_adapter`). The one warning lists
the 2-D tensors whose role could not be guessed (they still count in sparsity and norms).
"""
from __future__ import annotations

from dataclasses import replace

from . import generic


def adapt(tensors, config) -> list:
    """Generic name guesses without head layout (see the module docstring)."""
    out = []
    for e in generic.adapt(tensors, {}):  # no head count: no attention block can form
        out.append(replace(e, attn=None, n_heads=None, head_dim=None, n_kv_heads=None))
    return out


def missing_adapter(model_type: str | None, section: str) -> str:
    """One line: ``section`` is skipped for ``model_type`` and which adapter would enable it."""
    mt = model_type or "this model"
    return (f"{section} skipped: no family knows the attention of model_type {mt!r} (family 'any' reads its "
            f"matrices only); a spec geolip_lib/families/<family>.py with an adapter models/adapters/<family>.py "
            f"for {mt!r} would enable it (geolip_lib/README.md, 'Adding a model family').")
