"""Random-init twins generated tensor by tensor, for models too big to build whole.

:class:`RandomInitStore` is a :class:`geolip_lib.weights.TensorStore` whose tensors are
not read from a file but generated on demand: the model's skeleton is built on the meta
device from its config (no memory), and ``get(name)`` materialises only that tensor on
its device (the CPU by default) and runs the model's own initialisation over it. Nothing else is materialised,
so a twin of T5-v1.1-XXL needs the memory of one tensor, not 44 GB, and nothing is
written to disk. :meth:`geolip_lib.models.LoadedModel.random_init_weights` returns this
store above :data:`TWIN_MAX_PARAMS` parameters and the in-memory twin of
:meth:`~geolip_lib.models.LoadedModel.random_init` at or below it.

The model's own initialisation
------------------------------
Hugging Face (transformers >= 5): ``post_init`` initialises a model by calling each
module's ``_init_weights`` in post-order (children first, then the parent; a nested
``PreTrainedModel`` uses its own ``_init_weights`` for its subtree), and an init may set
the parameters of its descendants (T5's ``T5Attention`` branch sets ``q/k/v/o`` with the
factor-based stds, overriding the plain ``nn.Linear`` init of each projection). The store
runs exactly that sequence restricted to the modules that own the tensor and their
ancestors (for a tied tensor: those of every alias), on the skeleton where every other
tensor is meta (an init on a meta tensor is a no-op and draws no random numbers). This is
how transformers itself fills missing weights of a model loaded on meta.

open_clip: the model initialises while it is constructed: each ``nn.Linear`` /
``nn.LayerNorm`` / ``nn.Conv2d`` / ``nn.Embedding`` by its ``reset_parameters``,
``nn.MultiheadAttention`` by ``_reset_parameters``, the text tower by
``TextTransformer.init_parameters`` (run here on the CLIP root, which holds the text
tower's modules), ``VisionTransformer.init_parameters``; parameters created directly in
a constructor (``class_embedding``, ``positional_embedding``, ``proj`` of the vision
tower, ``logit_scale``/``logit_bias``) are written by :data:`_OPEN_CLIP_CONSTRUCTED`,
which mirrors those constructor lines (open_clip 3.x) because a meta skeleton loses
constructor values. A tensor the sequence leaves unset (its fill of NaN survives) is an
error naming it, never silently garbage.

Each tensor is drawn under its own seed, a hash of ``(seed, name)`` (the global RNG
state is restored afterwards), so a tensor is the same however often and in whatever
order it is asked for. Tied tensors (T5's embed_tokens / shared, tied LM heads) are one
tensor under the first state-dict name, as in a saved checkpoint; the other names are
accepted by :meth:`RandomInitStore.get` and return the same values.

Untied output heads (T5 v1.1): transformers 5 builds T5 always tied, so, as in
:func:`geolip_lib.models.loading.untie_output`, the skeleton's ``lm_head`` gets its own
weight when the trained model's is untied. It is then initialised by the model's own
init for ``lm_head`` (T5: ``nn.Linear`` with std ``initializer_factor``, the same
N(0, factor²) the shared table gets; decoder LMs: N(0, initializer_range²), as the
embedding). ``random_init`` for small models draws it as N(0, std of the input table²):
the same distribution, not the same values.
"""
from __future__ import annotations

import hashlib
import math
import os
from collections import OrderedDict
from types import SimpleNamespace
from typing import Any, Callable, Optional

import torch
from transformers import PreTrainedModel

from ..families import spec
from ..checkpoints.store import TensorStore
from .common import model_class, quiet_transformers, untie_output

TWIN_MAX_PARAMS = 1_000_000_000  # above this many parameters the random-init twin is generated tensor by tensor


