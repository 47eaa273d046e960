"""Canonical weight catalog: one adapter per architecture family, dispatched by a dict.

An adapter maps every tensor name of a checkpoint to a :class:`Entry` with a canonical
*role*; the catalog is built from tensor names and shapes only (safetensors headers,
no tensor data is read), so it costs nothing even for an 11B model.

API
---
::

    from geolip_lib.models.adapters import catalog
    from geolip_lib.weights import TensorStore

    cat = catalog(weights_dir)            # or catalog(lm) for a LoadedModel,
                                          # or catalog(state_dict, config=cfg, family="bert")
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

Dispatch: :func:`family_for` maps the config's ``model_type`` (or open_clip's config
keys) to a family through :data:`MODEL_TYPE_FAMILY`; :data:`ADAPTERS` maps the family to
its adapter function ``adapt(tensors, config) -> list[Entry]``. An unknown family falls
back to :mod:`.generic`, which warns; every adapter warns (``UnclassifiedWeightsWarning``)
listing each 2-D tensor it could not classify (role ``other``) — never a silent skip.
"""
from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional

ROLES = ("q", "k", "v", "o", "qkv", "mlp_in", "mlp_gate", "mlp_out", "embed", "unembed",
         "norm", "pos_bias", "bias", "other")
STACKS = ("encoder", "decoder", "vision", "text")
ATTN_ROLES = ("q", "k", "v", "o")
MLP_ROLES = ("mlp_in", "mlp_gate", "mlp_out")
MATRIX_ROLES = ATTN_ROLES + MLP_ROLES


class UnclassifiedWeightsWarning(UserWarning):
    """Some 2-D tensors could not be given a role (they are listed in the message)."""


@dataclass(frozen=True)
class TensorInfo:
    """Name-level facts about one stored tensor (from a safetensors header)."""

    shape: tuple
    dtype: str = "float32"


@dataclass(frozen=True)
class Entry:
    """One catalog entry (see the module docstring for the fields)."""

    name: str
    role: str
    stack: Optional[str] = None
    attn: Optional[str] = None
    layer: Optional[int] = None
    shape: tuple = ()
    dtype: str = "float32"
    n_heads: Optional[int] = None
    head_dim: Optional[int] = None
    n_kv_heads: Optional[int] = None
    row_slice: Optional[tuple] = None
    parent: Optional[str] = None
    of: Optional[str] = None
    head_stride: Optional[int] = None
    note: Optional[str] = None

    @property
    def is_view(self) -> bool:
        return self.row_slice is not None

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= int(s)
        return n

    @property
    def key(self) -> str:
        """Unique key: the name, plus the row slice for views."""
        return self.name if self.row_slice is None else f"{self.name}[{self.row_slice[0]}:{self.row_slice[1]}]"


@dataclass
class AttentionBlock:
    """Q/K/V/O entries of one attention block (see the module docstring)."""

    stack: Optional[str]
    attn: str
    layer: Optional[int]
    q: Optional[Entry]
    k: Optional[Entry]
    v: Optional[Entry]
    o: Optional[Entry]
    n_heads: int
    head_dim: int
    n_kv_heads: int
    d_model: int
    scale: float
    biases: dict = field(default_factory=dict)
    qk_norm: dict = field(default_factory=dict)

    @property
    def group(self) -> int:
        """Query heads per kv head (1 without grouped-query attention)."""
        return self.n_heads // self.n_kv_heads

    def kv_head(self, h: int) -> int:
        """Index of the kv head that query head ``h`` reads (GQA: ``h // group``)."""
        if not 0 <= h < self.n_heads:
            raise ValueError(f"h: expected 0 <= h < {self.n_heads}, got {h}")
        return h // self.group

    def q_rows(self, h: int) -> slice:
        """Rows of the clean query matrix (``weight(store, "q")``) of query head ``h``."""
        if not 0 <= h < self.n_heads:
            raise ValueError(f"h: expected 0 <= h < {self.n_heads}, got {h}")
        return slice(h * self.head_dim, (h + 1) * self.head_dim)

    def weight(self, store, role: str, dtype=None):
        """The clean weight of ``role`` in q/k/v/o: (heads*head_dim, d_model), or (d_model, heads*head_dim) for o.

        Applies the entry's row slice (fused QKV) and drops interleaved rows
        (``head_stride``), so ``weight(store, "q")[q_rows(h)]`` is query head ``h``.
        """
        e = {"q": self.q, "k": self.k, "v": self.v, "o": self.o}[role]
        if e is None:
            raise ValueError(f"role: this {self.stack}/{self.attn} block of layer {self.layer} has no {role!r} weight")
        return clean_weight(store, e, dtype)

    def k_rows(self, h: int) -> slice:
        """Rows of the key (and value) weight read by query head ``h``."""
        g = self.kv_head(h)
        return slice(g * self.head_dim, (g + 1) * self.head_dim)

    v_rows = k_rows


