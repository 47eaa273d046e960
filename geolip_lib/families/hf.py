"""What the transformers families beyond the first six share: the base model, hidden-state forwards,
the block locator of the modulator hooks and the canonical-layout helpers of fused projections.

Layer: L2 (imports only the bottom layer).
"""
from __future__ import annotations

import re
from typing import Callable, Optional


from ..validation import fail
from .spec import hidden_to_cpu
from ..lazy import lazy

torch = lazy("torch")
nn = lazy("torch.nn")


def base(model: nn.Module) -> nn.Module:
    """The base model under a task head (HF ``base_model``), else the model itself."""
    return getattr(model, "base_model", None) or model


def causal_hidden(model, stack, ids, mask, dec) -> list:
    """Per-layer hidden states of a causal LM (no KV cache), from its base model: the same
    states without the vocabulary logits."""
    return hidden_to_cpu(base(model)(input_ids=ids, attention_mask=mask, output_hidden_states=True,
                                     use_cache=False).hidden_states)


def encoder_hidden(model, stack, ids, mask, dec) -> list:
    """Per-layer hidden states of a text encoder (BERT-like)."""
    return hidden_to_cpu(base(model)(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states)


def seq2seq_hidden(model, stack, ids, mask, dec) -> list:
    """Encoder states, or the teacher-forced decoder's (``dec``: shifted ids and mask) reading them."""
    enc = model.get_encoder()(input_ids=ids, attention_mask=mask, output_hidden_states=True)
    if stack == "encoder":
        return hidden_to_cpu(enc.hidden_states)
    out = model.get_decoder()(input_ids=dec[0].to(ids.device), attention_mask=dec[1].to(ids.device),
                              encoder_hidden_states=enc.last_hidden_state, encoder_attention_mask=mask,
                              output_hidden_states=True, use_cache=False)
    return hidden_to_cpu(out.hidden_states)


def _attr(obj, path: str):
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def blocks_at(paths: dict, family: str) -> Callable:
    """A ``locate_blocks(model, stack)`` reading ``paths[stack] = "module.path.to.blocks"`` under the base model."""
    def locate(model: nn.Module, stack: str):
        if stack not in paths:
            fail("stack", f"{family} models have stacks {sorted(paths)}, got {stack!r}")
        b = base(model)
        parent, _, leaf = paths[stack].rpartition(".")
        mod = _attr(b, parent) if parent else b
        return mod, getattr(mod, leaf)
    return locate


def regroup_rows(t: torch.Tensor, groups: tuple, head_dim: int) -> torch.Tensor:
    """Rows stored as ``groups`` (e.g. ``(n_heads, 3)``) blocks of ``head_dim`` rows, returned with the two
    group axes swapped: ``(n_heads, 3, hd)`` -> ``(3, n_heads, hd)`` ([W_q; W_k; W_v], bias likewise)."""
    a, b = groups
    rest = t.shape[1:]
    return t.reshape(a, b, head_dim, *rest).transpose(0, 1).reshape(a * b * head_dim, *rest).contiguous()


def canonical_by_name(pattern: str, fn: Callable[[torch.Tensor, dict], torch.Tensor]) -> Callable:
    """A ``canonical_tensor(name, tensor, config)`` applying ``fn`` to the tensors whose name matches ``pattern``."""
    rx = re.compile(pattern)

    def canon(name: str, t: torch.Tensor, cfg: dict) -> torch.Tensor:
        return fn(t, cfg) if rx.search(name) else t
    return canon


def d_heads(cfg: dict, d_key: str, h_key: str, kv_key: Optional[str] = None, layers_key: str = "num_hidden_layers"):
    """(d_model, n_layers, n_heads, head_dim, n_kv_heads) from config keys."""
    d, h = int(cfg[d_key]), int(cfg[h_key])
    kv = int(cfg.get(kv_key) or h) if kv_key else h
    return d, int(cfg[layers_key]), h, d // h, kv


__all__ = ["base", "blocks_at", "canonical_by_name", "causal_hidden", "d_heads", "encoder_hidden", "regroup_rows",
           "seq2seq_hidden"]
