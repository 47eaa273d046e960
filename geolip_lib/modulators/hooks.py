"""Inject a modulator into a model through forward hooks on its blocks.

The seed re-implemented T5's encoder loop (and so depended on ``cache_position`` and the
position-bias plumbing of one transformers version). Here the model's own forward runs
unchanged; hooks rewrite the hidden state entering (``where="pre"``, the seed's
intervention point) or leaving (``where="post"``) each selected block::

    with attach(model, modulator, stack="encoder") as h:   # T5, BERT, decoder LMs
        out = model(**batch)                                # modulated
    out = model(**batch)                                    # hooks gone, model unchanged

Token ids (needed by the residual modulator) are captured by a pre-hook on the stack
module, which receives ``input_ids``. During ``generate`` a decoder LM's stack receives
only the new tokens, matching the hidden states the blocks see.
"""
from __future__ import annotations

import hashlib
from typing import Callable, Sequence

import torch
import torch.nn as nn

from ..families import REGISTRY, family_of_model, spec
from ..validation import fail

# --------------------------------------------------------------------------- locators
#: family -> block locator ``(model, stack) -> (stack_module, blocks)`` (the specs' ``locate_blocks``)
LOCATORS: dict[str, Callable] = {name: s.locate_blocks for name, s in REGISTRY.items() if s.locate_blocks}


def _structural_family(model: nn.Module) -> str | None:
    """A generative family whose blocks this model has, when its config does not say (a bare T5
    stack, a decoder LM); encoder-only families are found by their ``model_type`` only."""
    for name, s in REGISTRY.items():
        if s.locate_blocks is None or not s.is_generative:
            continue
        try:
            s.locate_blocks(model, s.stacks[0])
            return name
        except (ValueError, AttributeError):
            continue
    return None


def detect_family(model: nn.Module) -> str:
    """Family key of :data:`LOCATORS` from the model's config (``model_type``, the registry) or structure."""
    fam = family_of_model(model)
    if fam in LOCATORS:
        return fam
    fam = _structural_family(model)
    if fam is not None:
        return fam
    mt = getattr(getattr(model, "config", None), "model_type", None)
    fail("model", f"cannot find the blocks of {type(model).__name__} (model_type={mt!r}); "
                  f"pass family= one of {sorted(LOCATORS)}")


def locate_blocks(model, stack: str = "encoder", family: str | None = None):
    """``(stack_module, blocks)`` of a model (an ``nn.Module`` or a ``LoadedModel``)."""
    if not isinstance(model, nn.Module):  # LoadedModel
        family = family or getattr(model, "family", None)
        model = model.model
    family = family or detect_family(model)
    if family not in LOCATORS:
        fail("family", f"hooks are not defined for family {family!r} (supported: {sorted(LOCATORS)})")
    fs = spec(family)
    return fs.locate_blocks(model, fs.hook_stack.get(stack, stack))


# --------------------------------------------------------------------------- hooks
class ModulationHandle:
    """Hooks of one attached modulator; a context manager that removes them on exit.

    Attributes
    ----------
    layers : list of int
        Modulated block indices.
    token_ids : torch.Tensor or None
        Last ids seen by the stack.
    """

    def __init__(self, modulator: nn.Module, layers: list[int]):
        self.modulator = modulator
        self.layers = layers
        self.token_ids: torch.Tensor | None = None
        self._handles: list = []
        self.active = True

    def remove(self) -> None:
        """Remove every hook (idempotent)."""
        for h in self._handles:
            h.remove()
        self._handles.clear()
        self.active = False
        self.token_ids = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False

    def _apply(self, hidden: torch.Tensor, layer: int) -> torch.Tensor:
        ids = self.token_ids
        if ids is not None and ids.shape != hidden.shape[:-1]:
            ids = None  # e.g. inputs_embeds call; the residual modulator then raises
        return self.modulator.hook_apply(hidden, ids, layer)