@dataclass
class MLPBlock:
    """MLP entries of one layer: ``up`` (mlp_in), optional ``gate``, ``down`` (mlp_out)."""

    stack: Optional[str]
    layer: Optional[int]
    up: Optional[Entry]
    gate: Optional[Entry]
    down: Optional[Entry]


@dataclass
class Catalog:
    """All entries of one checkpoint plus family, config and model dimension."""

    entries: list
    family: str
    config: dict = field(default_factory=dict)
    d_model: Optional[int] = None
    source: Optional[str] = None

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)

    def stored(self) -> list:
        """Entries that are stored tensors (no views), each tensor exactly once."""
        return [e for e in self.entries if not e.is_view]

    def select(self, role=None, stack=None, attn=None, layer=None, views=True) -> list:
        """Entries matching every given field (``role`` may be a tuple of roles)."""
        roles = (role,) if isinstance(role, str) else role
        out = []
        for e in self.entries:
            if roles is not None and e.role not in roles:
                continue
            if stack is not None and e.stack != stack:
                continue
            if attn is not None and e.attn != attn:
                continue
            if layer is not None and e.layer != layer:
                continue
            if not views and e.is_view:
                continue
            out.append(e)
        return sorted(out, key=_order)

    def matrices(self) -> list:
        """2-D attention and MLP matrices (q/k/v/o views included, fused parents not)."""
        return [e for e in self.select(role=MATRIX_ROLES) if len(e.shape) == 2]

    def stacks(self) -> list:
        return sorted({e.stack for e in self.entries if e.stack}, key=lambda s: STACKS.index(s) if s in STACKS else 9)

    def unclassified(self) -> list:
        return [e for e in self.entries if e.role == "other" and len(e.shape) == 2 and not e.note
                and "float" in str(e.dtype)]

    def attention_blocks(self) -> list:
        """One :class:`AttentionBlock` per (stack, attn, layer), sorted."""
        groups: dict = {}
        for e in self.entries:
            if e.role in ATTN_ROLES and len(e.shape) == 2:
                groups.setdefault((e.stack, e.attn, e.layer), {})[e.role] = e
        biases: dict = {}
        for e in self.entries:
            if e.role == "bias" and e.of in ATTN_ROLES:
                biases.setdefault((e.stack, e.attn, e.layer), {})[e.of] = e
        qk_norm: dict = {}
        for e in self.entries:
            if e.role == "norm" and e.of in ("q", "k") and e.attn is not None:
                qk_norm.setdefault((e.stack, e.attn, e.layer), {})[e.of] = e
        blocks = []
        for key in sorted(groups, key=lambda k: (_stack_rank(k[0]), k[1] or "", -1 if k[2] is None else k[2])):
            g = groups[key]
            ref = g.get("q") or g.get("k")
            if ref is None or ref.n_heads is None:
                continue
            d_model = (g["q"].shape[1] if "q" in g else g["k"].shape[1])
            scale = _attn_scale(self.family, self.config, ref.head_dim)
            blocks.append(AttentionBlock(
                stack=key[0], attn=key[1], layer=key[2], q=g.get("q"), k=g.get("k"), v=g.get("v"),
                o=g.get("o"), n_heads=ref.n_heads, head_dim=ref.head_dim,
                n_kv_heads=ref.n_kv_heads or ref.n_heads, d_model=d_model, scale=scale,
                biases=biases.get(key, {}), qk_norm=qk_norm.get(key, {})))
        return blocks

    def mlp_blocks(self) -> list:
        """One :class:`MLPBlock` per (stack, layer) that has MLP weights, sorted."""
        groups: dict = {}
        for e in self.entries:
            if e.role in MLP_ROLES and len(e.shape) == 2:
                groups.setdefault((e.stack, e.layer), {})[e.role] = e
        return [MLPBlock(stack=k[0], layer=k[1], up=g.get("mlp_in"), gate=g.get("mlp_gate"),
                         down=g.get("mlp_out"))
                for k, g in sorted(groups.items(), key=lambda kv: (_stack_rank(kv[0][0]), -1 if kv[0][1] is None else kv[0][1]))]

    def to_frame(self):
        """The catalog as a pandas DataFrame (one row per entry)."""
        import pandas as pd

        return pd.DataFrame([{
            "name": e.name, "role": e.role, "stack": e.stack, "attn": e.attn, "layer": e.layer,
            "shape": tuple(e.shape), "dtype": e.dtype, "n_heads": e.n_heads, "head_dim": e.head_dim,
            "n_kv_heads": e.n_kv_heads, "row_slice": e.row_slice, "numel": e.numel} for e in self.entries])

    def summary(self):
        """Counts and parameter totals per (stack, attn, role) (DataFrame)."""
        df = self.to_frame()
        if df.empty:
            return df
        df = df.fillna({"stack": "-", "attn": "-"})
        return (df.groupby(["stack", "attn", "role"], dropna=False)
                .agg(n=("name", "size"), params=("numel", "sum"),
                     shapes=("shape", lambda s: sorted({str(x) for x in s})))
                .reset_index())


