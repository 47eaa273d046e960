"""GPT-2 adapter (HF ``GPT2Model`` / ``GPT2LMHeadModel``), in the canonical layout the loader writes.

GPT-2 stores its projections as ``Conv1D`` weights ``(in, out)``; the loader writes them
transposed to ``(out, in)`` like every ``nn.Linear`` (``families/gpt2.py``: ``canonical_tensor``),
so ``c_attn`` is the fused ``(3·D, D)`` [W_q; W_k; W_v]. Names (optionally under ``transformer.``)::

    wte.weight, wpe.weight                 embed (tokens, learned positions)
    h.{i}.attn.c_attn.{weight,bias}        qkv -> views q / k / v (self, decoder), biases likewise
    h.{i}.attn.c_proj                      o
    h.{i}.mlp.c_fc / mlp.c_proj            mlp_in / mlp_out (GELU)
    h.{i}.ln_1, h.{i}.ln_2, ln_f           norm
    lm_head.weight                         unembed (tied to wte in GPT-2: absent from the file)

Scores: ``(x W_q^T + b_q)(x W_k^T + b_k)^T / sqrt(head_dim)`` (``scale_attn_weights``), no
position term inside attention (positions are added to the input).
"""
from __future__ import annotations

from .rules import Heads, build, need, rules

_L = r"(?:^|\.)h\.(?P<layer>\d+)\."
RULES = rules(
    (_L + r"attn\.c_attn\.", "qkv", "decoder", "self"),
    (_L + r"attn\.c_proj\.", "o", "decoder", "self"),
    (_L + r"attn\.(?:masked_)?bias$", "other", "decoder", None, "causal-mask buffer"),
    (_L + r"mlp\.c_fc\.", "mlp_in", "decoder"),
    (_L + r"mlp\.c_proj\.", "mlp_out", "decoder"),
    (_L + r"ln_[12]\.", "norm", "decoder"),
    (r"(?:^|\.)wte\.weight$", "embed", "decoder"),
    (r"(?:^|\.)wpe\.weight$", "embed", "decoder"),
    (r"(?:^|\.)ln_f\.", "norm", "decoder"),
    (r"(?:^|\.)lm_head\.weight$", "unembed", None),
    (r"(?:^|\.)(?:score|multiple_choice_head|qa_outputs)\.", "other", None, None, "task head"),
)
#: the Conv1D weights (stored (in, out)), transposed by the loader's canonical copy
CONV1D = r"(?:^|\.)h\.\d+\.(?:attn\.c_attn|attn\.c_proj|mlp\.c_fc|mlp\.c_proj)\.weight$"


def adapt(tensors, config) -> list:
    """Map GPT-2 tensor names to catalog entries (see the module docstring)."""
    d, h = need(config, "gpt2", "n_embd", "n_head")
    for name, info in tensors.items():
        if name.endswith("attn.c_attn.weight") and tuple(info.shape) == (d, 3 * d) and d != 3 * d:
            raise ValueError(f"weights: {name!r} has GPT-2's stored Conv1D layout (in, out) = {tuple(info.shape)}; "
                             "load the model with geolip_lib.models.load (it writes the (out, in) copy the "
                             "catalog reads) and catalog lm.weights_dir")
    return build(tensors, RULES, lambda stack, attn: Heads(h, d // h, h, d))
