"""The catalog's data model: roles, :class:`Entry`, :class:`AttentionBlock`, :class:`MLPBlock`,
:class:`Catalog` and the helpers the per-family adapters build entries with.

Layer 1 (checkpoints): imports nothing from ``geolip_lib`` above the bottom layer.
See ``checkpoints/__init__.py`` for the API.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Mapping, Optional

from ..lazy import lazy

pd = lazy("pandas")
torch = lazy("torch")

ROLES = ("q", "k", "v", "o", "qkv", "mlp_in", "mlp_gate", "mlp_out", "embed", "unembed",
         "norm", "pos_bias", "bias", "other")
STACKS = ("encoder", "decoder", "vision", "text")
ATTN_ROLES = ("q", "k", "v", "o")
MLP_ROLES = ("mlp_in", "mlp_gate", "mlp_out")
MATRIX_ROLES = ATTN_ROLES + MLP_ROLES


#: the note of a sequence mixer's tensors that is not attention (a Mamba ``mixer``): role ``other``, not analysed
MIXER_NOTE = "sequence mixer, not attention"


class UnclassifiedWeightsWarning(UserWarning):
    """Some 2-D tensors could not be given a role (they are listed in the message)."""


class NotAnalysedWarning(UserWarning):
    """Recognised tensors that no analysis reads beyond sparsity and totals (:meth:`Catalog.not_analysed`)."""


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
    expert: Optional[int] = None  # mixture of experts: the expert this MLP tensor belongs to

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
    qk_norm_offset: float = 0.0  # the norm's gain is offset + weight (Gemma 3, Qwen3.5: 1 + w; Qwen3: w)

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

    def weight(self, store, role: str, dtype=None, *, fold_qk_norm: bool = False):
        """The clean weight of ``role`` in q/k/v/o: (heads*head_dim, d_model), or (d_model, heads*head_dim) for o.

        Applies the entry's row slice (fused QKV) and drops interleaved rows
        (``head_stride``), so ``weight(store, "q")[q_rows(h)]`` is query head ``h``.
        ``fold_qk_norm``: with a q/k RMSNorm (Qwen3, Qwen3.5, OLMo 2, Gemma 3) return
        ``diag(g) W`` — the norm's gains folded in; what stays out of the bilinear form is the
        per-token factor ``1 / rms(x W^T)`` (not linear in x).
        """
        e = {"q": self.q, "k": self.k, "v": self.v, "o": self.o}[role]
        if e is None:
            raise ValueError(f"role: this {self.stack}/{self.attn} block of layer {self.layer} has no {role!r} weight")
        W = clean_weight(store, e, dtype)
        if fold_qk_norm and role in self.qk_norm:
            g = self.qk_gain(store, role).to(device=W.device, dtype=W.dtype)
            W = W * (g.repeat(W.shape[0] // g.numel()) if g.numel() != W.shape[0] else g)[:, None]
        return W

    def qk_gain(self, store, role: str):
        """The gain of the q or k norm (``qk_norm_offset + weight``): per head dim (head_dim,) or whole projection."""
        return self.qk_norm_offset + store.get(self.qk_norm[role], dtype=torch.float32)

    def k_rows(self, h: int) -> slice:
        """Rows of the key (and value) weight read by query head ``h``."""
        g = self.kv_head(h)
        return slice(g * self.head_dim, (g + 1) * self.head_dim)

    v_rows = k_rows


@dataclass
class MLPBlock:
    """MLP entries of one layer: ``up`` (mlp_in), optional ``gate``, ``down`` (mlp_out); in a
    mixture of experts one block per expert (``expert``: its index, None for a dense MLP or the shared expert)."""

    stack: Optional[str]
    layer: Optional[int]
    up: Optional[Entry]
    gate: Optional[Entry]
    down: Optional[Entry]
    expert: Optional[int] = None


@dataclass
class Catalog:
    """All entries of one checkpoint plus family, config and model dimension."""

    entries: list
    family: str
    config: dict = field(default_factory=dict)
    d_model: Optional[int] = None
    source: Optional[str] = None
    qk_norm_offset: float = 0.0  # q/k norm gain = offset + weight (the adapter's qk_norm_offset(config))
    attn_scale: Optional[Any] = None  # q·k scale of the adapter (T5: 1.0; a function of (config, head_dim)); None: from head_dim

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

    @property
    def has_attention(self) -> bool:
        """Whether any attention block (separate or fused Q/K with a head layout) is catalogued."""
        return bool(self.attention_blocks())

    def mixers(self) -> list:
        """Stored tensors (weights and biases) of a sequence mixer that is not attention (note :data:`MIXER_NOTE`)."""
        return [e for e in self.select(views=False) if e.note == MIXER_NOTE]

    def not_analysed(self) -> str:
        """One line saying what is catalogued but not analysed (a sequence mixer no family knows); "" when nothing."""
        mix = self.mixers()
        if not mix:
            return ""
        parts = sorted({tensor_leaf(e.name) for e in mix})
        layers = sorted({e.layer for e in mix if e.layer is not None})
        mt = self.config.get("model_type") if isinstance(self.config, Mapping) else None
        return (f"family {self.family}: model_type {mt!r} mixes positions with a sequence mixer that is not attention "
                f"({', '.join(parts)}; {len(mix)} tensors in {len(layers)} layers); they are catalogued with their "
                f"layer (note '{MIXER_NOTE}') and counted in sparsity and the model's totals only: no spectrum by "
                "role, cross-layer correlation, QK or attention section reads them.")

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
            scale = _attn_scale(self.attn_scale, self.config, ref.head_dim)
            blocks.append(AttentionBlock(
                stack=key[0], attn=key[1], layer=key[2], q=g.get("q"), k=g.get("k"), v=g.get("v"),
                o=g.get("o"), n_heads=ref.n_heads, head_dim=ref.head_dim,
                n_kv_heads=ref.n_kv_heads or ref.n_heads, d_model=d_model, scale=scale,
                biases=biases.get(key, {}), qk_norm=qk_norm.get(key, {}), qk_norm_offset=self.qk_norm_offset))
        return blocks

    def mlp_blocks(self) -> list:
        """One :class:`MLPBlock` per (stack, layer) that has MLP weights, sorted."""
        groups: dict = {}
        for e in self.entries:
            if e.role in MLP_ROLES and len(e.shape) == 2:
                groups.setdefault((e.stack, e.layer, e.expert), {})[e.role] = e
        return [MLPBlock(stack=k[0], layer=k[1], up=g.get("mlp_in"), gate=g.get("mlp_gate"),
                         down=g.get("mlp_out"), expert=k[2])
                for k, g in sorted(groups.items(), key=lambda kv: (_stack_rank(kv[0][0]), -1 if kv[0][1] is None
                                                                   else kv[0][1], -1 if kv[0][2] is None else kv[0][2]))]

    def to_frame(self):
        """The catalog as a pandas DataFrame (one row per entry)."""
        return pd.DataFrame([{
            "name": e.name, "role": e.role, "stack": e.stack, "attn": e.attn, "layer": e.layer,
            "shape": tuple(e.shape), "dtype": e.dtype, "n_heads": e.n_heads, "head_dim": e.head_dim,
            "n_kv_heads": e.n_kv_heads, "row_slice": e.row_slice, "expert": e.expert, "numel": e.numel}
            for e in self.entries])

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
    return strip_interleaved(e, store.get(e, dtype=dtype or torch.float32))


def strip_interleaved(e: Entry, W):
    """Drop the rows between heads (``head_stride``) from the data ``W`` of entry ``e``."""
    if e.head_stride and e.head_stride != e.head_dim and W.ndim == 2:
        n = W.shape[0] // e.head_stride
        W = W.reshape(n, e.head_stride, -1)[:, : e.head_dim].reshape(n * e.head_dim, -1)
    return W


def _attn_scale(fixed: Optional[float], cfg: dict, head_dim: int) -> float:
    """Scale applied to q·k before the softmax: the adapter's fixed scale (T5: 1, no scaling; DeBERTa: a
    function of the config), else Granite's ``attention_multiplier``, else Gemma's ``query_pre_attn_scalar``,
    else ``1/sqrt(head_dim)``."""
    if callable(fixed):  # a scale that depends on the config (DeBERTa: 1/sqrt(head_dim * scale_factor))
        return float(fixed(cfg, head_dim))
    if fixed is not None:
        return float(fixed)
    if isinstance(cfg.get("attention_multiplier"), (int, float)):  # Granite: the scale itself
        return float(cfg["attention_multiplier"])
    if isinstance(cfg.get("query_pre_attn_scalar"), (int, float)):
        return float(cfg["query_pre_attn_scalar"]) ** -0.5
    return float(head_dim) ** -0.5


def _stack_rank(s) -> int:
    return STACKS.index(s) if s in STACKS else (-1 if s is None else 9)


def _order(e: Entry):
    return (_stack_rank(e.stack), e.attn or "", -1 if e.layer is None else e.layer,
            -1 if e.expert is None else e.expert, e.role, e.name, e.row_slice or (0, 0))




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


def tensor_leaf(name: str) -> str:
    """The module (or parameter) a tensor name ends in: ``a.mixer.in_proj.weight`` -> ``in_proj``, ``a.D`` -> ``D``."""
    parts = name.split(".")
    return parts[-2] if len(parts) > 1 and parts[-1] in ("weight", "bias") else parts[-1]


def get_int(cfg: Mapping, *keys, default=None):
    """First integer found under ``keys`` in ``cfg`` (or nested ``text_config``)."""
    for src in (cfg, cfg.get("text_config") or {}):
        for k in keys:
            v = src.get(k) if isinstance(src, Mapping) else None
            if isinstance(v, int) and not isinstance(v, bool):
                return v
    return default


AdapterFn = Callable[[Mapping[str, TensorInfo], dict], list]


__all__ = ["ATTN_ROLES", "MATRIX_ROLES", "MIXER_NOTE", "MLP_ROLES", "ROLES", "STACKS", "AdapterFn", "AttentionBlock",
           "Catalog", "Entry", "MLPBlock", "NotAnalysedWarning", "TensorInfo", "UnclassifiedWeightsWarning",
           "attn_entry", "clean_weight", "get_int", "split_fused", "strip_interleaved", "tensor_leaf"]