def clean_weight(store, e: Entry, dtype=None):
    """Read entry ``e`` from ``store`` and drop interleaved rows (``head_stride``): the matrix of its role."""
    import torch

    return strip_interleaved(e, store.get(e, dtype=dtype or torch.float32))


def strip_interleaved(e: Entry, W):
    """Drop the rows between heads (``head_stride``) from the data ``W`` of entry ``e``."""
    if e.head_stride and e.head_stride != e.head_dim and W.ndim == 2:
        n = W.shape[0] // e.head_stride
        W = W.reshape(n, e.head_stride, -1)[:, : e.head_dim].reshape(n * e.head_dim, -1)
    return W


def _attn_scale(family: str, cfg: dict, head_dim: int) -> float:
    """Scale applied to q·k before the softmax (T5 uses none; Gemma its own scalar)."""
    if family in ("t5", "t5_v1_1"):
        return 1.0
    if isinstance(cfg.get("query_pre_attn_scalar"), (int, float)):
        return float(cfg["query_pre_attn_scalar"]) ** -0.5
    return float(head_dim) ** -0.5


def _stack_rank(s) -> int:
    return STACKS.index(s) if s in STACKS else (-1 if s is None else 9)


def _order(e: Entry):
    return (_stack_rank(e.stack), e.attn or "", -1 if e.layer is None else e.layer, e.role, e.name,
            e.row_slice or (0, 0))


# ---------------------------------------------------------------------------- dispatch
def _adapters() -> dict:
    from . import bert, decoder_lm, dinov2, generic, open_clip, t5

    return {
        "t5": t5.adapt,
        "t5_v1_1": t5.adapt,
        "bert": bert.adapt,
        "dinov2": dinov2.adapt,
        "open_clip": open_clip.adapt,
        "decoder_lm": decoder_lm.adapt,
        "generic": generic.adapt,
    }


