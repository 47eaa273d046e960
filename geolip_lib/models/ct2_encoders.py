"""Inverse maps of the encoder and encoder-decoder loaders of ``ct2-transformers-converter`` (see :mod:`.ct2_specs`).

BERT / RoBERTa / XLM-RoBERTa (``BertLoader``, ``RobertaLoader``, ``XLMRobertaLoader``): post-norm encoders, fused
``[q; k; v]``, token-type embeddings, pooler; RoBERTa's position table loses its first ``padding_idx + 1`` rows
(positions start after the pad index; those rows are never read): added back as zeros, noted. The converter reads
XLM-RoBERTa as ``XLMRobertaForSequenceClassification`` and keeps no classifier: the rebuilt class is the bare
``XLMRobertaModel`` (noted). DistilBERT: ``q_lin / k_lin / v_lin`` fused. Marian (``MarianMTLoader``): BART-style
layers; the ``<pad>`` row of the shared embeddings and output projection is dropped by the converter and added
back as zeros. T5 (``T5Loader``): RMS norms, fused ``[q; k; v]`` whose width is ``num_heads x d_kv`` (not
always ``d_model``), one relative attention bias table per stack (stored in layer 0, aliased by the others as
transformers keeps it in block 0 only), gated or plain FFN; a tied output projection is an alias (CTranslate2
scales the outputs by ``d_model ** -0.5`` as transformers does for tied T5).
"""
from __future__ import annotations

from typing import Mapping, Optional

from .ct2_specs import ACTIVATIONS, _Builder

def bert(b: _Builder, mt: str, cc: Mapping, vocab: Optional[list], given: Mapping) -> dict:
    d = b.shape("encoder/embeddings_0/weight")[1]
    n = b.layers("encoder")
    heads = b.heads("encoder/num_heads", d)
    b.put("embeddings.word_embeddings.weight", "encoder/embeddings_0/weight")
    b.put("embeddings.token_type_embeddings.weight", "encoder/embeddings_1/weight")
    offset, extra = 0, {}
    if mt != "bert":  # RoBERTa: positions start after padding_idx (= pad_token_id)
        pad = given.get("pad_token_id")
        if pad is None and vocab and "<pad>" in vocab:
            pad = vocab.index("<pad>")
        if pad is None:
            b.fail(f"a {mt} file: its position table starts after the pad token, whose id the folder does not say; "
                   f"add config: {{pad_token_id: N}} to the params file")
        offset = int(pad) + 1
        extra["pad_token_id"] = int(pad)
        b.notes.append(f"embeddings.position_embeddings.weight: rows 0-{offset - 1} added back as zeros (the "
                       f"converter drops them: {mt} positions start at padding_idx + 1, so they are never read)")
    b.put("embeddings.position_embeddings.weight", "encoder/position_encodings/encodings", pad_front=offset)
    if mt == "xlm-roberta":
        b.notes.append("the converter reads XLMRobertaForSequenceClassification and keeps no classifier: rebuilt as "
                       "XLMRobertaModel")
    b.norm("embeddings.LayerNorm", "encoder/layernorm_embedding")
    for i in range(n):
        p, q = f"encoder.layer.{i}.", f"encoder/layer_{i}/"
        b.split([p + "attention.self.query", p + "attention.self.key", p + "attention.self.value"],
                q + "self_attention/linear_0", [d, d, d])
        b.linear(p + "attention.output.dense", q + "self_attention/linear_1")
        b.norm(p + "attention.output.LayerNorm", q + "self_attention/layer_norm")
        b.linear(p + "intermediate.dense", q + "ffn/linear_0")
        b.linear(p + "output.dense", q + "ffn/linear_1")
        b.norm(p + "output.LayerNorm", q + "ffn/layer_norm")
    if b.has("pooler_dense/weight"):
        b.linear("pooler.dense", "pooler_dense")
    elif mt == "bert":
        b.fail("no pooler: BERT's loader always writes one (not a BERT conversion)")
    else:  # the sequence-classification class the converter read is built without one (rebuild.write_folder
        # then builds the class without its pooler: the file's tensors fill it exactly)
        b.notes.append("no pooler in the file (the converter read a classification model built without one): "
                       "the rebuilt folder has none")
    cfg = dict(**extra, hidden_size=d, num_hidden_layers=n, num_attention_heads=heads,
               intermediate_size=b.shape("encoder/layer_0/ffn/linear_0/weight")[0],
               vocab_size=b.shape("encoder/embeddings_0/weight")[0],
               type_vocab_size=b.shape("encoder/embeddings_1/weight")[0],
               max_position_embeddings=b.shape("encoder/position_encodings/encodings")[0] + offset,
               hidden_act=ACTIVATIONS.get(int(b.setting("encoder/activation", 3)), "gelu"))
    if cc.get("layer_norm_epsilon") is not None:
        cfg["layer_norm_eps"] = float(cc["layer_norm_epsilon"])
    return cfg


