"""T5 and T5 v1.1 (encoder-decoder; relative position bias; no 1/sqrt(d) scaling of q·k).

The two share everything but the feed-forward (ReLU vs gated GELU) and the tying of the
output embedding, so one module holds both specs.

Weight names (:func:`adapt`: the catalog's rules)
-------------------------------------------------
T5 and T5-v1.1 adapter (HF ``T5Model`` / ``T5ForConditionalGeneration`` / ``T5EncoderModel``).

Names (optionally under a prefix)::

    shared.weight                                         embed (V, D)
    {encoder,decoder}.embed_tokens.weight                 embed (tied copy)
    lm_head.weight                                        unembed
    {stack}.block.{i}.layer.0.SelfAttention.{q,k,v,o}     self attention
    decoder.block.{i}.layer.1.EncDecAttention.{q,k,v,o}   cross attention
    {stack}.block.{i}.layer.0.SelfAttention.relative_attention_bias  pos_bias (buckets, heads)
    {stack}.block.{i}.layer.{j}.DenseReluDense.wi         mlp_in  (T5: ReLU)
    {stack}.block.{i}.layer.{j}.DenseReluDense.wi_0/wi_1  mlp_gate / mlp_in  (T5-v1.1: GeGLU)
    {stack}.block.{i}.layer.{j}.DenseReluDense.wo         mlp_out
    {stack}.block.{i}.layer.{j}.layer_norm, {stack}.final_layer_norm   norm (RMS scale)

T5 does not scale q·k by 1/sqrt(head_dim) (the catalog's attention scale is 1).
"""
from __future__ import annotations

import re
from dataclasses import replace


from ..checkpoints.schema import Entry, attn_entry, get_int
from ..validation import fail
from .spec import FamilySpec, Sizes, hidden_to_cpu
from ..lazy import lazy

nn = lazy("torch.nn")

_BLOCK = re.compile(r"^(?:.*\.)?(?P<stack>encoder|decoder)\.block\.(?P<layer>\d+)\.layer\.\d+\.(?P<rest>.+)$")
#: T5 does not scale q·k (the catalog's attention scale)
ATTN_SCALE = 1.0
_PROJ = {"q": "q", "k": "k", "v": "v", "o": "o"}
_MLP = {"wi": "mlp_in", "wi_1": "mlp_in", "wi_0": "mlp_gate", "wo": "mlp_out"}


def adapt(tensors, config) -> list:
    """Map T5 tensor names to catalog entries (see the module docstring)."""
    d_model = get_int(config, "d_model")
    n_heads = get_int(config, "num_heads")
    d_kv = get_int(config, "d_kv")
    if d_model is None or n_heads is None or d_kv is None:
        raise ValueError("config: T5 adapter needs d_model, num_heads and d_kv (pass the model's config.json)")
    out = []
    for name, info in tensors.items():
        m = _BLOCK.match(name)
        if m:
            stack, layer, rest = m["stack"], int(m["layer"]), m["rest"]
            parts = rest.split(".")
            if parts[0] in ("SelfAttention", "EncDecAttention"):
                attn = "self" if parts[0] == "SelfAttention" else "cross"
                if parts[1] in _PROJ and parts[-1] == "weight":
                    out.append(attn_entry(name, info, _PROJ[parts[1]], stack=stack, attn=attn, layer=layer,
                                          n_heads=n_heads, head_dim=d_kv, expect_in=d_model))
                    continue
                if parts[1] == "relative_attention_bias":
                    if tuple(info.shape)[1:] != (n_heads,):
                        raise ValueError(f"weights: tensor {name!r} has shape {tuple(info.shape)}, "
                                         f"expected (num_buckets, {n_heads})")
                    out.append(Entry(name, "pos_bias", stack, attn, layer, tuple(info.shape), info.dtype,
                                     n_heads=n_heads))
                    continue
            if parts[0] == "DenseReluDense" and parts[1] in _MLP and parts[-1] == "weight":
                out.append(Entry(name, _MLP[parts[1]], stack, None, layer, tuple(info.shape), info.dtype))
                continue
            if parts[0] == "layer_norm":
                out.append(Entry(name, "norm", stack, None, layer, tuple(info.shape), info.dtype))
                continue
            out.append(Entry(name, "other", stack, None, layer, tuple(info.shape), info.dtype))
            continue
        if re.search(r"(^|\.)shared\.weight$", name):
            out.append(Entry(name, "embed", None, None, None, tuple(info.shape), info.dtype))
        elif m2 := re.match(r"^(?:.*\.)?(encoder|decoder)\.embed_tokens\.weight$", name):
            out.append(Entry(name, "embed", m2[1], None, None, tuple(info.shape), info.dtype))
        elif re.search(r"(^|\.)lm_head\.weight$", name):
            out.append(Entry(name, "unembed", None, None, None, tuple(info.shape), info.dtype))
        elif m3 := re.match(r"^(?:.*\.)?(encoder|decoder)\.final_layer_norm\.weight$", name):
            out.append(Entry(name, "norm", m3[1], None, None, tuple(info.shape), info.dtype))
        else:
            out.append(Entry(name, "other", None, None, None, tuple(info.shape), info.dtype))
    return out


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
    sizes=_sizes, adapt=adapt, attn_scale=ATTN_SCALE, text_hidden=_text_hidden,
    teacher_forced_decoder=True,
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
