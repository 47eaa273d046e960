"""What a model's tensor shapes say about its config: one table per layout, for :mod:`geolip_lib.models.rebuild`.

A file written in another format (ONNX, CTranslate2) keeps the tensors but rarely the config; the sizes are in the
shapes (a vocabulary is the rows of the embedding table, a layer count the largest layer index plus one). This
module is data, not code per family: each :class:`Table` lists

* ``rows``: ``(field, key regex, dim, how)``; the first row whose regex matches a key (searched after ``^`` or a
  dot, so a head's prefix such as ``bert.`` or ``model.`` does not matter) gives ``field`` from that key's shape
  ``[dim]``, turned by ``how`` (:data:`HOW`); the regexes accept both spellings where transformers 5 renamed
  (4.x checkpoints ``attention.attention.query`` / 5.x ``attention.q_proj``; per-expert / fused experts);
* ``layers``: ``(field, regex with the layer index as group 1)``: the count is the largest index plus one;
* ``flags``: ``(field, regex, value when a key matches, value when none does)``: structure seen as presence;
* ``ask``: fields no shape tells (the head count; ALBERT's shared-layer count) that must be given; ``ask_if``
  the same, only when a key matches (the key heads of a hybrid stack's linear attention);
* ``layer_types``: ``(field, layer regex, ((regex of the rest, type), ...))`` for hybrid stacks;
* ``forward``: fields a forward depends on that no shape shows (norm epsilon, rotary base, activation ...):
  they keep transformers' defaults unless given, and the notes name them.

Every model_type of a registry family with a transformers class has a table (the decoder-only LMs of
``decoder_lm`` share one); tests/unit/families/test_shapes.py infers each tiny config back from its shapes.

A dotted field (``text_config.hidden_size``) is a field of a sub-config. Whatever a table misses is caught by
:func:`geolip_lib.models.rebuild.infer_config`, which builds the model on the meta device and compares every shape.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

__all__ = ["HOW", "ONLY_IF_KNOWN", "TABLES", "Table", "table_of"]

#: how a shape becomes a field: None (as is); ("add", k); ("div", k); ("per", f): divided by field f (the head
#: width from q rows); ("grid", f, n): f * sqrt(rows - n) (an image size from a patch grid plus n extra tokens);
#: ("fused_kv", h, d): (rows / d - h) / 2 (the kv heads of a fused q|k|v projection with h heads of width d; d None:
#: hidden / h); ("lin_k", m): (rows - m * value heads * value width) / (2 * key heads) (gated delta-net's q|k|v[|z])
HOW = ("add", "div", "per", "grid", "fused_kv", "lin_k")


@dataclass(frozen=True)
class Table:
    """One layout's rules (see the module docstring)."""

    rows: tuple = ()
    layers: tuple = ()
    flags: tuple = ()
    ask: tuple = ()
    layer_types: Optional[tuple] = None
    #: ``(field, regex)``: asked for only when a key matches (a hybrid stack's linear-attention key heads)
    ask_if: tuple = ()
    #: fields a forward depends on that a shape cannot tell, named in the notes when they keep the default
    forward: tuple = ()


#: fields two model_types spell differently (read from the same key): kept only where the config knows them
#: (``head_dim`` is always kept: attention classes read it with ``getattr`` even where the config has no default)
ONLY_IF_KNOWN = ("num_local_experts", "num_experts", "moe_intermediate_size", "shared_expert_intermediate_size",
                 "embedding_size")
_DEC_FORWARD = ("rms_norm_eps", "rope_theta", "hidden_act", "tie_word_embeddings", "max_position_embeddings",
                "sliding_window", "num_experts_per_tok", "decoder_sparse_step")

