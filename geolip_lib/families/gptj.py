"""GPT-J (separate q/k/v without bias, rotary on ``rotary_dim`` dimensions, parallel block): one ``decoder`` stack.

Weight names (:func:`adapt`: the catalog's rules)
-------------------------------------------------
GPT-J adapter (HF ``GPTJModel`` / ``GPTJForCausalLM``): separate q/k/v without biases, parallel block.

Names (under ``transformer.``)::

    wte.weight                                     embed
    h.{i}.attn.{q,k,v}_proj, h.{i}.attn.out_proj   q / k / v / o (self, decoder)
    h.{i}.mlp.fc_in / mlp.fc_out                   mlp_in / mlp_out
    h.{i}.ln_1, ln_f                               norm
    lm_head.{weight,bias}                          unembed

Scores: ``q·k / sqrt(head_dim)`` after rotary embedding (interleaved pairs) of the first
``rotary_dim`` dimensions of q and k (RoPE: not in the bilinear form).
"""
from __future__ import annotations

from ..checkpoints.rules import Heads, build, need, rules
from .gpt2 import CAUSAL_IDS
from .hf import blocks_at, causal_hidden, d_heads
from .spec import FamilySpec, Sizes

_L = r"(?:^|\.)h\.(?P<layer>\d+)\."
RULES = rules(
    (_L + r"attn\.q_proj\.", "q", "decoder", "self"),
    (_L + r"attn\.k_proj\.", "k", "decoder", "self"),
    (_L + r"attn\.v_proj\.", "v", "decoder", "self"),
    (_L + r"attn\.out_proj\.", "o", "decoder", "self"),
    (_L + r"attn\.(?:bias|masked_bias|embed_positions)$", "other", "decoder", None, "buffer"),
    (_L + r"mlp\.fc_in\.", "mlp_in", "decoder"),
    (_L + r"mlp\.fc_out\.", "mlp_out", "decoder"),
    (_L + r"ln_1\.", "norm", "decoder"),
    (r"(?:^|\.)wte\.weight$", "embed", "decoder"),
    (r"(?:^|\.)ln_f\.", "norm", "decoder"),
    (r"(?:^|\.)lm_head\.", "unembed", None),
    (r"(?:^|\.)(?:score|qa_outputs)\.", "other", None, None, "task head"),
)


def adapt(tensors, config) -> list:
    """Map GPT-J tensor names to catalog entries (see the module docstring)."""
    d, h = need(config, "gptj", "n_embd", "n_head")
    return build(tensors, RULES, lambda stack, attn: Heads(h, d // h, h, d))


def _sizes(cfg: dict) -> Sizes:
    d, n, h, hd, kv = d_heads(cfg, "n_embd", "n_head", layers_key="n_layer")
    return Sizes(d_model=d, n_layers=n, n_heads=h, head_dim=hd, n_kv_heads=kv)


GPTJ = FamilySpec(
    name="gptj", stacks=("decoder",), is_text=True, is_generative=True, auto_class="AutoModelForCausalLM",
    model_types=("gptj",), sizes=_sizes, adapt=adapt, text_hidden=causal_hidden,
    locate_blocks=blocks_at({"decoder": "h", "text": "h"}, "gptj"), hook_stack={"encoder": "decoder"},
    encoder=lambda model: model.base_model, encoder_kwargs={"use_cache": False}, objective="causal_completion",
    tiny_defaults=dict(model_type="gptj", n_embd=32, n_layer=2, n_head=4, n_inner=64, rotary_dim=4, n_positions=128,
                       resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, tie_word_embeddings=False, **CAUSAL_IDS),
    tiny_tokenizer="minilm",
    left_out={"*": "RoPE"},
    qk_statement="GPT-J: RoPE (interleaved pairs) rotates the first rotary_dim dimensions of q and k by position; "
                 "the bilinear form W_q^T W_k is the score at zero offset and leaves the rotation out.",
)
