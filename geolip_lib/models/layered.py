"""Random-init twins that run one block at a time, for models too big to hold twice.

A forward pass through a random-init twin (notebook 16's random-init null, 01's
encoder-vs-decoder comparison of an encoder-decoder model) needed the whole twin beside the
trained model: 2 x 7.1 GB for Qwen2.5-Coder-1.5B in float32. Above
:data:`geolip_lib.models.twin.TWIN_MAX_PARAMS` parameters :func:`random_init_model` builds
instead the twin's skeleton with its parameters on the meta device (no memory; buffers such as
the rotary ``inv_freq`` are real, as the constructor computes them) and materialises the
parameters from :class:`~geolip_lib.models.twin.RandomInitStore` (the model's own
initialisation, each tensor seeded by ``(seed, name)``):

- the parameters outside the repeated blocks (embeddings, a tied head, final norms, position
  tables) are generated once and kept;
- a *block* (a child of an ``nn.ModuleList``, the outermost such: a decoder layer, T5's block,
  a CLIP residual block; and an untied output head, which hidden states never call) is
  generated when the block is called (a forward pre-hook) and put back
  on the meta device when it returns (a forward hook), so one block is in memory at a time.

The model's own forward code runs unchanged, so this works for every family whose blocks are
called as modules. Each call regenerates its block (the same values: the store's seeds are per
tensor), so a forward pass costs the generation of the whole twin once. At or below the
threshold :func:`random_init_model` is :meth:`LoadedModel.random_init` itself (whole, bit-equal
to what the notebooks always ran). The values above it are the store's, not ``random_init``'s:
the same distribution, other draws (as the weight nulls' generated twins).
"""
from __future__ import annotations

from typing import Any, Optional

import torch
from accelerate import init_empty_weights
from torch import nn

from . import twin
from .common import model_class, quiet_transformers, untie_output, weights_hash
from .loaded import LoadedModel

__all__ = ["random_init_model", "layered_model", "BlockMaterialiser"]


def random_init_model(lm: Any, seed: Optional[int] = None, *, max_params: Optional[int] = None) -> LoadedModel:
    """``lm``'s architecture at random initialisation with init seed ``seed`` (default
    ``params.seed + 1``, as :meth:`LoadedModel.random_init`), ready for forward passes.

    At or below ``max_params`` parameters (default :data:`~geolip_lib.models.twin.TWIN_MAX_PARAMS`):
    ``lm.random_init(seed)``, the whole twin. Above: the same architecture run one block at a
    time (:func:`layered_model`), its tensors drawn by the model's own initialisation."""
    s = lm.params.seed + 1 if seed is None else int(seed)
    limit = twin.TWIN_MAX_PARAMS if max_params is None else int(max_params)
    if sum(p.numel() for p in lm.model.parameters()) <= limit:
        return lm.random_init(s)
    store = lm.random_init_weights(s, max_params=0)
    model = layered_model(store, model_cls=type(lm.model) if lm.spec.hf else None, dtype=lm.dtype)
    return LoadedModel(name=f"{lm.name}@random{s}", family=lm.family, params=lm.params.model_copy(update={"seed": s}),
                       model=model, tokenizer=lm.tokenizer, config=lm.config, _weights_dir=None,
                       _save_weights=None, _weights_key=weights_hash([lm.params.model_dump(), s]))


def _skeleton(store: twin.RandomInitStore, model_cls: Any, dtype: torch.dtype) -> nn.Module:
    """The store's architecture with every parameter on the meta device and real buffers."""
    ref = store.skeleton
    with init_empty_weights(include_buffers=False), quiet_transformers():
        if model_cls is None:  # open_clip (no Hugging Face class)
            model = type(ref)(**store.config["model_cfg"]).to(dtype)
        else:
            model = model_cls._from_config(store.config, dtype=dtype)
    out, inp = ref.get_output_embeddings() if hasattr(ref, "get_output_embeddings") else None, None
    if out is not None and getattr(out, "weight", None) is not None:
        inp = ref.get_input_embeddings()
        if out.weight is not inp.weight:  # the store's skeleton has an untied head: so has this one
            untie_output(model, weight=torch.empty_like(model.get_input_embeddings().weight, device="meta"))
    # ties as the store has them (making parameters meta one by one re-registers them, which unties)
    params = dict(model.named_parameters(remove_duplicate=False))
    for name, canon in store._alias.items():
        if name in params and canon in params:
            mod_path, _, leaf = name.rpartition(".")
            model.get_submodule(mod_path)._parameters[leaf] = params[canon]
    return model.eval()


