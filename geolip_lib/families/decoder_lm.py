"""Decoder-only causal LMs (Llama, Mistral, Qwen2/3/3.5, Gemma, Phi-3, OLMo 2): one ``decoder`` stack, GQA.

Tiny models use Qwen3.5 (``model_type: qwen3_5_text``): hybrid Gated-DeltaNet
``linear_attention`` + gated GQA ``full_attention`` layers, ``num_key_value_heads <
num_attention_heads``.

Weight names (:func:`adapt`: the catalog's rules)
-------------------------------------------------
Decoder-only LM adapter (Llama, Mistral, Qwen2/3, Qwen3.5 text, Gemma) with grouped-query attention.

Names (``model.`` or ``model.language_model.`` prefix)::

    model.embed_tokens.weight                               embed
    model.layers.{i}.self_attn.{q,k,v,o}_proj.{weight,bias} q / k / v / o (self, decoder)
    model.layers.{i}.self_attn.{q,k}_norm.weight            norm (per-head q/k RMSNorm; of=q/k)
    model.layers.{i}.mlp.{gate,up,down}_proj.weight         mlp_gate / mlp_in / mlp_out
    model.layers.{i}.{input,post_attention}_layernorm       norm
    model.layers.{i}.linear_attn.*                          other, attn="linear" (Qwen3.5 Gated DeltaNet)
    model.norm.weight                                       norm
    lm_head.weight                                          unembed

GQA: query head ``h`` reads kv head ``h // (num_attention_heads // num_key_value_heads)``.
Mixtures of experts (Mixtral, Qwen2-MoE, Qwen3-MoE), as ``save_pretrained`` writes them::

    model.layers.{i}.block_sparse_moe.experts.{e}.{w1,w3,w2}     mlp_gate / mlp_in / mlp_out, expert=e
    model.layers.{i}.mlp.experts.{e}.{gate,up,down}_proj         mlp_gate / mlp_in / mlp_out, expert=e
    model.layers.{i}.mlp.shared_expert.{gate,up,down}_proj       the dense MLP of the layer (expert None)
    model.layers.{i}.{block_sparse_moe,mlp}.gate, shared_expert_gate   other (expert router)

Every expert is its own MLP block (``MLPBlock.expert``): the battery measures each expert and
its tables pool the experts of a role, the expert index kept in the rows.

Qwen3.5 full-attention layers output query and gate interleaved per head
(``q_proj`` has 2·heads·head_dim rows): the query entry has ``head_stride = 2·head_dim``.
"""
from __future__ import annotations

import re
from dataclasses import replace


from ..checkpoints.rules import fused_views
from ..checkpoints.schema import Entry, attn_entry, get_int, split_fused
from ..validation import fail
from .spec import FamilySpec, Sizes, hidden_to_cpu
from ..lazy import lazy

nn = lazy("torch.nn")

_LAYER = re.compile(r"^(?:.*\.)?layers\.(?P<layer>\d+)\.(?P<rest>.+)$")
_ATTN = {"q_proj": "q", "k_proj": "k", "v_proj": "v", "o_proj": "o"}
_MLP = {"gate_proj": "mlp_gate", "up_proj": "mlp_in", "down_proj": "mlp_out",
        "w1": "mlp_gate", "w3": "mlp_in", "w2": "mlp_out"}


#: model_types whose RMSNorm scales by ``1 + weight`` (weights initialised at 0): the q/k norm gain's offset
ONE_PLUS_NORM = ("gemma", "gemma2", "gemma3", "gemma3_text", "qwen3_5", "qwen3_5_text", "qwen3_next")


def qk_norm_offset(config) -> float:
    """1.0 where the q/k norm multiplies by ``1 + weight`` (Gemma, Qwen3.5, Qwen3-Next), else 0.0 (Qwen3, OLMo 2)."""
    mt = str(config.get("model_type") or (config.get("text_config") or {}).get("model_type") or "")
    return 1.0 if mt in ONE_PLUS_NORM else 0.0


