"""Decoder-only LM adapter (Llama, Mistral, Qwen2/3, Qwen3.5 text, Gemma) with grouped-query attention.

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

from .rules import fused_views
from .schema import Entry, attn_entry, get_int, split_fused

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