DECODER_LM = Table(
    rows=(
        ("vocab_size", r"embed_tokens\.weight$", 0, None),
        ("hidden_size", r"embed_tokens\.weight$", 1, None),
        ("intermediate_size", r"layers\.\d+\.mlp\.gate_proj\.weight$", 0, None),
        ("intermediate_size", r"layers\.\d+\.mlp\.up_proj\.weight$", 0, None),
        ("intermediate_size", r"layers\.\d+\.mlp\.gate_up_proj\.weight$", 0, ("div", 2)),
        ("intermediate_size", r"experts\.0\.w1\.weight$", 0, None),
        ("head_dim", r"layers\.\d+\.self_attn\.q_proj\.weight$", 0, ("per", "num_attention_heads")),
        ("num_key_value_heads", r"layers\.\d+\.self_attn\.k_proj\.weight$", 0, ("per", "head_dim")),
        ("num_key_value_heads", r"layers\.\d+\.self_attn\.qkv_proj\.weight$", 0,
         ("fused_kv", "num_attention_heads", "head_dim")),
        ("num_local_experts", r"block_sparse_moe\.gate\.weight$", 0, None),
        ("num_local_experts", r"layers\.\d+\.mlp\.gate\.weight$", 0, None),
        ("num_experts", r"layers\.\d+\.mlp\.gate\.weight$", 0, None),
        ("num_experts", r"mlp\.experts\.gate_up_proj$", 0, None),
        ("moe_intermediate_size", r"mlp\.experts\.0\.gate_proj\.weight$", 0, None),
        ("moe_intermediate_size", r"mlp\.experts\.gate_up_proj$", 1, ("div", 2)),
        ("intermediate_size", r"mlp\.experts\.gate_up_proj$", 1, ("div", 2)),
        ("shared_expert_intermediate_size", r"mlp\.shared_expert\.gate_proj\.weight$", 0, None),
        ("linear_num_value_heads", r"linear_attn\.A_log$", 0, None),
        ("linear_value_head_dim", r"linear_attn\.norm\.weight$", 0, None),
        ("linear_key_head_dim", r"linear_attn\.in_proj_qkv\.weight$", 0, ("lin_k", 1)),
        ("linear_key_head_dim", r"linear_attn\.in_proj_qkvz\.weight$", 0, ("lin_k", 2)),
    ),
    ask_if=(("linear_num_key_heads", r"linear_attn\.A_log$"),),
    layers=(("num_hidden_layers", rf"(?<!visual\.)layers\.(\d+)\."),),
    ask=("num_attention_heads",),
    layer_types=("layer_types", r"layers\.(\d+)\.(.+)$",
                 ((r"^linear_attn\.", "linear_attention"), (r"^self_attn\.", "full_attention"))),
    forward=_DEC_FORWARD,
)

# gated attention (Qwen3.5, Qwen3-Next): q_proj holds the queries and their gates (2 x heads x head width), so
# the head width comes from the per-head q_norm
DECODER_GATED = replace(DECODER_LM, rows=(("head_dim", r"layers\.\d+\.self_attn\.q_norm\.weight$", 0, None),)
                        + DECODER_LM.rows)


def _under(t: Table, sub: str) -> Table:
    """``t`` with every field in the sub-config ``sub`` (a multimodal model's text stack)."""
    def how(h):
        return h if h is None or h[0] not in ("per", "fused_kv") else (h[0],) + tuple(
            f"{sub}.{x}" if isinstance(x, str) else x for x in h[1:])
    return replace(t, rows=tuple((f"{sub}.{f}", rx, d, how(h)) for f, rx, d, h in t.rows),
                   layers=tuple((f"{sub}.{f}", rx) for f, rx in t.layers), ask=tuple(f"{sub}.{f}" for f in t.ask),
                   ask_if=tuple((f"{sub}.{f}", rx) for f, rx in t.ask_if),
                   layer_types=(f"{sub}.{t.layer_types[0]}",) + t.layer_types[1:],
                   forward=tuple(f"{sub}.{f}" for f in t.forward))