def adapt(tensors, config) -> list:
    """Map decoder-LM tensor names to catalog entries (see the module docstring)."""
    d = get_int(config, "hidden_size")
    n_heads = get_int(config, "num_attention_heads")
    if d is None or n_heads is None:
        raise ValueError("config: decoder_lm adapter needs hidden_size and num_attention_heads")
    n_kv = get_int(config, "num_key_value_heads", default=n_heads)
    hd = get_int(config, "head_dim") or d // n_heads
    if n_heads % n_kv:
        raise ValueError(f"config: num_attention_heads={n_heads} is not a multiple of num_key_value_heads={n_kv}")
    out = []
    for name, info in tensors.items():
        shape = tuple(info.shape)
        m = _LAYER.match(name)
        if m and ("language_model" in name or name.startswith("model.layers") or name.startswith("layers")):
            layer, rest = int(m["layer"]), m["rest"]
            parts = rest.split(".")
            if parts[0] == "self_attn" and parts[1] in _ATTN:
                role = _ATTN[parts[1]]
                if parts[-1] == "weight":
                    stride = None
                    if role == "q" and shape[0] == 2 * n_heads * hd:
                        stride = 2 * hd  # gated attention (Qwen3.5 / Qwen3-Next): [query_h | gate_h] per head
                    out.append(attn_entry(name, info, role, stack="decoder", attn="self", layer=layer,
                                          n_heads=n_heads, head_dim=hd, n_kv_heads=n_kv, expect_in=d,
                                          head_stride=stride))
                else:
                    out.append(Entry(name, "bias", "decoder", "self", layer, shape, info.dtype, of=role))
                continue
            if parts[0] == "self_attn" and parts[1] == "qkv_proj":  # Phi-3: [W_q; W_k; W_v] in one tensor
                e = Entry(name, "qkv" if parts[-1] == "weight" else "bias", "decoder", "self", layer, shape,
                          info.dtype, n_heads=n_heads, head_dim=hd, n_kv_heads=n_kv,
                          of="qkv" if parts[-1] != "weight" else None)
                out.append(e)
                out.extend(fused_views(e, (("q", n_heads * hd), ("k", n_kv * hd), ("v", n_kv * hd))))
                continue
            if parts[0] == "mlp" and parts[1] == "gate_up_proj" and parts[-1] == "weight" and len(shape) == 2:
                parent = Entry(name, "other", "decoder", None, layer, shape, info.dtype,
                               note="fused gate and up projections")  # Phi-3, GLM-4: gate rows first
                out.append(parent)
                out.extend(replace(v, note=None) for v in split_fused(parent, ("mlp_gate", "mlp_in")))
                continue
            if parts[0] == "self_attn" and parts[1] in ("q_norm", "k_norm"):
                out.append(Entry(name, "norm", "decoder", "self", layer, shape, info.dtype, of=parts[1][0]))
                continue
            if parts[0] in ("mlp", "block_sparse_moe") and parts[1] == "experts" and len(parts) >= 4 \
                    and parts[2].isdigit() and parts[3] in _MLP:  # one expert of a mixture (Mixtral, Qwen2-MoE)
                out.append(Entry(name, _MLP[parts[3]] if parts[-1] == "weight" else "bias", "decoder", None,
                                 layer, shape, info.dtype, expert=int(parts[2])))
                continue
            if parts[0] in ("mlp", "block_sparse_moe") and parts[1] in ("gate", "shared_expert_gate", "router"):
                out.append(Entry(name, "other", "decoder", None, layer, shape, info.dtype, note="expert router"))
                continue
            if parts[0] in ("mlp", "block_sparse_moe") and parts[1] == "experts":
                out.append(Entry(name, "other", "decoder", None, layer, shape, info.dtype,
                                 note="experts fused in one 3-D tensor (save_pretrained writes them per expert)"))
                continue
            if parts[0] == "mlp" and parts[1] == "shared_expert" and len(parts) >= 3 and parts[2] in _MLP:
                out.append(Entry(name, _MLP[parts[2]] if parts[-1] == "weight" else "bias", "decoder", None,
                                 layer, shape, info.dtype))  # the shared expert: the dense MLP of the layer
                continue
            if parts[0] == "mlp" and parts[1] in _MLP:
                out.append(Entry(name, _MLP[parts[1]] if parts[-1] == "weight" else "bias", "decoder", None,
                                 layer, shape, info.dtype))
                continue
            if parts[0].endswith("layernorm") or parts[0].endswith("_norm") or parts[0] == "norm":
                out.append(Entry(name, "norm" if parts[-1] == "weight" else "bias", "decoder", None, layer,
                                 shape, info.dtype))
                continue
            if parts[0] == "linear_attn":
                out.append(Entry(name, "other", "decoder", None, layer, shape, info.dtype,
                                 note="linear attention (Gated DeltaNet)"))
                continue
            out.append(Entry(name, "other", "decoder", None, layer, shape, info.dtype))
            continue
        if re.search(r"(^|\.)embed_tokens\.weight$", name) and "visual" not in name:
            out.append(Entry(name, "embed", "decoder", None, None, shape, info.dtype))
        elif re.search(r"(^|\.)lm_head\.weight$", name):
            out.append(Entry(name, "unembed", None, None, None, shape, info.dtype))
        elif re.search(r"^(?:model\.)?(?:language_model\.)?norm\.weight$", name):
            out.append(Entry(name, "norm", "decoder", None, None, shape, info.dtype))
        elif re.search(r"(^|\.)(visual|vision_tower|mtp)\.", name):
            out.append(Entry(name, "other", None, None, None, shape, info.dtype,
                             note="vision tower" if "vis" in name else "multi-token prediction head"))
        else:
            out.append(Entry(name, "other", None, None, None, shape, info.dtype))
    return out


