"""T5 and T5 v1.1 (encoder-decoder; relative position bias; no 1/sqrt(d) scaling of q·k).

The two share everything but the feed-forward (ReLU vs gated GELU) and the tying of the
output embedding, so one module holds both specs.
"""
from __future__ import annotations

from dataclasses import replace

import torch.nn as nn

from ..models.adapters import t5 as _adapter
from ..validation import fail
from .spec import FamilySpec, Sizes, hidden_to_cpu


def _sizes(cfg: dict) -> Sizes:
    return Sizes(d_model=int(cfg["d_model"]), n_layers=int(cfg["num_layers"]), n_heads=int(cfg["num_heads"]),
                 head_dim=int(cfg["d_kv"]), n_kv_heads=int(cfg["num_heads"]))


def _text_hidden(model, stack, ids, mask, dec) -> list:
    enc = model.encoder(input_ids=ids, attention_mask=mask, output_hidden_states=True)
    if stack == "encoder":
        return hidden_to_cpu(enc.hidden_states)
    out = model.decoder(input_ids=dec[0].to(ids.device), attention_mask=dec[1].to(ids.device),
                        encoder_hidden_states=enc.last_hidden_state, encoder_attention_mask=mask,
                        output_hidden_states=True)
    return hidden_to_cpu(out.hidden_states)


def locate_blocks(model: nn.Module, stack: str):
    """``(stack_module, blocks)``: a T5Stack itself, or the model's ``encoder`` / ``decoder``."""
    if hasattr(model, "block"):  # a T5Stack itself
        return model, model.block
    if stack not in ("encoder", "decoder"):
        fail("stack", f"T5 models have stacks 'encoder' and 'decoder', got {stack!r}")
    mod = getattr(model, stack, None)
    if mod is None:
        fail("stack", f"this T5 model has no {stack} stack")
    return mod, mod.block


def _is_gated(cfg: dict) -> bool:
    return str(cfg.get("feed_forward_proj", "relu")).startswith("gated")


TINY = dict(model_type="t5", d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
            relative_attention_num_buckets=32, relative_attention_max_distance=128, dropout_rate=0.0,
            feed_forward_proj="relu", tie_word_embeddings=True, pad_token_id=0, eos_token_id=1,
            decoder_start_token_id=0)

T5 = FamilySpec(
    name="t5", stacks=("encoder", "decoder"), is_text=True, is_generative=True,
    auto_class="AutoModelForSeq2SeqLM", model_types=("t5", "mt5", "umt5"),
    matches=lambda cfg: not _is_gated(cfg),
    sizes=_sizes, adapter=_adapter, text_hidden=_text_hidden, teacher_forced_decoder=True,
    locate_blocks=locate_blocks, encoder=lambda model: model.get_encoder(),
    objective="seq2seq", prompt="summarize: {definition}",
    left_out={"*": "relative bias"},
    qk_statement="T5: scores are q.k (no 1/sqrt(d) scaling) plus a learned relative-position bias per head and "
                 "bucket (computed in the first layer of each stack and shared; UMT5: one per layer); the bilinear "
                 "form W_q^T W_k is the content term and leaves the relative bias out.",
    tiny_defaults=TINY, tiny_tokenizer="unigram-wordnet",
    tiny_model_types={mt: {**TINY, "model_type": mt} for mt in ("mt5", "umt5")},
)

_GATED = {**TINY, "feed_forward_proj": "gated-gelu", "tie_word_embeddings": False}
T5_V1_1 = replace(
    T5, name="t5_v1_1", matches=_is_gated, tiny_defaults=_GATED,
    tiny_model_types={mt: {**_GATED, "model_type": mt} for mt in ("mt5", "umt5")},
)