def bart_layers(b: _Builder, stack: str, n: int, d: int):
    for i in range(n):
        p, q = f"model.{stack}.layers.{i}.", f"{stack}/layer_{i}/"
        b.split([p + "self_attn.q_proj", p + "self_attn.k_proj", p + "self_attn.v_proj"],
                q + "self_attention/linear_0", [d, d, d])
        b.linear(p + "self_attn.out_proj", q + "self_attention/linear_1")
        b.norm(p + "self_attn_layer_norm", q + "self_attention/layer_norm")
        if stack == "decoder":
            b.linear(p + "encoder_attn.q_proj", q + "attention/linear_0")
            b.split([p + "encoder_attn.k_proj", p + "encoder_attn.v_proj"], q + "attention/linear_1", [d, d])
            b.linear(p + "encoder_attn.out_proj", q + "attention/linear_2")
            b.norm(p + "encoder_attn_layer_norm", q + "attention/layer_norm")
        b.linear(p + "fc1", q + "ffn/linear_0")
        b.linear(p + "fc2", q + "ffn/linear_1")
        b.norm(p + "final_layer_norm", q + "ffn/layer_norm")


def marian(b: _Builder, cc: Mapping, vocab: Optional[list]) -> dict:
    d = b.shape("decoder/embeddings/weight")[1]
    ne, nd = b.layers("encoder"), b.layers("decoder")
    he, hdec = b.heads("encoder/num_heads", d), b.heads("decoder/num_heads", d)
    bart_layers(b, "encoder", ne, d)
    bart_layers(b, "decoder", nd, d)
    rows = b.shape("decoder/embeddings/weight")[0]
    if b.src("encoder/embeddings_0/weight") != "decoder/embeddings/weight":
        b.fail("the encoder and decoder embeddings differ: only Marian models with shared embeddings are read")
    b.put("model.shared.weight", "decoder/embeddings/weight", pad_rows=1)
    b.used.add("encoder/embeddings_0/weight")
    b.notes.append(f"model.shared.weight: row {rows} (<pad>) added back as zeros (the converter drops it; "
                   f"CTranslate2's decoder starts from a zero embedding instead)")
    if b.src("decoder/projection/weight") != "decoder/embeddings/weight":
        b.put("lm_head.weight", "decoder/projection/weight", pad_rows=1)
    else:
        b.used.add("decoder/projection/weight")
        b.dropped.append("lm_head.weight (tied to model.shared: the converter stored it as an alias)")
    if b.has("decoder/projection/bias"):
        b.put("final_logits_bias", "decoder/projection/bias", pad_rows=1)
    else:  # the converter stores the projection bias only when nonzero: zeros, as the class starts
        b.put("final_logits_bias", "decoder/embeddings/weight", zeros=(1, rows + 1))
        b.filled.append("final_logits_bias")
        b.notes.append("final_logits_bias: zeros (the converter stores the projection bias only when nonzero)")
    for s in ("encoder", "decoder"):  # sinusoidal: the class recomputes them; convert compares the two
        b.put(f"model.{s}.embed_positions.weight", f"{s}/position_encodings/encodings")
    scale = float(b.setting("decoder/scale_embeddings", 1.0))
    pos = b.shape("decoder/position_encodings/encodings")[0]
    cfg = dict(d_model=d, encoder_layers=ne, decoder_layers=nd, encoder_attention_heads=he,
               decoder_attention_heads=hdec, encoder_ffn_dim=b.shape("encoder/layer_0/ffn/linear_0/weight")[0],
               decoder_ffn_dim=b.shape("decoder/layer_0/ffn/linear_0/weight")[0], vocab_size=rows + 1,
               max_position_embeddings=pos, scale_embedding=abs(scale - 1.0) > 1e-6,
               activation_function=ACTIVATIONS.get(int(b.setting("decoder/activation", 3)), "gelu"),
               pad_token_id=rows, decoder_start_token_id=rows, share_encoder_decoder_embeddings=True,
               tie_word_embeddings="lm_head.weight" not in {e.key for e in b.entries})
    ids = {t: i for i, t in enumerate(vocab or [])}
    for tok, key in (("eos_token", "eos_token_id"), ("bos_token", "bos_token_id")):
        if cc.get(tok) in ids:
            cfg[key] = ids[cc[tok]]
    if "eos_token_id" in cfg:
        cfg["forced_eos_token_id"] = cfg["eos_token_id"]
    return cfg