def _blocks(model: nn.Module) -> list:
    """``(path, module)`` of the outermost children of an ``nn.ModuleList`` (the repeated blocks),
    then an untied output head (materialised only when called: hidden states never call it)."""
    found: list = []

    def walk(mod: nn.Module, prefix: str) -> None:
        for name, child in mod.named_children():
            path = f"{prefix}.{name}" if prefix else name
            if isinstance(mod, nn.ModuleList) and any(True for _ in child.parameters()):
                found.append((path, child))
            else:
                walk(child, path)

    walk(model, "")
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if head is not None and any(True for _ in head.parameters()):
        mine = {id(p) for p in head.parameters()}
        in_found = {id(p) for _, b in found for p in b.parameters()}
        others = {id(p) for m in model.modules() if m is not head
                  for p in m._parameters.values() if p is not None and id(p) in mine}
        if not (mine & in_found) and not others:  # untied: no other module holds its weight
            found.append((next(n for n, m in model.named_modules() if m is head), head))
    return found


class BlockMaterialiser:
    """The hooks of a :func:`layered_model`: what is materialised, and how much at most.

    Attributes
    ----------
    kept_bytes : int
        Bytes of the parameters kept materialised (outside the blocks).
    live_bytes, peak_bytes : int
        Bytes of block parameters materialised now, and at most so far.
    n_blocks : int
        Blocks hooked.
    """

    def __init__(self, model: nn.Module, store: twin.RandomInitStore, dtype: torch.dtype):
        self.store, self.dtype = store, dtype
        self._meta: dict = {}  # (id(module), leaf) -> the meta parameter put aside while its block runs
        self.live_bytes = self.peak_bytes = self.kept_bytes = 0
        blocks = _blocks(model)
        in_block = {id(p) for _, b in blocks for p in b.parameters()}
        seen: set = set()
        for name, p in list(model.named_parameters(remove_duplicate=False)):  # outside the blocks: once, kept
            if id(p) in in_block or id(p) in seen:
                continue
            seen.add(id(p))
            t = self._tensor(name, p)
            for mod, leaf in self._slots(model, p):
                mod._parameters[leaf] = t
            self.kept_bytes += t.numel() * t.element_size()
        self.n_blocks = len(blocks)
        for path, block in blocks:
            slots = [(mod, leaf, f"{path}.{mname}.{leaf}" if mname else f"{path}.{leaf}")
                     for mname, mod in block.named_modules() for leaf, p in mod._parameters.items() if p is not None]
            block.register_forward_pre_hook(self._pre(slots))
            block.register_forward_hook(self._post(slots), always_call=True)

    @staticmethod
    def _slots(model: nn.Module, p: nn.Parameter) -> list:
        return [(mod, leaf) for mod in model.modules() for leaf, q in mod._parameters.items() if q is p]

    def _tensor(self, name: str, meta: nn.Parameter) -> nn.Parameter:
        t = self.store.get(name, dtype=meta.dtype if meta.is_floating_point() else self.dtype, device=self.store.device)
        return nn.Parameter(t, requires_grad=False)

    def _pre(self, slots: list):
        def hook(_module, _args):
            n = 0
            for mod, leaf, name in slots:
                meta = mod._parameters[leaf]
                if meta is not None and meta.is_meta:
                    t = self._tensor(name, meta)
                    mod._parameters[leaf] = t
                    self._meta[(id(mod), leaf)] = meta
                    n += t.numel() * t.element_size()
            self.live_bytes += n
            self.peak_bytes = max(self.peak_bytes, self.live_bytes)
        return hook

    def _post(self, slots: list):
        def hook(_module, _args, _out):
            for mod, leaf, _ in slots:
                meta = self._meta.pop((id(mod), leaf), None)
                if meta is not None:
                    t = mod._parameters[leaf]
                    self.live_bytes -= t.numel() * t.element_size()
                    mod._parameters[leaf] = meta
        return hook



def layered_model(store: twin.RandomInitStore, *, model_cls: Any = None,
                  dtype: torch.dtype = torch.float32) -> nn.Module:
    """The architecture of ``store`` run one block at a time (see the module docstring).

    ``model_cls``: the Hugging Face class of the trained model (None: open_clip). The hooks'
    account is ``model.geolip_blocks`` (:class:`BlockMaterialiser`)."""
    model = _skeleton(store, model_cls, dtype)
    model.geolip_blocks = BlockMaterialiser(model, store, dtype)
    return model