#: ``config.model_type`` -> family.
MODEL_TYPE_FAMILY = {
    "t5": "t5", "mt5": "t5", "umt5": "t5",
    "bert": "bert", "roberta": "bert", "xlm-roberta": "bert", "electra": "bert",
    "dinov2": "dinov2", "vit": "dinov2", "dinov2_with_registers": "dinov2",
    "open_clip": "open_clip",
    "llama": "decoder_lm", "mistral": "decoder_lm", "qwen2": "decoder_lm", "qwen3": "decoder_lm",
    "qwen3_5": "decoder_lm", "qwen3_5_text": "decoder_lm", "qwen3_next": "decoder_lm",
    "gemma": "decoder_lm", "gemma2": "decoder_lm", "phi3": "decoder_lm", "olmo2": "decoder_lm",
}


def family_for(config: Mapping | None) -> str:
    """The adapter family of a config (``"generic"`` when unknown)."""
    if not config:
        return "generic"
    if "vision_cfg" in config or "text_cfg" in config:
        return "open_clip"
    mt = str(config.get("model_type", "")).lower()
    fam = MODEL_TYPE_FAMILY.get(mt, "generic")
    if fam == "t5" and str(config.get("feed_forward_proj", "relu")).startswith("gated"):
        return "t5_v1_1"
    return fam


def config_to_dict(config: Any) -> dict:
    """A HF config object, a dict, or None -> plain dict."""
    if config is None:
        return {}
    if isinstance(config, Mapping):
        return dict(config)
    if hasattr(config, "to_dict"):
        return config.to_dict()
    raise ValueError(f"config: expected a dict or a HF config, got {type(config).__name__}")


def _read_config(path: Path) -> dict:
    for fname in ("config.json", "open_clip_config.json"):
        p = path / fname
        if p.exists():
            with open(p, encoding="utf-8") as fh:
                cfg = json.load(fh)
            if fname == "open_clip_config.json":
                cfg = cfg.get("model_cfg", cfg)
                cfg.setdefault("model_type", "open_clip")
            return cfg
    return {}


def catalog(source: Any, config: Any = None, family: str | None = None) -> Catalog:
    """Build the canonical catalog of a checkpoint (names and shapes only).

    Parameters
    ----------
    source : path | LoadedModel | TensorStore | Mapping[str, Tensor]
        A directory (or file) of ``*.safetensors``, a loaded model (``weights_dir`` and
        ``config`` are used), an open :class:`geolip_lib.weights.TensorStore`, or an
        in-memory state dict (e.g. of a random-init null model).
    config : dict or HF config, optional
        Model config; read from ``config.json`` next to the weights when omitted.
    family : str, optional
        Force a family (a key of the adapter dict); inferred from the config otherwise.

    Returns
    -------
    Catalog
    """
    from ...weights.store import TensorStore

    cfg = config_to_dict(config)
    fam = family
    if isinstance(source, TensorStore):
        store = source
    elif hasattr(source, "weights_dir") and hasattr(source, "config"):  # LoadedModel
        if not cfg:
            cfg = config_to_dict(source.config)
        fam = fam or getattr(source, "family", None)
        store = TensorStore(source)
    else:
        store = TensorStore(source)
    if not cfg and store.root is not None:
        cfg = _read_config(store.root if store.root.is_dir() else store.root.parent)
    if "model_cfg" in cfg and isinstance(cfg["model_cfg"], Mapping):  # open_clip as saved by models.load
        cfg = {**cfg["model_cfg"], "model_type": "open_clip"}
    adapters = _adapters()
    fam = fam or family_for(cfg)
    if fam not in adapters:
        raise ValueError(f"family: unknown family {fam!r} (known: {', '.join(adapters)})")
    infos = store.infos()
    entries = adapters[fam](infos, cfg)
    if fam == "generic":
        warnings.warn(f"no adapter for model_type={cfg.get('model_type')!r}: using the generic "
                      "name-pattern catalog (heads and stacks are guesses)", UnclassifiedWeightsWarning,
                      stacklevel=2)
    other = sorted(e.name for e in entries if e.role == "other" and len(e.shape) == 2 and not e.note
                   and "float" in str(e.dtype))
    if other:
        warnings.warn(f"{fam} adapter could not classify {len(other)} 2-D tensor(s): "
                      + ", ".join(other), UnclassifiedWeightsWarning, stacklevel=2)
    d_model = _d_model(cfg, entries)
    return Catalog(entries=sorted(entries, key=_order), family=fam, config=cfg, d_model=d_model,
                   source=str(store.root) if store.root is not None else None)