def distilbert(b: _Builder, cc: Mapping) -> dict:
    d = b.shape("encoder/embeddings_0/weight")[1]
    n = b.layers("encoder")
    heads = b.heads("encoder/num_heads", d)
    b.put("embeddings.word_embeddings.weight", "encoder/embeddings_0/weight")
    b.put("embeddings.position_embeddings.weight", "encoder/position_encodings/encodings")
    b.norm("embeddings.LayerNorm", "encoder/layernorm_embedding")
    for i in range(n):
        p, q = f"transformer.layer.{i}.", f"encoder/layer_{i}/"
        b.split([p + "attention.q_lin", p + "attention.k_lin", p + "attention.v_lin"],
                q + "self_attention/linear_0", [d, d, d])
        b.linear(p + "attention.out_lin", q + "self_attention/linear_1")
        b.norm(p + "sa_layer_norm", q + "self_attention/layer_norm")
        b.linear(p + "ffn.lin1", q + "ffn/linear_0")
        b.linear(p + "ffn.lin2", q + "ffn/linear_1")
        b.norm(p + "output_layer_norm", q + "ffn/layer_norm")
    return dict(dim=d, n_layers=n, n_heads=heads, hidden_dim=b.shape("encoder/layer_0/ffn/linear_0/weight")[0],
                vocab_size=b.shape("encoder/embeddings_0/weight")[0],
                max_position_embeddings=b.shape("encoder/position_encodings/encodings")[0],
                activation=ACTIVATIONS.get(int(b.setting("encoder/activation", 3)), "gelu"))


def _t5_attention(b: _Builder, p: str, q: str, heads: int, cross: bool):
    inner = b.shape(q + "linear_0/weight")[0] // (1 if cross else 3)
    if inner % heads:
        b.fail(f"{q}linear_0 has {inner} rows per projection, not a multiple of num_heads {heads}")
    if cross:
        b.linear(p + "q", q + "linear_0")
        b.split([p + "k", p + "v"], q + "linear_1", [inner, inner])
        b.linear(p + "o", q + "linear_2")
    else:
        b.split([p + "q", p + "k", p + "v"], q + "linear_0", [inner, inner, inner])
        b.linear(p + "o", q + "linear_1")
    return inner // heads