_QV = "vision_config"
QWEN3_5 = _under(DECODER_GATED, "text_config")
QWEN3_5 = replace(QWEN3_5, rows=QWEN3_5.rows + (
    (f"{_QV}.hidden_size", r"visual\.blocks\.\d+\.attn\.proj\.weight$", 0, None),
    (f"{_QV}.intermediate_size", r"visual\.blocks\.\d+\.mlp\.linear_fc1\.weight$", 0, None),
    (f"{_QV}.out_hidden_size", r"visual\.merger\.linear_fc2\.weight$", 0, None),
    (f"{_QV}.num_position_embeddings", r"visual\.pos_embed\.weight$", 0, None),
    (f"{_QV}.in_channels", r"visual\.patch_embed\.proj\.weight$", 1, None),
    (f"{_QV}.temporal_patch_size", r"visual\.patch_embed\.proj\.weight$", 2, None),
    (f"{_QV}.patch_size", r"visual\.patch_embed\.proj\.weight$", 3, None)),
    layers=QWEN3_5.layers + ((f"{_QV}.depth", r"visual\.blocks\.(\d+)\."),),
    ask=QWEN3_5.ask + (f"{_QV}.num_heads",))

BERT = Table(
    rows=(
        ("vocab_size", r"embeddings\.word_embeddings\.weight$", 0, None),
        ("embedding_size", r"embeddings\.word_embeddings\.weight$", 1, None),
        ("hidden_size", r"encoder\.layer\.\d+\.attention\.self\.query\.weight$", 0, None),
        ("max_position_embeddings", r"embeddings\.position_embeddings\.weight$", 0, None),
        ("type_vocab_size", r"embeddings\.token_type_embeddings\.weight$", 0, None),
        ("intermediate_size", r"encoder\.layer\.\d+\.intermediate\.dense\.weight$", 0, None),
    ),
    layers=(("num_hidden_layers", r"encoder\.layer\.(\d+)\."),),
    ask=("num_attention_heads",),
    forward=("layer_norm_eps", "hidden_act", "position_embedding_type", "pad_token_id"),
)

MPNET = Table(
    rows=(
        ("vocab_size", r"embeddings\.word_embeddings\.weight$", 0, None),
        ("hidden_size", r"embeddings\.word_embeddings\.weight$", 1, None),
        ("max_position_embeddings", r"embeddings\.position_embeddings\.weight$", 0, None),
        ("intermediate_size", r"encoder\.layer\.\d+\.intermediate\.dense\.weight$", 0, None),
        ("relative_attention_num_buckets", r"encoder\.relative_attention_bias\.weight$", 0, None),
    ),
    layers=(("num_hidden_layers", r"encoder\.layer\.(\d+)\."),),
    ask=("num_attention_heads",),
    forward=("layer_norm_eps", "hidden_act", "pad_token_id"),
)

DEBERTA_V2 = Table(
    rows=(
        ("vocab_size", r"embeddings\.word_embeddings\.weight$", 0, None),
        ("hidden_size", r"embeddings\.word_embeddings\.weight$", 1, None),
        ("max_position_embeddings", r"embeddings\.position_embeddings\.weight$", 0, None),
        ("type_vocab_size", r"embeddings\.token_type_embeddings\.weight$", 0, None),
        ("intermediate_size", r"encoder\.layer\.\d+\.intermediate\.dense\.weight$", 0, None),
        ("position_buckets", r"encoder\.rel_embeddings\.weight$", 0, ("div", 2)),
    ),
    layers=(("num_hidden_layers", r"encoder\.layer\.(\d+)\."),),
    flags=(("relative_attention", r"encoder\.rel_embeddings\.weight$", True, False),
           ("position_biased_input", r"embeddings\.position_embeddings\.weight$", True, False),
           ("norm_rel_ebd", r"encoder\.LayerNorm\.weight$", "layer_norm", "none"),
           ("share_att_key", r"attention\.self\.pos_key_proj\.weight$", False, True)),
    ask=("num_attention_heads",),
    forward=("pos_att_type", "max_relative_positions", "max_position_embeddings", "layer_norm_eps", "hidden_act"),
)

ALBERT = Table(
    rows=(
        ("vocab_size", r"embeddings\.word_embeddings\.weight$", 0, None),
        ("embedding_size", r"embeddings\.word_embeddings\.weight$", 1, None),
        ("max_position_embeddings", r"embeddings\.position_embeddings\.weight$", 0, None),
        ("type_vocab_size", r"embeddings\.token_type_embeddings\.weight$", 0, None),
        ("hidden_size", r"encoder\.embedding_hidden_mapping_in\.weight$", 0, None),
        ("intermediate_size", r"albert_layers\.\d+\.ffn\.weight$", 0, None),
    ),
    layers=(("num_hidden_groups", r"albert_layer_groups\.(\d+)\."), ("inner_group_num", r"albert_layers\.(\d+)\.")),
    # the layers share weights: how many times the group runs is in no shape
    ask=("num_attention_heads", "num_hidden_layers"),
    forward=("layer_norm_eps", "hidden_act"),
)

