"""BART-like encoder–decoders (BART, mBART, Pegasus, Marian): stacks ``encoder`` and ``decoder``, no relative buckets."""
from __future__ import annotations

from ..models.adapters import bart as _adapter
from .hf import blocks_at, seq2seq_hidden
from .spec import FamilySpec, Sizes


def _sizes(cfg: dict) -> Sizes:
    d, h = int(cfg["d_model"]), int(cfg["encoder_attention_heads"])
    return Sizes(d_model=d, n_layers=int(cfg["encoder_layers"]), n_heads=h, head_dim=d // h, n_kv_heads=h)


_TINY = dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
             encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=128, dropout=0.0, attention_dropout=0.0,
             activation_dropout=0.0, pad_token_id=0, bos_token_id=101, eos_token_id=102, decoder_start_token_id=102,
             forced_eos_token_id=102)

BART = FamilySpec(
    name="bart", stacks=("encoder", "decoder"), is_text=True, is_generative=True, auto_class="AutoModelForSeq2SeqLM",
    model_types=("bart", "mbart", "pegasus", "marian"), sizes=_sizes, adapter=_adapter, text_hidden=seq2seq_hidden,
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