def _default_cache_bytes() -> int:
    """Generated tensors kept for row-chunked re-reads: 8 GiB, or a quarter of the RAM when that is less."""
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        ram = 32 << 30
    return int(min(8 << 30, ram // 4))


def tensor_seed(seed: int, name: str) -> int:
    """The seed a tensor is drawn with: 63 bits of sha256(``"<seed>:<name>"``)."""
    return int.from_bytes(hashlib.sha256(f"{int(seed)}:{name}".encode()).digest()[:8], "little") >> 1


def _owner(model: torch.nn.Module, name: str):
    mod_path, _, leaf = name.rpartition(".")
    return (model.get_submodule(mod_path) if mod_path else model), leaf


def _slot(module: torch.nn.Module, leaf: str) -> dict:
    return module._parameters if leaf in module._parameters else module._buffers


class RandomInitStore(TensorStore):
    """The tensors of a model at random initialisation, generated one at a time.

    Parameters
    ----------
    config : transformers config, or ``{"model_cfg": ...}`` for open_clip
        The architecture (as in ``LoadedModel.config``).
    family : str
        A family of the registry (``geolip_lib.families.FAMILIES``).
    seed : int
        Twin seed; tensor ``name`` is drawn with :func:`tensor_seed` ``(seed, name)``.
    dtype : torch.dtype
        Stored dtype of the tensors (the model's own dtype); ``get`` casts from it.
    untie_output : bool
        Give the skeleton an independent LM head (T5 v1.1 and other untied models whose
        transformers class builds them tied).
    model_cls : class, optional
        The Hugging Face class to build (default: the family's auto class).
    cache_bytes : int, optional
        Tensors read in row chunks are kept (least recently used out first) up to this
        many bytes, so that the battery's cross-layer cosines (one chunk of every layer,
        then the next chunk) generate each layer once while a role's layers fit (T5-XXL
        ``wi_0`` in float16: 24 x 84 MB); beyond, chunks regenerate their tensor (same
        values, more time). Default 8 GiB or a quarter of the RAM; 0 keeps none. Whole
        reads are never kept.
    device : torch device
        Where tensors are generated and returned (default the CPU). On a GPU the model's init
        runs there (no host generation, no transfer), drawing from that device's generator:
        the same distribution, other values than the CPU's for the same seed (the CPU stream
        is unchanged). Settable after construction (:func:`geolip_lib.weights.nulls.twin`
        sets it for the nulls' generated twins).

    Attributes
    ----------
    config, family, seed, n_params : as built (``n_params`` counted on the meta skeleton).
    """

    def __init__(self, config: Any, family: str, seed: int, *, dtype: torch.dtype = torch.float32,
                 untie_output: bool = False, model_cls: Any = None, cache_bytes: Optional[int] = None,
                 device: Any = "cpu"):
        self._hf = spec(family).hf  # unknown family: one-line ValueError naming the known ones
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise ValueError(f"dtype: expected a floating torch dtype, got {dtype!r}")
        self.root, self._mem, self._where, self._span = None, None, {}, {}
        self.config, self.family, self.seed = config, family, int(seed)
        self.cache_bytes = _default_cache_bytes() if cache_bytes is None else int(cache_bytes)
        self.device = torch.device(device)
        self._cache: OrderedDict = OrderedDict()
        self._model = _skeleton(config, family, dtype, untie_output, model_cls)
        self.n_params = sum(p.numel() for p in self._model.parameters())
        objs: dict = {}  # id(tensor) -> canonical name (first in state-dict order, as a saved checkpoint)
        self._alias: dict = {}
        self._names_of: dict = {}
        self._info = {}
        for k, v in self._model.state_dict(keep_vars=True).items():
            canon = objs.setdefault(id(v), k)
            self._names_of.setdefault(canon, []).append(k)
            if canon != k:
                self._alias[k] = canon
            else:
                self._info[k] = (tuple(v.shape), str(v.dtype).replace("torch.", ""))
        # post-order position and init function of every module, as transformers' smart_apply visits them
        self._order: dict = {}
        self._init_fn: dict = {}
        self._walk(self._model, "", self._hf_init_fn(self._model))

    # ------------------------------------------------------------------ skeleton walk
    def _hf_init_fn(self, module) -> Optional[Callable]:
        """A Hugging Face model's ``_init_weights`` (its subtree is initialised with it); None otherwise."""
        if not self._hf:  # open_clip initialises while constructing
            return None
        return module._init_weights if isinstance(module, PreTrainedModel) else None

    def _walk(self, module, prefix: str, fn) -> None:
        for cname, child in module.named_children():
            child_fn = self._hf_init_fn(child) or fn
            self._walk(child, f"{prefix}.{cname}" if prefix else cname, child_fn)
        self._order[prefix] = len(self._order)
        self._init_fn[prefix] = fn

    # ------------------------------------------------------------------ reading
    @property
    def skeleton(self) -> torch.nn.Module:
        """The model on the meta device (no tensor memory): where a family's accessors find a tensor."""
        return self._model

    def name_of(self, tensor: Any) -> Optional[str]:
        """The state-dict name of a skeleton tensor (found by identity; tied: the stored name), or None."""
        for k, v in self._model.state_dict(keep_vars=True).items():
            if v is tensor:
                return self._alias.get(k, k)
        return None

    def __contains__(self, name: str) -> bool:
        return name in self._info or name in self._alias

    def get(self, name: Any, dtype: torch.dtype = torch.float32, row_slice: Optional[tuple] = None,
            device: Any = None) -> torch.Tensor:
        """As :meth:`TensorStore.get`; a tied alias (e.g. ``encoder.embed_tokens.weight``) reads its partner."""
        if isinstance(name, str) and name in self._alias:
            name = self._alias[name]
        return super().get(name, dtype=dtype, row_slice=row_slice, device=device)

    def _read(self, name: str, rs: Optional[tuple]) -> torch.Tensor:
        if rs is None:  # a whole read (the fused battery, the operators): generated, handed over, not kept
            t = self._cache.get(name)
            return self.generate(name) if t is None else t.clone()
        # row chunks (cross-layer cosines read chunk a of every layer, then chunk b...): keep the
        # generated tensor, least recently used out first, within cache_bytes
        t = self._cache.get(name)
        if t is None:
            t = self.generate(name)
            size = t.numel() * t.element_size()
            if size <= self.cache_bytes:
                while self._cache and self._cached_bytes() + size > self.cache_bytes:
                    self._cache.popitem(last=False)
                self._cache[name] = t
        else:
            self._cache.move_to_end(name)
        return t[rs[0]:rs[1]].clone()

    def _cached_bytes(self) -> int:
        return sum(c.numel() * c.element_size() for c in self._cache.values())

    def clear_cache(self) -> None:
        """Drop the generated tensors kept for re-reads."""
        self._cache.clear()

    @torch.no_grad()
    def generate(self, name: str) -> torch.Tensor:
        """Tensor ``name`` (stored dtype, on :attr:`device`), drawn afresh with the model's own initialisation."""
        name = self._alias.get(name, name)
        shape, _ = self._lookup(name)
        aliases = self._names_of[name]
        owners = [_owner(self._model, a) for a in aliases]
        meta = _slot(*owners[0])[owners[0][1]]
        dev = torch.device(self.device)
        fresh = torch.full(shape, float("nan"), dtype=meta.dtype, device=dev)
        if isinstance(meta, torch.nn.Parameter):
            fresh = torch.nn.Parameter(fresh, requires_grad=meta.requires_grad)
        for mod, leaf in owners:
            _slot(mod, leaf)[leaf] = fresh
        try:
            with _fork_rng(dev):
                torch.manual_seed(tensor_seed(self.seed, name))  # every device's generator
                if not self._hf:
                    _open_clip_init(self._model, self.config["model_cfg"], name, owners, self._chain(aliases))
                else:
                    for path in self._chain(aliases):
                        fn = self._init_fn[path]
                        if fn is not None:
                            fn(self._model.get_submodule(path))
        finally:
            for mod, leaf in owners:
                _slot(mod, leaf)[leaf] = meta
        out = fresh.detach()
        if out.is_floating_point() and bool(torch.isnan(out).any()):
            raise RuntimeError(f"name: the {self.family} initialisation left {name!r} unset "
                               f"({type(owners[0][0]).__name__}.{owners[0][1]}); no generated twin for it: "
                               "use LoadedModel.random_init() or extend geolip_lib/models/twin.py")
        return out

    def _chain(self, aliases) -> list:
        """Module paths that own ``aliases`` and their ancestors, in the order the model initialises them."""
        paths = set()
        for a in aliases:
            parts = a.split(".")[:-1]
            paths.update(".".join(parts[:i]) for i in range(len(parts) + 1))
        return sorted(paths, key=self._order.__getitem__)


def _fork_rng(dev: torch.device):
    """The global random state of the CPU (and of ``dev``'s generator on a GPU) restored after the block."""
    if dev.type == "cuda":
        return torch.random.fork_rng(devices=[dev.index if dev.index is not None else torch.cuda.current_device()],
                                     device_type="cuda")
    return torch.random.fork_rng(devices=[])


# ============================================================================ skeletons
def _skeleton(config: Any, family: str, dtype: torch.dtype, untie: bool, model_cls: Any) -> torch.nn.Module:
    """The architecture on the meta device (no tensor memory), in ``dtype``."""
    if not spec(family).hf:
        import open_clip  # heavy optional dependency

        cfg = (config or {}).get("model_cfg") if isinstance(config, dict) else None
        if not isinstance(cfg, dict):
            raise ValueError("config: an open_clip twin needs {'model_cfg': {...}} (LoadedModel.config)")
        with torch.device("meta"):
            return open_clip.CLIP(**cfg).to(dtype).eval()
    with torch.device("meta"), quiet_transformers():
        model = (model_cls._from_config(config, dtype=dtype) if model_cls is not None
                 else model_class(family).from_config(config, dtype=dtype))
    if untie:
        untie_output(model, weight=torch.empty_like(model.get_input_embeddings().weight, device="meta"))
    return model.eval()


# ============================================================================ open_clip
def _vision_width(m) -> int:
    return int(m.conv1.out_channels)


def _sincos(m, t: torch.Tensor) -> torch.Tensor:
    from open_clip.pos_embed import get_2d_sincos_pos_embed

    return torch.from_numpy(get_2d_sincos_pos_embed(_vision_width(m), m.grid_size[0], cls_token=True)).float()


# (class name, parameter) -> value the constructor gives it, mirroring open_clip 3.x's constructors
# (model.py: CLIP; transformer.py: VisionTransformer): a meta skeleton has lost those values.
_OPEN_CLIP_CONSTRUCTED: dict = {
    ("VisionTransformer", "class_embedding"): lambda m, t, cfg: _vision_width(m) ** -0.5 * torch.randn(t.shape),
    ("VisionTransformer", "positional_embedding"): lambda m, t, cfg: (
        _vision_width(m) ** -0.5 * torch.randn(t.shape) if t.requires_grad else _sincos(m, t)),
    ("VisionTransformer", "proj"): lambda m, t, cfg: _vision_width(m) ** -0.5 * torch.randn(t.shape),
    ("CLIP", "logit_scale"): lambda m, t, cfg: torch.ones(t.shape) * cfg.get("init_logit_scale", math.log(1 / 0.07)),
    ("CLIP", "logit_bias"): lambda m, t, cfg: torch.ones(t.shape) * cfg["init_logit_bias"],
}


def _open_clip_init(root, cfg: dict, name: str, owners, chain) -> None:
    """Construction-time initialisation of one open_clip tensor (see the module docstring)."""
    from open_clip.transformer import TextTransformer, VisionTransformer

    mod, leaf = owners[0]
    t = _slot(mod, leaf)[leaf]
    ctor = _OPEN_CLIP_CONSTRUCTED.get((type(mod).__name__, leaf))
    if ctor is not None:
        t.copy_(ctor(mod, t, cfg).to(t.dtype))
    elif isinstance(mod, torch.nn.MultiheadAttention):
        mod._reset_parameters()
    elif hasattr(mod, "reset_parameters"):
        mod.reset_parameters()
    for path in chain:
        m = root.get_submodule(path)
        if m is mod:
            continue
        if isinstance(m, torch.nn.MultiheadAttention):
            m._reset_parameters()
        elif isinstance(m, (TextTransformer, VisionTransformer)):
            m.init_parameters()
    # CLIP keeps the text tower's modules on itself (text.transformer -> root.transformer ...); the tower's
    # init_parameters ran when it was built, before CLIP's own parameters (logit_scale) were made
    if not name.startswith("visual.") and not name.startswith("logit_") and hasattr(root, "token_embedding"):
        TextTransformer.init_parameters(SimpleNamespace(
            token_embedding=root.token_embedding, positional_embedding=root.positional_embedding,
            cls_emb=getattr(root, "cls_emb", None), transformer=root.transformer,
            text_projection=root.text_projection))