def attach(model, modulator: nn.Module, *, stack: str = "encoder", layers: Sequence[int] | None = None,
           family: str | None = None, where: str = "pre") -> ModulationHandle:
    """Attach ``modulator`` to the blocks of ``model`` with forward hooks.

    Parameters
    ----------
    model : nn.Module or LoadedModel
        T5 (encoder or decoder stack), BERT, or a decoder LM (Qwen/Llama style ``.layers``).
    modulator : nn.Module
        Implements ``hook_apply(hidden (B,S,D), token_ids (B,S) | None, layer_idx) -> (B,S,D)``.
    stack : str
        ``"encoder"`` | ``"decoder"``.
    layers : sequence of int, optional
        Block indices to modulate (default: all). ``layer_idx`` passed to the modulator is
        the block index.
    family : str, optional
        Key of :data:`LOCATORS`; default: detected.
    where : str
        ``"pre"``: modulate the block's input (seed's intervention point);
        ``"post"``: modulate the block's output hidden state.

    Returns
    -------
    ModulationHandle (use as a context manager, or call ``.remove()``).
    """
    if where not in ("pre", "post"):
        fail("where", f"expected 'pre' or 'post', got {where!r}")
    stack_mod, blocks = locate_blocks(model, stack, family)
    n = len(blocks)
    layers = list(range(n)) if layers is None else [int(i) for i in layers]
    bad = [i for i in layers if not 0 <= i < n]
    if bad:
        fail("layers", f"indices {bad} out of range for {n} blocks")
    n_mod = getattr(modulator, "n_layers", None) or getattr(getattr(modulator, "config", None), "n_layers", None)
    if n_mod is not None and layers and max(layers) >= n_mod:
        fail("layers", f"the modulator has {n_mod} layer alphas but layer {max(layers)} is modulated")
    # the modulator moves with the model: a module built in a notebook (on the CPU) meets the blocks'
    # hidden states on their device (its own dtype is kept: forward casts the target to the residual's)
    dev = next((p.device for p in stack_mod.parameters()), None)
    if dev is not None:
        modulator.to(dev)
    handle = ModulationHandle(modulator, layers)

    def capture_ids(module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        handle.token_ids = ids if isinstance(ids, torch.Tensor) and ids.dtype in (torch.long, torch.int) else None

    handle._handles.append(stack_mod.register_forward_pre_hook(capture_ids, with_kwargs=True))
    for layer in layers:
        block = blocks[layer]
        if where == "pre":
            def pre(module, args, kwargs, _layer=layer):
                if args:
                    return (handle._apply(args[0], _layer),) + tuple(args[1:]), kwargs
                kwargs = dict(kwargs)
                kwargs["hidden_states"] = handle._apply(kwargs["hidden_states"], _layer)
                return args, kwargs
            handle._handles.append(block.register_forward_pre_hook(pre, with_kwargs=True))
        else:
            def post(module, args, output, _layer=layer):
                if isinstance(output, tuple):
                    return (handle._apply(output[0], _layer),) + tuple(output[1:])
                if isinstance(output, torch.Tensor):
                    return handle._apply(output, _layer)
                output[0] = handle._apply(output[0], _layer)  # ModelOutput-like
                return output
            handle._handles.append(block.register_forward_hook(post))
    return handle


modulated = attach  # ``with modulated(model, mod): ...`` reads well


# --------------------------------------------------------------------------- base-model helpers
def freeze(model: nn.Module) -> int:
    """Set ``requires_grad=False`` on every parameter; return the number of frozen scalars."""
    model = model if isinstance(model, nn.Module) else model.model
    for p in model.parameters():
        p.requires_grad_(False)
    return sum(p.numel() for p in model.parameters())


def state_hash(model: nn.Module) -> str:
    """SHA-256 over the names, shapes, dtypes and bytes of every parameter and buffer."""
    model = model if isinstance(model, nn.Module) else model.model
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        t = t.detach().cpu().contiguous()
        h.update(f"{name}|{tuple(t.shape)}|{t.dtype}".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()
