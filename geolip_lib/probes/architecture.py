"""Architecture-level probes: parameter census, weight tying, input vs output embedding,
relative-position-bias tables, vision embedding tables (from the family spec)."""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .. import metrics as M
from .. import validation as V
from ..families import spec
from ..metrics.position_bias import table_stats


def parameter_census(model: torch.nn.Module, depth: int = 2) -> dict:
    """Parameter counts grouped by the first ``depth`` components of their names.

    Parameters
    ----------
    model : torch.nn.Module
    depth : int
        ``2`` groups ``encoder.block.3.layer...`` under ``encoder.block`` (the seed's choice).

    Returns
    -------
    dict
        ``components`` ({prefix: count}, largest first), ``total`` (unique parameters:
        tied tensors count once, as in ``model.parameters()``), ``n_tensors``.
        ``sum(components.values()) == total``.
    """
    V.check_positive_int(depth, "depth")
    comps: dict[str, int] = {}
    n = 0
    for name, p in model.named_parameters():  # de-duplicates tied parameters
        key = ".".join(name.split(".")[:depth])
        comps[key] = comps.get(key, 0) + p.numel()
        n += 1
    total = sum(p.numel() for p in model.parameters())
    ordered = dict(sorted(comps.items(), key=lambda kv: (-kv[1], kv[0])))
    return {"components": ordered, "total": int(total), "n_tensors": n}


def weight_tying(model: torch.nn.Module, reference: torch.Tensor | None = None) -> dict:
    """Which parameters share storage with, or equal, the input embedding.

    Parameters
    ----------
    model : torch.nn.Module
        A Hugging Face model (``get_input_embeddings`` / ``get_output_embeddings``), or any
        module when ``reference`` is given.
    reference : torch.Tensor, optional
        The input-embedding parameter to compare against (default: the model's).

    Returns
    -------
    dict
        ``shared_names``: every parameter name aliasing the reference storage (T5:
        ``shared``, ``encoder.embed_tokens``, ``decoder.embed_tokens``, ``lm_head`` when
        tied); ``output_tied`` (bool or None when there is no output embedding);
        ``output_equal`` (allclose even if stored separately).
    """
    if reference is None:
        get = getattr(model, "get_input_embeddings", None)
        try:
            emb = get() if callable(get) else None
        except NotImplementedError:  # a dual-tower model (HF CLIP / SigLIP) names no single input embedding
            emb = None
        reference = getattr(emb, "weight", None)
        if not isinstance(reference, torch.Tensor):
            return {"applicable": False, "reason": "model has no token-embedding matrix"}
    ptr = reference.data_ptr()
    names = [n for n, p in model.named_parameters(remove_duplicate=False)
             if p.data_ptr() == ptr and p.shape == reference.shape]
    out_tied = out_equal = None
    get_out = getattr(model, "get_output_embeddings", None)
    out = get_out() if callable(get_out) else None
    if out is not None and getattr(out, "weight", None) is not None:
        w = out.weight
        out_tied = bool(w.data_ptr() == ptr)
        out_equal = bool(w.shape == reference.shape
                         and torch.allclose(w.detach().float(), reference.detach().float()))
    return {"applicable": True, "shared_names": names, "output_tied": out_tied,
            "output_equal": out_equal}


#: :func:`embed_vs_output` of tables up to this many values each reads whole float64 copies (as always); above,
#: ``EVO_ROWS`` rows at a time (152k x 1536: the whole-table form made ~7 GB of float64 temporaries)
EVO_WHOLE_MAX = 1 << 26
EVO_ROWS = 4096


def _tables(E: Any, O: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """``E`` and ``O`` checked as ``_common._matrix`` checks them, in their own floating dtype (no copy yet)."""
    a = V.as_tensor(E, "E", ndim=2, min_shape={0: 1, 1: 1})
    b = V.as_tensor(O, "O", ndim=2, min_shape={0: 1, 1: 1})
    return a, b


def embed_vs_output(E: Any, O: Any, *, return_data: bool = False) -> dict | tuple[dict, np.ndarray]:
    """Input embedding vs output (unembedding) matrix of the same vocabulary (untied models).

    Returns
    -------
    dict
        ``per_token_cosine`` {mean, std, min, max, ...}, ``frobenius`` {embed, output,
        difference, relative}.
    cosines : ndarray, shape (V,)
        Per-token cosines, only with ``return_data=True``.
    """
    a, b = _tables(E, O)
    if a.shape != b.shape:
        V.fail("O", f"expected the input-embedding shape {tuple(a.shape)}, got {tuple(b.shape)}")
    if a.numel() <= EVO_WHOLE_MAX:
        a, b = a.to(torch.float64), b.to(torch.float64)
        cos = torch.nn.functional.cosine_similarity(a, b, dim=1, eps=1e-8).numpy()
        fe, fo, fd = float(a.norm()), float(b.norm()), float((a - b).norm())
    else:  # EVO_ROWS rows at a time in float64: the same per-token cosines, the norms' sums to round-off
        cos, sq = np.empty(a.shape[0]), np.zeros(3)
        for i in range(0, a.shape[0], EVO_ROWS):
            x, y = a[i:i + EVO_ROWS].to(torch.float64), b[i:i + EVO_ROWS].to(torch.float64)
            cos[i:i + EVO_ROWS] = torch.nn.functional.cosine_similarity(x, y, dim=1, eps=1e-8).numpy()
            sq += [float((x * x).sum()), float((y * y).sum()), float(((x - y) ** 2).sum())]
        fe, fo, fd = (float(v) for v in np.sqrt(sq))
    st = M.distribution_stats(cos)
    st.pop("n")
    out = {"per_token_cosine": st,
           "frobenius": {"embed": fe, "output": fo, "difference": fd, "relative": fd / fe if fe else float("nan")}}
    return (out, cos) if return_data else out


def relative_position_bias(model: torch.nn.Module, *, return_data: bool = False) -> dict | tuple[dict, dict]:
    """Per-head statistics of every relative-position-bias table (T5: one per stack).

    Returns
    -------
    dict
        ``applicable``; ``tables`` {module name: {shape [buckets, heads], mean, std, min,
        max, per_head: [{mean, std, min, max}]}}.
    weights : dict, only with ``return_data=True``
        ``{name: (buckets, heads) ndarray}`` (empty when not applicable).
    """
    tables, weights = {}, {}
    for name, mod in model.named_modules():
        emb = getattr(mod, "relative_attention_bias", None)
        if isinstance(emb, torch.nn.Embedding):
            w = emb.weight.detach().to(torch.float64).cpu().numpy()
            key = f"{name}.relative_attention_bias"
            tables[key] = table_stats(w)  # metrics/position_bias.py: the one home of these statistics
            weights[key] = w
    if not tables:
        out = {"applicable": False, "reason": "no relative position bias (absolute or rotary positions)"}
    else:
        out = {"applicable": True, "tables": tables}
    return (out, weights) if return_data else out


def vision_embedding_tables(lm: Any) -> dict:
    """The embedding tables of a vision tower, as 2-D matrices (rows = vectors).

    DINOv2: ``position`` (1 + patches, D) and ``patch`` filters (D, 3·p·p); open_clip:
    the vision tower's ``position`` (1 + patches, width) and ``patch`` (conv1) filters.
    Empty dict for text-only models.
    """
    fn = spec(lm.family).vision_tables
    out = fn(lm.model) if fn is not None else {}
    return {k: v.detach().to("cpu", torch.float32) for k, v in out.items()}