def _d_model(cfg: dict, entries: list) -> Optional[int]:
    for key in ("d_model", "hidden_size", "width"):
        if isinstance(cfg.get(key), int):
            return cfg[key]
    for e in entries:
        if e.role == "q" and len(e.shape) == 2:
            return int(e.shape[1])
    return None


# ---------------------------------------------------------------------------- helpers for adapters
def attn_entry(name: str, info: TensorInfo, role: str, *, stack, attn, layer, n_heads, head_dim,
               n_kv_heads=None, expect_in=None, head_stride=None) -> Entry:
    """Build an attention entry and assert its shape against the head counts."""
    shape = tuple(info.shape)
    kv = n_kv_heads or n_heads
    if len(shape) == 2:
        rows = {"q": n_heads * (head_stride or head_dim), "k": kv * head_dim, "v": kv * head_dim}.get(role)
        if role == "o":
            _check(shape[1] == n_heads * head_dim, name, shape, f"(d_model, {n_heads}*{head_dim})")
            if expect_in is not None:
                _check(shape[0] == expect_in, name, shape, f"({expect_in}, ...)")
        elif rows is not None:
            _check(shape[0] == rows, name, shape, f"({rows}, d_model) for {role}")
            if expect_in is not None:
                _check(shape[1] == expect_in, name, shape, f"(..., {expect_in})")
    return Entry(name=name, role=role, stack=stack, attn=attn, layer=layer, shape=shape, dtype=info.dtype,
                 n_heads=n_heads, head_dim=head_dim, n_kv_heads=kv,
                 head_stride=head_stride if role == "q" else None)


def split_fused(entry: Entry, parts=("q", "k", "v")) -> list:
    """Views ``q``/``k``/``v`` of a fused (3·D, D) entry, each with its row slice."""
    rows = entry.shape[0]
    _check(rows % len(parts) == 0, entry.name, entry.shape, f"rows divisible by {len(parts)}")
    n = rows // len(parts)
    return [replace(entry, role=p, shape=(n,) + tuple(entry.shape[1:]), row_slice=(i * n, (i + 1) * n),
                    parent=entry.name) for i, p in enumerate(parts)]


def _check(ok: bool, name: str, shape, expected: str) -> None:
    if not ok:
        raise ValueError(f"weights: tensor {name!r} has shape {tuple(shape)}, expected {expected} "
                         "(config and checkpoint disagree; pass the right config or family)")


def get_int(cfg: Mapping, *keys, default=None):
    """First integer found under ``keys`` in ``cfg`` (or nested ``text_config``)."""
    for src in (cfg, cfg.get("text_config") or {}):
        for k in keys:
            v = src.get(k) if isinstance(src, Mapping) else None
            if isinstance(v, int) and not isinstance(v, bool):
                return v
    return default


AdapterFn = Callable[[Mapping[str, TensorInfo], dict], list]

__all__ = ["ROLES", "STACKS", "Entry", "TensorInfo", "AttentionBlock", "MLPBlock", "Catalog", "catalog",
           "family_for", "MODEL_TYPE_FAMILY", "UnclassifiedWeightsWarning", "attn_entry", "split_fused"]
