"""Measure the per-head QK operators of one attention stack (seed 004's missing measure step).

:func:`measure_layers` works on plain tensors (one ``W_Q`` and ``W_K`` per layer);
:func:`measure_model` walks a model's weight catalog and measures every attention group
(``encoder.self``, ``decoder.self``, ``decoder.cross``, ``vision.self``...).

Results are saved as ``<prefix>.json`` (metadata, ``fro_sq`` and ``gram`` as lists, the
seed's file format) plus ``<prefix>.safetensors`` (``gram``, ``fro_sq``, ``sym_eigs``,
``eig_dirs``) — never pickle.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import torch
from safetensors.torch import load_file, save as st_save
from tqdm.auto import tqdm

from ..results import atomic_write_bytes, atomic_write_text
from ..validation import check_positive_int, fail
from .factored import layer_gram, operator_fro_sq, stack_layers, sym_eig

__all__ = ["QKOperators", "measure_layers", "save", "load"]

FORMAT_VERSION = 1


@dataclass
class QKOperators:
    """Measured QK operators of one attention group (layers × heads).

    Attributes
    ----------
    group : str
        e.g. ``"decoder.self"``, ``"decoder.cross"``, ``"encoder.self"``.
    layers : list of int
        Layer indices of the rows (model numbering).
    n_heads, n_kv_heads, head_dim, hidden : int
    fro_sq : torch.Tensor, shape (n_layers, n_heads)
        ``‖g_L^h‖_F²``.
    gram : torch.Tensor, shape (n_layers, n_layers, n_heads)
        ``⟨g_L^h, g_L'^h⟩_F``; its diagonal equals ``fro_sq``.
    sym_eigs : torch.Tensor, shape (n_layers, n_heads, 2 * head_dim)
        Eigenvalues of ``(g + gᵀ)/2`` sorted by decreasing magnitude.
    eig_dirs : torch.Tensor, shape (n_layers, n_heads, top_k, hidden)
        Unit eigenvectors of the top-k eigenvalues (by magnitude).
    meta : dict
        Free-form provenance (model name, random_init, dtype...).
    """

    group: str
    layers: list[int]
    n_heads: int
    n_kv_heads: int
    head_dim: int
    hidden: int
    fro_sq: torch.Tensor
    gram: torch.Tensor
    sym_eigs: torch.Tensor
    eig_dirs: torch.Tensor
    meta: dict = field(default_factory=dict)

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    @property
    def top_k(self) -> int:
        return int(self.eig_dirs.shape[2])

    def to_json_dict(self) -> dict:
        """The JSON part (the seed's ``grams.json`` keys plus ours)."""
        return {
            "format": "geolip.qk_operators", "version": FORMAT_VERSION,
            "group": self.group, "layers": list(self.layers),
            "num_layers": self.n_layers, "num_heads": self.n_heads,
            "num_kv_heads": self.n_kv_heads, "head_dim": self.head_dim,
            "hidden_size": self.hidden, "top_k": self.top_k,
            "fro_sq": self.fro_sq.tolist(), "gram": self.gram.tolist(), "meta": self.meta,
        }


def measure_layers(W_Qs: Sequence | torch.Tensor, W_Ks: Sequence | torch.Tensor, n_heads: int,
                   n_kv_heads: int | None = None, *, top_k: int = 8, layers: Sequence[int] | None = None,
                   group: str = "self", meta: dict | None = None, progress: bool = False, device: Any = None,
                   chunk_bytes: int | None = None) -> QKOperators:
    """Measure norms, layer-pair gram, symmetric eigenvalues and top-k eigen-directions.

    Parameters
    ----------
    W_Qs : sequence of (n_heads * head_dim, hidden) arrays, or one (n_layers, ., hidden) array
    W_Ks : sequence of (n_kv_heads * head_dim, hidden) arrays, or one (n_layers, ., hidden) array
    n_heads, n_kv_heads : int
        Query and key/value heads (GQA: query head h reads kv head h // (n_heads // n_kv_heads)).
    top_k : int
        Eigen-directions kept per layer and head (by eigenvalue magnitude).
    layers : sequence of int, optional
        Model layer indices of the rows (default ``0..n_layers-1``).
    group : str
        Name of the attention group.
    meta : dict, optional
        Provenance stored with the result.
    progress : bool
        tqdm bars.
    device : torch device, optional
        Where the computation runs (default: where ``W_Qs`` is). The result's tensors are
        returned on the CPU (the record the tables, figures and :func:`save` read).
    chunk_bytes : int, optional
        Bound on the float64 bytes of one batched eigenproblem call: the symmetric-part
        eigenproblems of several layers (all their heads) are solved in one batched call.
        Default: 1 GiB off the CPU; on the CPU one layer per call (batching layers there was
        measured no faster: ``benchmarks/qk_operators.py``). The results are the same.

    Returns
    -------
    QKOperators
    """
    Wq = W_Qs if isinstance(W_Qs, torch.Tensor) and W_Qs.ndim == 3 else stack_layers(W_Qs, "W_Qs")
    Wk = W_Ks if isinstance(W_Ks, torch.Tensor) and W_Ks.ndim == 3 else stack_layers(W_Ks, "W_Ks")
    n_heads = check_positive_int(n_heads, "n_heads")
    n_kv_heads = n_heads if n_kv_heads is None else check_positive_int(n_kv_heads, "n_kv_heads")
    n_layers = Wq.shape[0]
    layers = list(range(n_layers)) if layers is None else [int(x) for x in layers]
    if len(layers) != n_layers:
        fail("layers", f"expected {n_layers} layer indices, got {len(layers)}")
    if device is not None:
        Wq, Wk = Wq.to(device), Wk.to(device)
    head_dim = Wq.shape[1] // n_heads
    hidden = int(Wq.shape[-1])
    gram = layer_gram(Wq, Wk, n_heads, n_kv_heads, progress=progress).cpu()
    fro_sq = operator_fro_sq(Wq, Wk, n_heads, n_kv_heads).cpu()
    eig_list, dir_list = [], []
    # several layers per batched call (all their heads): float64 factors, the balanced factor
    # N (n_heads, 2·head_dim, hidden) and the (2·head_dim)² problems of one layer, per layer
    per_layer = 8 * hidden * head_dim * (n_heads + n_kv_heads + 2 * n_heads) + 8 * n_heads * (2 * head_dim) ** 2 * 4
    if chunk_bytes is None:
        chunk_bytes = 0 if Wq.device.type == "cpu" else 1 << 30
    step = max(1, min(n_layers, int(chunk_bytes // max(1, per_layer))))
    it = range(0, n_layers, step)
    if progress:
        it = tqdm(it, desc=f"sym eig ({group})", unit=f"{step} layers")
    for a in it:
        ev, U = sym_eig(Wq[a:a + step], Wk[a:a + step], n_heads, n_kv_heads, top_k=top_k)
        eig_list.append(ev.cpu())
        dir_list.append(U.to(device="cpu", dtype=torch.float32) if U is not None
                        else torch.zeros(ev.shape[0], n_heads, 0, hidden, dtype=torch.float32))
    return QKOperators(group=group, layers=layers, n_heads=n_heads, n_kv_heads=n_kv_heads,
                       head_dim=head_dim, hidden=hidden, fro_sq=fro_sq, gram=gram,
                       sym_eigs=torch.cat(eig_list), eig_dirs=torch.cat(dir_list), meta=dict(meta or {}))


def save(ops: QKOperators, prefix: str | os.PathLike) -> tuple[Path, Path]:
    """Write ``<prefix>.json`` and ``<prefix>.safetensors`` (atomically).

    Returns
    -------
    (json_path, safetensors_path)
    """
    prefix = Path(prefix)
    js, st = prefix.with_name(prefix.name + ".json"), prefix.with_name(prefix.name + ".safetensors")
    tensors = {"gram": ops.gram.contiguous(), "fro_sq": ops.fro_sq.contiguous(),
               "sym_eigs": ops.sym_eigs.contiguous(), "eig_dirs": ops.eig_dirs.contiguous()}
    atomic_write_bytes(st, st_save(tensors, metadata={"format": "geolip.qk_operators"}))
    d = ops.to_json_dict()
    d["tensors_path"] = st.name
    atomic_write_text(js, json.dumps(d) + "\n")
    return js, st


def load(path: str | os.PathLike) -> QKOperators:
    """Read what :func:`save` wrote (give the ``.json`` path or the prefix)."""
    path = Path(path)
    js = path if path.suffix == ".json" else path.with_name(path.name + ".json")
    if not js.exists():
        fail("path", f"no {js} (expected the .json written by operators.save)")
    with open(js, encoding="utf-8") as fh:
        d = json.load(fh)
    if d.get("format") != "geolip.qk_operators":
        fail("path", f"{js} is not a geolip.qk_operators file")
    t = load_file(str(js.with_name(d["tensors_path"])))
    return QKOperators(group=d["group"], layers=d["layers"], n_heads=d["num_heads"],
                       n_kv_heads=d["num_kv_heads"], head_dim=d["head_dim"], hidden=d["hidden_size"],
                       fro_sq=t["fro_sq"], gram=t["gram"], sym_eigs=t["sym_eigs"],
                       eig_dirs=t["eig_dirs"], meta=d.get("meta", {}))