DISTILBERT = Table(
    rows=(
        ("vocab_size", r"embeddings\.word_embeddings\.weight$", 0, None),
        ("dim", r"embeddings\.word_embeddings\.weight$", 1, None),
        ("max_position_embeddings", r"embeddings\.position_embeddings\.weight$", 0, None),
        ("hidden_dim", r"layer\.\d+\.ffn\.lin1\.weight$", 0, None),
    ),
    layers=(("n_layers", r"transformer\.layer\.(\d+)\."),),
    ask=("n_heads",),
    forward=("activation", "sinusoidal_pos_embds"),
)

T5 = Table(
    rows=(
        ("vocab_size", r"shared\.weight$", 0, None),
        ("vocab_size", r"embed_tokens\.weight$", 0, None),
        ("d_model", r"shared\.weight$", 1, None),
        ("d_model", r"embed_tokens\.weight$", 1, None),
        ("d_ff", r"DenseReluDense\.wi(?:_0)?\.weight$", 0, None),
        ("d_kv", r"layer\.0\.SelfAttention\.q\.weight$", 0, ("per", "num_heads")),
        ("relative_attention_num_buckets", r"relative_attention_bias\.weight$", 0, None),
    ),
    layers=(("num_layers", r"encoder\.block\.(\d+)\."), ("num_decoder_layers", r"decoder\.block\.(\d+)\.")),
    flags=(("feed_forward_proj", r"DenseReluDense\.wi_0\.weight$", "gated-gelu", "relu"),),
    ask=("num_heads",),
    forward=("relative_attention_max_distance", "layer_norm_epsilon", "tie_word_embeddings"),
)

BART = Table(
    rows=(
        ("vocab_size", r"shared\.weight$", 0, None),
        ("vocab_size", r"embed_tokens\.weight$", 0, None),
        ("d_model", r"shared\.weight$", 1, None),
        ("d_model", r"embed_tokens\.weight$", 1, None),
        ("encoder_ffn_dim", r"encoder\.layers\.\d+\.fc1\.weight$", 0, None),
        ("decoder_ffn_dim", r"decoder\.layers\.\d+\.fc1\.weight$", 0, None),
    ),
    layers=(("encoder_layers", r"encoder\.layers\.(\d+)\."), ("decoder_layers", r"decoder\.layers\.(\d+)\.")),
    ask=("encoder_attention_heads", "decoder_attention_heads"),
    forward=("activation_function", "scale_embedding", "normalize_before", "max_position_embeddings"),
)
# learned positions with BART's offset of 2 rows (mBART too); Pegasus / Marian positions are sinusoidal, same rows
BART_LEARNED = Table(rows=BART.rows + (("max_position_embeddings", r"decoder\.embed_positions\.weight$", 0,
                                          ("add", -2)),),
                     layers=BART.layers, ask=BART.ask, forward=BART.forward[:-1])
BART_SINUSOID = Table(rows=BART.rows + (("max_position_embeddings", r"decoder\.embed_positions\.weight$", 0, None),),
                      layers=BART.layers, ask=BART.ask, forward=BART.forward[:-1])

WHISPER = Table(
    rows=(
        ("vocab_size", r"decoder\.embed_tokens\.weight$", 0, None),
        ("d_model", r"decoder\.embed_tokens\.weight$", 1, None),
        ("num_mel_bins", r"encoder\.conv1\.weight$", 1, None),
        ("max_source_positions", r"encoder\.embed_positions\.weight$", 0, None),
        ("max_target_positions", r"decoder\.embed_positions\.weight$", 0, None),
        ("encoder_ffn_dim", r"encoder\.layers\.\d+\.fc1\.weight$", 0, None),
        ("decoder_ffn_dim", r"decoder\.layers\.\d+\.fc1\.weight$", 0, None),
    ),
    layers=BART.layers,
    ask=("encoder_attention_heads", "decoder_attention_heads"),
    forward=("activation_function", "scale_embedding"),
)

