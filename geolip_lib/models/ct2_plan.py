"""Which transformers model a CTranslate2 spec holds, and the plan that rebuilds it: the model_type read from the
variables' structure (or the params file's ``config: {model_type: ...}`` where the structure leaves it open), then
the family's inverse map (:mod:`.ct2_decoders`, :mod:`.ct2_encoders`), built on :mod:`.ct2_specs`'s builder. Its own
module so that the maps can import the builder and this dispatcher the maps, one way only."""
from __future__ import annotations

from typing import Any, Mapping, Optional

from . import ct2_decoders as dec, ct2_encoders as enc
from .ct2_specs import ARCHITECTURES, FAMILIES, SUPPORTED, Plan, _Builder

__all__ = ["plan"]


def _model_type(b: _Builder, spec: str, given: Mapping) -> str:
    mt = given.get("model_type")
    if spec not in SUPPORTED:
        b.fail(f"spec {spec!r}: this reader maps {sorted(SUPPORTED)} and WhisperSpec")
    if mt is not None:
        if mt not in SUPPORTED[spec]:
            b.fail(f"config: model_type {mt!r} is not one this reader maps from a {spec} "
                   f"({', '.join(SUPPORTED[spec])})")
        return mt
    if spec == "TransformerEncoderSpec":
        if not b.has("encoder/embeddings_1/weight") and not b.has("pooler_dense/weight"):
            return "distilbert"
        # BERT and RoBERTa write the same variables; BERT's checkpoints have two token types, RoBERTa's one
        if b.has("encoder/embeddings_1/weight") and b.shape("encoder/embeddings_1/weight")[0] == 2:
            return "bert"
    elif spec == "TransformerSpec":
        if int(b.setting("decoder/start_from_zero_embedding", 0)) == 1:
            return "marian"
        if b.has("encoder/layer_0/self_attention/relative_attention_bias"):
            return "t5"  # relative attention bias: T5's loader (mT5 writes the same: say model_type: mt5 for it)
    elif b.has("decoder/layer_0/ffn/linear_0_noact/weight"):
        if b.has("decoder/layer_0/self_attention/q_norm/gamma"):
            return "qwen3"  # per-head q / k norms in a Llama-shaped decoder: Qwen3's loader
        if b.has("decoder/layer_0/self_attention/layer_norm/layer_norm_use_residual"):
            return "gemma"  # only Gemma's loader stores the norm as 1 + weight
        if b.has("decoder/layer_0/self_attention/linear_0/bias") and not b.has(
                "decoder/layer_0/self_attention/linear_1/bias"):
            return "qwen2"
        b.fail("a Llama-shaped decoder (Llama and Mistral write the same variables): say which with "
               "config: {model_type: llama} (or mistral, qwen2) in the params file")
    elif int(b.setting("decoder/alibi", 0)) == 1 and b.has("decoder/layernorm_embedding/gamma"):
        return "bloom"  # ALiBi and a norm after the embeddings: BLOOM's loader
    elif b.has("decoder/layer_0/self_attention/num_heads_kv") and int(b.setting("decoder/activation", -1)) == 3 and (
            b.has("decoder/layer_0/shared_layer_norm/gamma") or b.has("decoder/layer_0/input_layer_norm/gamma")):
        return "falcon"  # parallel attention with fewer kv heads and exact GELU: Falcon's loader
    elif b.has("decoder/layer_0/shared_layer_norm/gamma"):
        return "gptj"  # parallel residual with one shared norm: GPT-J's loader
    elif b.has("decoder/layer_0/input_layer_norm/gamma") or (
            not b.has("decoder/position_encodings/encodings") and b.has("decoder/layer_0/self_attention/linear_0/bias")
            and b.has("decoder/layer_norm/beta")):
        return "gpt_neox"  # rotary, LayerNorm with bias, fused biased q/k/v: GPT-NeoX's loader
    elif b.has("decoder/position_encodings/encodings") and int(b.setting("decoder/activation", -1)) == 1:
        return "gpt2"
    elif b.has("decoder/position_encodings/encodings") and int(b.setting("decoder/activation", -1)) == 0:
        return "opt"  # learned positions and ReLU: OPT's loader (GPT-2's is gelu_new)
    b.fail(f"a {spec} whose structure this reader cannot place: say which model with config: {{model_type: ...}} "
           f"({', '.join(SUPPORTED[spec])})")


def plan(where: str, spec: str, shapes: Mapping, aliases: Mapping, settings: Mapping, ct2_config: Mapping,
         vocab: Optional[list], given: Mapping[str, Any], family: Optional[str] = None) -> Plan:
    """The inverse of the converter for this file (see the module docstring); ``given``: the params file's
    ``config:`` (``model_type`` when the structure leaves it open)."""
    b = _Builder(where, shapes, aliases, settings)
    mt = _model_type(b, spec, given)
    fams = FAMILIES[mt] if isinstance(FAMILIES[mt], tuple) else (FAMILIES[mt],)
    if family is not None and family not in fams:
        b.fail(f"a {mt} conversion ({spec}), which family {' or '.join(fams)} builds; the params file says family "
               f"{family}")
    cc = ct2_config or {}
    if mt in ("llama", "mistral", "qwen2", "qwen3", "gemma"):
        cfg = dec.llama(b, mt, cc)
    elif mt == "gpt2":
        cfg = dec.gpt2(b, cc)
    elif mt == "opt":
        cfg = dec.opt(b, cc)
    elif mt == "gpt_neox":
        cfg = dec.gpt_neox(b, cc)
    elif mt == "gptj":
        cfg = dec.gptj(b, cc)
    elif mt == "bloom":
        cfg = dec.bloom(b, cc)
    elif mt == "falcon":
        cfg = dec.falcon(b, cc)
    elif mt in ("bert", "roberta", "xlm-roberta"):
        cfg = enc.bert(b, mt, cc, vocab, given)
    elif mt == "distilbert":
        cfg = enc.distilbert(b, cc)
    elif mt in ("t5", "mt5"):
        cfg = enc.t5(b, mt, cc, vocab)
    else:
        cfg = enc.marian(b, cc, vocab)
    b.leftover()
    if mt != "marian" and vocab:
        ids = {t: i for i, t in enumerate(vocab)}
        for tok, key in (("bos_token", "bos_token_id"), ("eos_token", "eos_token_id"), ("unk_token", "unk_token_id")):
            if cc.get(tok) in ids and key != "unk_token_id":
                cfg[key] = ids[cc[tok]]
    cfg = {"model_type": mt, "architectures": [ARCHITECTURES[mt]], **cfg}
    return Plan(b.entries, cfg, b.notes, b.dropped, b.filled)