_CAUSAL_IDS = dict(bos_token_id=101, eos_token_id=102, pad_token_id=0)  # the minilm tokenizer's [CLS]/[SEP]/[PAD]
_BASE = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             head_dim=8, max_position_embeddings=256, attention_dropout=0.0, **_CAUSAL_IDS)
_MOE = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16)
#: model_type -> its tiny config: every decoder the family covers by a config check alone (same tensor names)
TINY_TYPES: dict = {mt: dict(_BASE, **extra) for mt, extra in {
    "llama": {}, "mistral": {}, "qwen2": {}, "qwen3": {}, "gemma": {}, "gemma2": {}, "phi3": {}, "olmo2": {},
    "gemma3_text": {"sliding_window": 16}, "olmo": {}, "olmo3": {}, "granite": {}, "smollm3": {}, "helium": {},
    "glm4": {}, "cohere": {}, "cohere2": {}, "exaone4": {}, "seed_oss": {}, "arcee": {}, "ministral": {},
    "mixtral": {"num_local_experts": 4, "num_experts_per_tok": 2},
    "qwen2_moe": dict(_MOE, shared_expert_intermediate_size=32, decoder_sparse_step=1),
    "qwen3_moe": dict(_MOE, decoder_sparse_step=1),
}.items()}


def _sizes(cfg: dict) -> Sizes:
    cfg = {**(cfg.get("text_config") or {}), **cfg} if isinstance(cfg.get("text_config"), dict) and \
        "hidden_size" not in cfg else cfg
    d, h = int(cfg["hidden_size"]), int(cfg["num_attention_heads"])
    return Sizes(d_model=d, n_layers=int(cfg["num_hidden_layers"]), n_heads=h,
                 head_dim=int(cfg.get("head_dim") or d // h), n_kv_heads=int(cfg.get("num_key_value_heads") or h))


def _text_hidden(model, stack, ids, mask, dec) -> list:
    """Per-layer hidden states from the base model under the LM head (the same states, no
    vocabulary logits: a (B, S, vocab) tensor, 1.2 GB for 32 x 64 tokens of a 152k vocabulary)."""
    out = encoder(model)(input_ids=ids, attention_mask=mask, output_hidden_states=True, use_cache=False)
    return hidden_to_cpu(out.hidden_states)


def encoder(model: nn.Module) -> nn.Module:
    """The base model under the LM head (final hidden state after the last norm)."""
    return model.model if hasattr(model, "model") and hasattr(model.model, "layers") else model


def locate_blocks(model: nn.Module, stack: str):
    if stack not in ("decoder", "text"):
        fail("stack", f"decoder LMs have one stack 'decoder', got {stack!r}")
    base = encoder(model)
    if not hasattr(base, "layers"):
        fail("model", "decoder LM without a .layers ModuleList (unsupported architecture)")
    return base, base.layers


_QWEN35 = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
               head_dim=8, linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8,
               linear_value_head_dim=8, max_position_embeddings=256,
               layer_types=["linear_attention", "full_attention", "linear_attention", "full_attention"])
TINY_TYPES["qwen3_5"] = dict(text_config=dict(_QWEN35, **_CAUSAL_IDS), tie_word_embeddings=True,
                             vision_config=dict(depth=1, hidden_size=32, num_heads=4, intermediate_size=64,
                                                out_hidden_size=32))
TINY_TYPES["qwen3_next"] = dict(_QWEN35, **_MOE, **_CAUSAL_IDS, shared_expert_intermediate_size=32,
                                decoder_sparse_step=1)

DECODER_LM = FamilySpec(
    name="decoder_lm", stacks=("decoder",), is_text=True, is_generative=True,
    auto_class="AutoModelForCausalLM",
    model_types=tuple(("llama", "mistral", "qwen2", "qwen3", "qwen3_5", "qwen3_5_text", "qwen3_next", "gemma", "gemma2",
                       "phi3", "olmo2") + tuple(k for k in TINY_TYPES if k not in ("qwen3_5_text", "qwen3_5", "qwen3_next",
                                                                     "llama", "mistral", "qwen2", "qwen3", "gemma",
                                                                     "gemma2", "phi3", "olmo2"))),
    sizes=_sizes, adapt=adapt, qk_norm_offset=qk_norm_offset, text_hidden=_text_hidden,
    locate_blocks=locate_blocks, hook_stack={"encoder": "decoder"},
    encoder=encoder, encoder_kwargs={"use_cache": False}, objective="causal_completion",
    tiny_defaults=dict(model_type="qwen3_5_text", hidden_size=32, intermediate_size=64, num_hidden_layers=4,
                       num_attention_heads=4, num_key_value_heads=2, head_dim=8, linear_num_key_heads=2,
                       linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=8,
                       layer_types=["linear_attention", "full_attention", "linear_attention", "full_attention"],
                       max_position_embeddings=256, tie_word_embeddings=True),
    tiny_tokenizer="minilm", tiny_model_types=TINY_TYPES,
    left_out={"*": "RoPE", "gemma2": "RoPE, soft-cap",
              **{mt: "RoPE, q/k rms" for mt in ("qwen3", "qwen3_5", "qwen3_5_text", "qwen3_next", "qwen3_moe", "olmo2",
                                                 "olmo3", "gemma3_text", "exaone4")}},
    qk_statement="Decoder LMs: RoPE rotates q and k by position before q.k * scale (1/sqrt(head_dim), Gemma: "
                 "query_pre_attn_scalar^-1/2); the bilinear form W_q^T W_k (with the biases of Qwen2) is the score "
                 "at zero offset and leaves the rotation out. With per-head q/k RMSNorm (Qwen3, Qwen3.5, OLMo 2, "
                 "Gemma 3) the gains are folded into W_q and W_k (diag(g_q) W_q, diag(g_k) W_k) where the catalog "
                 "reads them; the per-token 1/rms(q), 1/rms(k) factors are not bilinear and are left out. Gemma 2 "
                 "soft-caps the scores (tanh(s / c) * c), also left out; Granite scales by attention_multiplier.",
)