OPT = Table(
    rows=(
        ("vocab_size", r"decoder\.embed_tokens\.weight$", 0, None),
        ("word_embed_proj_dim", r"decoder\.embed_tokens\.weight$", 1, None),
        ("hidden_size", r"decoder\.layers\.\d+\.self_attn\.q_proj\.weight$", 0, None),
        ("ffn_dim", r"decoder\.layers\.\d+\.fc1\.weight$", 0, None),
        ("max_position_embeddings", r"decoder\.embed_positions\.weight$", 0, ("add", -2)),
    ),
    layers=(("num_hidden_layers", r"decoder\.layers\.(\d+)\."),),
    flags=(("do_layer_norm_before", r"decoder\.final_layer_norm\.weight$", True, False),),
    ask=("num_attention_heads",),
    forward=("activation_function", "tie_word_embeddings"),
)

GPT2 = Table(
    rows=(
        ("vocab_size", r"wte\.weight$", 0, None),
        ("n_embd", r"wte\.weight$", 1, None),
        ("n_positions", r"wpe\.weight$", 0, None),
        ("n_inner", r"h\.\d+\.mlp\.c_fc\.weight$", 1, None),  # Conv1D: (in, out)
    ),
    layers=(("n_layer", r"h\.(\d+)\."),),
    ask=("n_head",),
    forward=("activation_function", "layer_norm_epsilon", "tie_word_embeddings"),
)

GPTJ = Table(
    rows=(
        ("vocab_size", r"wte\.weight$", 0, None),
        ("n_embd", r"wte\.weight$", 1, None),
        ("n_inner", r"h\.\d+\.mlp\.fc_in\.weight$", 0, None),
    ),
    layers=(("n_layer", r"h\.(\d+)\."),),
    ask=("n_head",),
    forward=("rotary_dim", "n_positions", "activation_function", "tie_word_embeddings"),
)

GPT_NEOX = Table(
    rows=(
        ("vocab_size", r"embed_in\.weight$", 0, None),
        ("hidden_size", r"embed_in\.weight$", 1, None),
        ("intermediate_size", r"layers\.\d+\.mlp\.dense_h_to_4h\.weight$", 0, None),
    ),
    layers=(("num_hidden_layers", r"layers\.(\d+)\."),),
    ask=("num_attention_heads",),
    forward=("rotary_pct", "rotary_emb_base", "use_parallel_residual", "max_position_embeddings", "hidden_act"),
)

BLOOM = Table(
    rows=(("vocab_size", r"word_embeddings\.weight$", 0, None), ("hidden_size", r"word_embeddings\.weight$", 1, None)),
    layers=(("n_layer", r"h\.(\d+)\."),),
    ask=("n_head",),
    forward=("layer_norm_epsilon", "apply_residual_connection_post_layernorm"),
)

FALCON = Table(
    rows=(
        ("vocab_size", r"word_embeddings\.weight$", 0, None),
        ("hidden_size", r"word_embeddings\.weight$", 1, None),
        ("num_kv_heads", r"h\.\d+\.self_attention\.query_key_value\.weight$", 0,
         ("fused_kv", "num_attention_heads", None)),
    ),
    layers=(("num_hidden_layers", r"h\.(\d+)\."),),
    flags=(("new_decoder_architecture", r"h\.\d+\.ln_attn\.weight$", True, False),),
    ask=("num_attention_heads",),
    forward=("parallel_attn", "alibi", "bias", "rope_theta", "max_position_embeddings", "multi_query"),
)