def t5(b: _Builder, mt: str, cc: Mapping, vocab: Optional[list]) -> dict:
    d = b.shape("decoder/embeddings/weight")[1]
    ne, nd = b.layers("encoder"), b.layers("decoder")
    he, hdec = int(b.setting("encoder/num_heads")), int(b.setting("decoder/num_heads"))
    if he <= 0 or hdec <= 0 or he != hdec:
        b.fail(f"num_heads {he} / {hdec}: T5 has one positive head count for both stacks (a broken or edited file)")
    gated = b.has("encoder/layer_0/ffn/linear_0_noact/weight")
    for stack, n in (("encoder", ne), ("decoder", nd)):
        for i in range(n):
            p, q = f"{stack}.block.{i}.layer.", f"{stack}/layer_{i}/"
            dkv = _t5_attention(b, p + "0.SelfAttention.", q + "self_attention/", he, False)
            b.norm(p + "0.layer_norm", q + "self_attention/layer_norm")
            rel = q + "self_attention/relative_attention_bias"
            if i == 0:
                b.put(p + "0.SelfAttention.relative_attention_bias.weight", rel)
            elif b.has(rel):
                if b.src(rel) != b.src(f"{stack}/layer_0/self_attention/relative_attention_bias"):
                    b.fail(f"{rel} differs from layer 0's: T5 shares one table per stack")
                b.used.add(rel)
            f = 1
            if stack == "decoder":
                _t5_attention(b, p + "1.EncDecAttention.", q + "attention/", he, True)
                b.norm(p + "1.layer_norm", q + "attention/layer_norm")
                f = 2
            if gated:
                b.linear(f"{p}{f}.DenseReluDense.wi_0", q + "ffn/linear_0")
                b.linear(f"{p}{f}.DenseReluDense.wi_1", q + "ffn/linear_0_noact")
            else:
                b.linear(f"{p}{f}.DenseReluDense.wi", q + "ffn/linear_0")
            b.linear(f"{p}{f}.DenseReluDense.wo", q + "ffn/linear_1")
            b.norm(f"{p}{f}.layer_norm", q + "ffn/layer_norm")
        b.norm(f"{stack}.final_layer_norm", f"{stack}/layer_norm")
    if b.src("encoder/embeddings_0/weight") != b.src("decoder/embeddings/weight"):
        b.fail("the encoder and decoder embeddings differ: T5 shares one table")
    b.put("shared.weight", "decoder/embeddings/weight")
    b.used.add("encoder/embeddings_0/weight")
    tied = b.src("decoder/projection/weight") == b.src("decoder/embeddings/weight")
    b.used.add("decoder/projection/weight")
    if tied:
        b.dropped.append("lm_head.weight (tied to shared: the converter stored it as an alias)")
    else:
        b.put("lm_head.weight", "decoder/projection/weight")
    act = ACTIVATIONS.get(int(b.setting("encoder/activation", 0)), "relu")
    rel = b.shape("encoder/layer_0/self_attention/relative_attention_bias")
    cfg = dict(d_model=d, d_kv=dkv, num_heads=he, num_layers=ne, num_decoder_layers=nd,
               d_ff=b.shape("encoder/layer_0/ffn/linear_0/weight")[0],
               vocab_size=b.shape("decoder/embeddings/weight")[0],
               relative_attention_num_buckets=rel[0], tie_word_embeddings=tied,
               relative_attention_max_distance=int(b.setting(
                   "encoder/layer_0/self_attention/relative_attention_max_distance", 128)),
               # T5Config spells gelu_new "gelu" after "gated-" (its legacy alias)
               feed_forward_proj=("gated-" + ("gelu" if act == "gelu_new" else act)) if gated else act)
    ids = {t: i for i, t in enumerate(vocab or [])}
    for tok, key in (("bos_token", "pad_token_id"), ("eos_token", "eos_token_id"),  # T5's loader: bos = pad token
                     ("decoder_start_token", "decoder_start_token_id")):
        if cc.get(tok) in ids:
            cfg[key] = ids[cc[tok]]
    return cfg
