"""GPT-2 (``Conv1D`` projections, fused ``c_attn``): one ``decoder`` stack, learned absolute positions.

The checkpoint stores every ``Conv1D`` weight as ``(in, out)``; :func:`canonical_tensor` transposes
them to ``(out, in)`` (the layout of ``nn.Linear`` and of every other adapter), so the fused
``c_attn`` becomes [W_q; W_k; W_v] of shape ``(3·D, D)``: the loader writes that copy once to
``.cache/safetensors/`` and the weight battery and QK operators read it (TransformerLens converts
GPT-2 the same way).

Weight names (:func:`adapt`: the catalog's rules)
-------------------------------------------------
GPT-2 adapter (HF ``GPT2Model`` / ``GPT2LMHeadModel``), in the canonical layout the loader writes.

GPT-2 stores its projections as ``Conv1D`` weights ``(in, out)``; the loader writes them
transposed to ``(out, in)`` like every ``nn.Linear`` (the spec's ``canonical_tensor``),
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

from ..checkpoints.rules import Heads, build, need, rules
from .hf import blocks_at, canonical_by_name, causal_hidden, d_heads
from .spec import FamilySpec, Sizes

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


CAUSAL_IDS = dict(bos_token_id=101, eos_token_id=102, pad_token_id=0)  # the minilm tokenizer's [CLS]/[SEP]/[PAD]


def _sizes(cfg: dict) -> Sizes:
    d, n, h, hd, kv = d_heads(cfg, "n_embd", "n_head", layers_key="n_layer")
    return Sizes(d_model=d, n_layers=n, n_heads=h, head_dim=hd, n_kv_heads=kv)


GPT2 = FamilySpec(
    name="gpt2", stacks=("decoder",), is_text=True, is_generative=True, auto_class="AutoModelForCausalLM",
    model_types=("gpt2",), sizes=_sizes, adapt=adapt, text_hidden=causal_hidden,
    locate_blocks=blocks_at({"decoder": "h", "text": "h"}, "gpt2"), hook_stack={"encoder": "decoder"},
    encoder=lambda model: model.base_model, encoder_kwargs={"use_cache": False}, objective="causal_completion",
    tiny_defaults=dict(model_type="gpt2", n_embd=32, n_layer=2, n_head=4, n_inner=64, n_positions=128,
                       resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, **CAUSAL_IDS),
    tiny_tokenizer="minilm",
    canonical_tensor=canonical_by_name(CONV1D, lambda t, cfg: t.t().contiguous()),
    qk_statement="GPT-2: scores are (x W_q^T + b_q)(x W_k^T + b_k)^T / sqrt(head_dim); the bilinear form holds "
                 "the x W_q^T W_k x term, the bias terms are extra; no position term inside attention.",
)
