"""BART-like encoder–decoders (BART, mBART, Pegasus, Marian): stacks ``encoder`` and ``decoder``, no relative buckets.

Weight names (:func:`adapt`: the catalog's rules)
-------------------------------------------------
BART-like encoder–decoders (BART, mBART, Pegasus, Marian): like T5 without relative position buckets.

Names (under ``model.``)::

    shared.weight, {encoder,decoder}.embed_tokens, {encoder,decoder}.embed_positions   embed
    {encoder,decoder}.layers.{i}.self_attn.{q,k,v,out}_proj     q / k / v / o (self)
    decoder.layers.{i}.encoder_attn.{q,k,v,out}_proj            q / k / v / o (cross)
    {stack}.layers.{i}.fc1 / fc2                                mlp_in / mlp_out
    {stack}.layers.{i}.{self_attn,encoder_attn,final}_layer_norm, {stack}.layernorm_embedding, {stack}.layer_norm   norm
    lm_head.weight, final_logits_bias                           unembed, bias

Scores: ``(x W_q^T + b_q)(x W_k^T + b_k)^T / sqrt(head_dim)``; positions (learned with offset 2
in BART / mBART, sinusoidal in Pegasus / Marian) are added to the input: no position term
inside attention.
"""
from __future__ import annotations

from ..checkpoints.rules import Heads, build, need, rules
from .hf import blocks_at, seq2seq_hidden
from .spec import FamilySpec, Sizes

_L = r"(?:^|\.)(?P<stack>encoder|decoder)\.layers\.(?P<layer>\d+)\."
#: the per-layer rows BART's layout shares with Whisper's (families/whisper.py): self- and cross-attention,
#: fc1 / fc2 and the three layer norms of each block
LAYER_ROWS = (
    (_L + r"self_attn\.q_proj\.", "q", None, "self"),
    (_L + r"self_attn\.k_proj\.", "k", None, "self"),
    (_L + r"self_attn\.v_proj\.", "v", None, "self"),
    (_L + r"self_attn\.out_proj\.", "o", None, "self"),
    (_L + r"encoder_attn\.q_proj\.", "q", None, "cross"),
    (_L + r"encoder_attn\.k_proj\.", "k", None, "cross"),
    (_L + r"encoder_attn\.v_proj\.", "v", None, "cross"),
    (_L + r"encoder_attn\.out_proj\.", "o", None, "cross"),
    (_L + r"fc1\.", "mlp_in", None),
    (_L + r"fc2\.", "mlp_out", None),
    (_L + r"(?:self_attn_layer_norm|encoder_attn_layer_norm|final_layer_norm)\.", "norm", None),
)
RULES = rules(
    *LAYER_ROWS,
    (r"(?:^|\.)shared\.weight$", "embed", None),
    (r"(?:^|\.)(?P<stack>encoder|decoder)\.embed_(?:tokens|positions)\.weight$", "embed", None),
    (r"(?:^|\.)(?P<stack>encoder|decoder)\.(?:layernorm_embedding|layer_norm)\.", "norm", None),
    (r"(?:^|\.)lm_head\.weight$", "unembed", None),
    (r"(?:^|\.)final_logits_bias$", "bias", None),
    (r"(?:^|\.)(?:classification_head|qa_outputs)\.", "other", None, None, "task head"),
)


def adapt(tensors, config) -> list:
    """Map BART-like tensor names to catalog entries (see the module docstring)."""
    d, he, hd_ = need(config, "bart", "d_model", "encoder_attention_heads", "decoder_attention_heads")

    def heads(stack, attn):
        h = hd_ if stack == "decoder" else he
        return Heads(h, d // h, h, d)
    return build(tensors, RULES, heads)


def _sizes(cfg: dict) -> Sizes:
    d, h = int(cfg["d_model"]), int(cfg["encoder_attention_heads"])
    return Sizes(d_model=d, n_layers=int(cfg["encoder_layers"]), n_heads=h, head_dim=d // h, n_kv_heads=h)


_TINY = dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
             encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=128, dropout=0.0, attention_dropout=0.0,
             activation_dropout=0.0, pad_token_id=0, bos_token_id=101, eos_token_id=102, decoder_start_token_id=102,
             forced_eos_token_id=102)

BART = FamilySpec(
    name="bart", stacks=("encoder", "decoder"), is_text=True, is_generative=True, auto_class="AutoModelForSeq2SeqLM",
    model_types=("bart", "mbart", "pegasus", "marian"), sizes=_sizes, adapt=adapt, text_hidden=seq2seq_hidden,
    teacher_forced_decoder=True,
    locate_blocks=blocks_at({"encoder": "encoder.layers", "decoder": "decoder.layers"}, "bart"),
    encoder=lambda model: model.get_encoder(), objective="seq2seq",
    tiny_defaults=dict(model_type="bart", **_TINY),
    tiny_model_types={mt: dict(_TINY) for mt in ("mbart", "pegasus", "marian")},
    tiny_tokenizer="minilm",
    qk_statement="BART-like: scores are (x W_q^T + b_q)(x W_k^T + b_k)^T / sqrt(head_dim) in encoder, decoder and "
                 "cross attention; the bilinear form holds the x W_q^T W_k x term, the bias terms are extra; "
                 "positions are added to the input (no relative buckets).",
)