_VIT_LAYER = r"(?:encoder\.layer|layers)\.(\d+)\."
_VIT_Q = r"\.attention\.(?:attention\.query|q_proj)\.weight$"
DINOV2 = Table(
    rows=(
        ("hidden_size", r"embeddings\.cls_token$", 2, None),
        ("patch_size", r"embeddings\.patch_embeddings\.projection\.weight$", 2, None),
        ("num_channels", r"embeddings\.patch_embeddings\.projection\.weight$", 1, None),
        ("image_size", r"embeddings\.position_embeddings$", 1, ("grid", "patch_size", 1)),
        ("mlp_ratio", r"mlp\.fc1\.weight$", 0, ("per", "hidden_size")),
        ("num_register_tokens", r"embeddings\.register_tokens$", 1, None),
    ),
    layers=(("num_hidden_layers", _VIT_LAYER),),
    flags=(("use_swiglu_ffn", r"mlp\.weights_in\.weight$", True, False),),
    ask=("num_attention_heads",),
    forward=("layer_norm_eps", "layerscale_value", "hidden_act"),
)
VIT = Table(
    rows=DINOV2.rows[:4] + (("intermediate_size", r"intermediate\.dense\.weight$", 0, None),),
    layers=DINOV2.layers, ask=DINOV2.ask, forward=("layer_norm_eps", "hidden_act"),
)


def _tower(p: str, vision: bool) -> tuple:
    """One CLIP / SigLIP tower's rows (``p``: its sub-config, ``text_config`` or ``vision_config``)."""
    m = "vision_model" if vision else "text_model"
    rows = [(f"{p}.hidden_size", rf"{m}\.encoder\.layers\.\d+\.self_attn\.q_proj\.weight$", 0, None),
            (f"{p}.intermediate_size", rf"{m}\.encoder\.layers\.\d+\.mlp\.fc1\.weight$", 0, None)]
    if vision:
        rows += [(f"{p}.patch_size", rf"{m}\.embeddings\.patch_embedding\.weight$", 2, None),
                 (f"{p}.num_channels", rf"{m}\.embeddings\.patch_embedding\.weight$", 1, None)]
    else:
        rows += [(f"{p}.vocab_size", rf"{m}\.embeddings\.token_embedding\.weight$", 0, None),
                 (f"{p}.max_position_embeddings", rf"{m}\.embeddings\.position_embedding\.weight$", 0, None)]
    return tuple(rows)


def _dual(cls_token: int, projection: bool) -> Table:
    rows = _tower("text_config", False) + _tower("vision_config", True) + (
        ("vision_config.image_size", r"vision_model\.embeddings\.position_embedding\.weight$", 0,
         ("grid", "vision_config.patch_size", cls_token)),)
    if projection:
        rows += (("projection_dim", r"text_projection\.weight$", 0, None),)
    return Table(rows=rows,
                 layers=(("text_config.num_hidden_layers", r"text_model\.encoder\.layers\.(\d+)\."),
                         ("vision_config.num_hidden_layers", r"vision_model\.encoder\.layers\.(\d+)\.")),
                 ask=("text_config.num_attention_heads", "vision_config.num_attention_heads"),
                 forward=("text_config.hidden_act", "vision_config.hidden_act", "text_config.layer_norm_eps"))


#: model_type -> its table
TABLES: dict[str, Table] = {
    **{mt: BERT for mt in ("bert", "roberta", "xlm-roberta", "electra", "camembert", "roberta-prelayernorm")},
    "mpnet": MPNET, "deberta-v2": DEBERTA_V2, "albert": ALBERT, "distilbert": DISTILBERT,
    **{mt: T5 for mt in ("t5", "mt5", "umt5")},
    "bart": BART_LEARNED, "mbart": BART_LEARNED, "pegasus": BART_SINUSOID, "marian": BART_SINUSOID,
    "whisper": WHISPER, "opt": OPT, "gpt2": GPT2, "gptj": GPTJ, "gpt_neox": GPT_NEOX, "bloom": BLOOM,
    "falcon": FALCON, "dinov2": DINOV2, "dinov2_with_registers": DINOV2, "vit": VIT,
    "clip": _dual(1, True), "siglip": _dual(0, False),
    "qwen3_5_text": DECODER_GATED, "qwen3_next": DECODER_GATED, "qwen3_5": QWEN3_5,
}


def table_of(model_type: str, family: str) -> Optional[Table]:
    """The table of ``model_type`` (every decoder-only LM of the ``decoder_lm`` family shares one); None if none."""
    if model_type in TABLES:
        return TABLES[model_type]
    if family == "decoder_lm":
        return DECODER_LM
    return None
