"""Inverse maps of the decoder loaders of ``ct2-transformers-converter`` (see :mod:`.ct2_specs`).

Llama / Mistral / Qwen2 / Qwen3 / Gemma (``LlamaLoader``, ``MistralLoader``, ``Qwen2Loader``, ``Qwen3Loader``,
``GemmaLoader``): RMS norms (Qwen3 also per-head q / k norms)
(``gamma`` only; Gemma's is stored as transformers keeps it, ``1 + weight`` applied by both sides:
CTranslate2's ``layer_norm_use_residual``), ``[q; k; v]`` with grouped-query sizes, gated FFN (``linear_0`` the
gate, ``linear_0_noact`` the up projection), rotary not interleaved (no row permutation to undo). GPT-2: Conv1D
weights transposed back. OPT: the first two rows of the learned position table are dropped by the converter
(OPT's positions start at 2; the rows are never read): added back as zeros, noted. GPT-NeoX: the converter
reorders the per-head ``[q_h; k_h; v_h]`` rows of ``query_key_value`` into ``[q; k; v]``: put back. BLOOM: the
same per-head interleave, put back; ALiBi needs no weight. Falcon: each kv layout's order put back. GPT-J: q and k
rows were permuted for CTranslate2's sliced rotary (``utils.permute_for_sliced_rotary``): the inverse is computed
by applying the converter's own function to the row indices, so it cannot drift from it.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from ..lazy import lazy
from .ct2_specs import ACTIVATIONS, _Builder

#: the converter's own rotary permutation (GPT-J), inverted here; its import loads CTranslate2's native library
ct2_utils = lazy("ctranslate2.converters.utils")

def llama(b: _Builder, mt: str, cc: Mapping) -> dict:
    d = b.shape("decoder/embeddings/weight")[1]
    n = b.layers("decoder")
    heads = b.heads("decoder/num_heads", d)
    kv = int(b.setting("decoder/layer_0/self_attention/num_heads_kv", heads)) if b.has(
        "decoder/layer_0/self_attention/num_heads_kv") else heads
    if kv <= 0 or heads % kv:
        b.fail(f"num_heads_kv is {kv}, which does not divide num_heads {heads} (a broken or edited file)")
    rows = b.shape("decoder/layer_0/self_attention/linear_0/weight")[0]
    if rows % (heads + 2 * kv):
        b.fail(f"self_attention/linear_0 has {rows} rows: not (num_heads + 2 num_heads_kv) x head_dim for "
               f"{heads} / {kv} heads")
    hd = rows // (heads + 2 * kv)
    if int(b.setting("decoder/layer_0/self_attention/rotary_interleave", 0)) != 0:
        b.fail("rotary_interleave is set (GPT-J style rotary): not a Llama / Mistral / Qwen2 / Gemma conversion")
    rdim = int(b.setting("decoder/layer_0/self_attention/rotary_dim", 0))
    if rdim not in (0, hd):
        b.fail(f"rotary_dim {rdim} covers part of the head ({hd}): not a Llama / Mistral / Qwen2 conversion")
    if b.has("decoder/layer_0/self_attention/rotary_scaling_type"):
        b.fail("rotary scaling (rope_scaling) is set: this reader does not map it yet")
    for i in range(n):
        p, q = f"model.layers.{i}.", f"decoder/layer_{i}/"
        b.norm(p + "input_layernorm", q + "self_attention/layer_norm")
        b.norm(p + "post_attention_layernorm", q + "ffn/layer_norm")
        b.split([p + "self_attn.q_proj", p + "self_attn.k_proj", p + "self_attn.v_proj"],
                q + "self_attention/linear_0", [heads * hd, kv * hd, kv * hd])
        b.linear(p + "self_attn.o_proj", q + "self_attention/linear_1")
        if mt == "qwen3":  # per-head RMS norms of q and k (Qwen3Loader: self_attention.q_norm / k_norm)
            b.norm(p + "self_attn.q_norm", q + "self_attention/q_norm")
            b.norm(p + "self_attn.k_norm", q + "self_attention/k_norm")
        b.linear(p + "mlp.gate_proj", q + "ffn/linear_0")
        b.linear(p + "mlp.up_proj", q + "ffn/linear_0_noact")
        b.linear(p + "mlp.down_proj", q + "ffn/linear_1")
    b.put("model.embed_tokens.weight", "decoder/embeddings/weight")
    b.norm("model.norm", "decoder/layer_norm")
    tied = _tied(b, "lm_head.weight")
    qb = b.has("decoder/layer_0/self_attention/linear_0/bias")
    ob = b.has("decoder/layer_0/self_attention/linear_1/bias")
    if mt == "qwen2" and ob:
        b.fail("an o_proj bias: Qwen2 has none (not a Qwen2 conversion)")
    cfg = dict(hidden_size=d, num_hidden_layers=n, num_attention_heads=heads, num_key_value_heads=kv,
               intermediate_size=b.shape("decoder/layer_0/ffn/linear_0/weight")[0],
               vocab_size=b.shape("decoder/embeddings/weight")[0], tie_word_embeddings=tied,
               rope_theta=float(b.setting("decoder/layer_0/self_attention/rotary_base", 10000.0)),
               hidden_act=ACTIVATIONS.get(int(b.setting("decoder/activation", 2)), "silu"))
    if hd * heads != d or mt in ("gemma", "qwen3"):
        cfg["head_dim"] = hd
    if mt == "gemma":  # hidden_act is Gemma's legacy field; hidden_activation the one it reads
        cfg["hidden_activation"] = "gelu_pytorch_tanh" if int(b.setting("decoder/activation", 1)) == 1 else "gelu"
        cfg.pop("hidden_act")
        if not tied:
            b.fail("Gemma ties its output projection to the embeddings; this file has its own (not a Gemma conversion)")
    if mt in ("llama", "mistral", "qwen3"):
        cfg["attention_bias"] = qb
        if qb != ob:
            b.fail(f"q/k/v bias {qb} but o bias {ob}: Llama / Mistral have both or neither (Qwen2?)")
    if mt == "llama":
        cfg["mlp_bias"] = b.has("decoder/layer_0/ffn/linear_0/bias")
    if cc.get("layer_norm_epsilon") is not None:
        cfg["rms_norm_eps"] = float(cc["layer_norm_epsilon"])
    return cfg


def gpt2(b: _Builder, cc: Mapping) -> dict:
    d = b.shape("decoder/embeddings/weight")[1]
    n = b.layers("decoder")
    heads = b.heads("decoder/num_heads", d)
    for i in range(n):
        p, q = f"transformer.h.{i}.", f"decoder/layer_{i}/"
        b.norm(p + "ln_1", q + "self_attention/layer_norm")
        b.linear(p + "attn.c_attn", q + "self_attention/linear_0", transpose=True)  # Conv1D: stored as (in, out)
        b.linear(p + "attn.c_proj", q + "self_attention/linear_1", transpose=True)
        b.norm(p + "ln_2", q + "ffn/layer_norm")
        b.linear(p + "mlp.c_fc", q + "ffn/linear_0", transpose=True)
        b.linear(p + "mlp.c_proj", q + "ffn/linear_1", transpose=True)
    if b.shape("decoder/layer_0/self_attention/linear_0/weight")[0] != 3 * d:
        b.fail("decoder/layer_0/self_attention/linear_0 is not [q; k; v] of the model width: not GPT-2")
    b.put("transformer.wte.weight", "decoder/embeddings/weight")
    b.put("transformer.wpe.weight", "decoder/position_encodings/encodings")
    b.norm("transformer.ln_f", "decoder/layer_norm")
    tied = _tied(b, "lm_head.weight")
    cfg = dict(n_embd=d, n_layer=n, n_head=heads, n_inner=b.shape("decoder/layer_0/ffn/linear_0/weight")[0],
               n_positions=b.shape("decoder/position_encodings/encodings")[0],
               vocab_size=b.shape("decoder/embeddings/weight")[0], tie_word_embeddings=tied,
               activation_function=ACTIVATIONS.get(int(b.setting("decoder/activation", 1)), "gelu_new"))
    if cc.get("layer_norm_epsilon") is not None:
        cfg["layer_norm_epsilon"] = float(cc["layer_norm_epsilon"])
    return cfg


def opt(b: _Builder, cc: Mapping) -> dict:
    d = b.shape("decoder/embeddings/weight")[1]
    n = b.layers("decoder")
    heads = b.heads("decoder/num_heads", d)
    if b.has("decoder/project_in/weight") or b.has("decoder/project_out/weight"):
        b.fail("project_in / project_out (word_embed_proj_dim != hidden_size, OPT-350m): not mapped yet")
    for i in range(n):
        p, q = f"model.decoder.layers.{i}.", f"decoder/layer_{i}/"
        b.split([p + "self_attn.q_proj", p + "self_attn.k_proj", p + "self_attn.v_proj"],
                q + "self_attention/linear_0", [d, d, d])
        b.linear(p + "self_attn.out_proj", q + "self_attention/linear_1")
        b.norm(p + "self_attn_layer_norm", q + "self_attention/layer_norm")
        b.linear(p + "fc1", q + "ffn/linear_0")
        b.linear(p + "fc2", q + "ffn/linear_1")
        b.norm(p + "final_layer_norm", q + "ffn/layer_norm")
    b.put("model.decoder.embed_tokens.weight", "decoder/embeddings/weight")
    b.put("model.decoder.embed_positions.weight", "decoder/position_encodings/encodings", pad_front=2)
    b.notes.append("model.decoder.embed_positions.weight: rows 0-1 added back as zeros (the converter drops them: "
                   "OPT's positions start at 2, so they are never read)")
    pre = bool(int(b.setting("decoder/pre_norm", 1)))
    if b.has("decoder/layer_norm/gamma"):
        b.norm("model.decoder.final_layer_norm", "decoder/layer_norm")
    tied = _tied(b, "lm_head.weight")
    return dict(hidden_size=d, word_embed_proj_dim=d, num_hidden_layers=n, num_attention_heads=heads,
                ffn_dim=b.shape("decoder/layer_0/ffn/linear_0/weight")[0],
                vocab_size=b.shape("decoder/embeddings/weight")[0],
                max_position_embeddings=b.shape("decoder/position_encodings/encodings")[0],
                do_layer_norm_before=pre, tie_word_embeddings=tied, enable_bias=b.has(
                    "decoder/layer_0/self_attention/linear_0/bias"),
                activation_function=ACTIVATIONS.get(int(b.setting("decoder/activation", 0)), "relu"))


def _tied(b: _Builder, key: str) -> bool:
    tied = b.src("decoder/projection/weight") == "decoder/embeddings/weight"
    b.used.add("decoder/projection/weight")
    if tied:
        b.dropped.append(f"{key} (tied to the embeddings: the converter stored it as an alias)")
    else:
        b.linear(key.rsplit(".", 1)[0], "decoder/projection")
    return tied


def _rotary(b: _Builder, hd: int) -> int:
    if int(b.setting("decoder/layer_0/self_attention/rotary_interleave", 0)) != 0:
        b.fail("rotary_interleave is set: not how this family's loader writes rotary")
    r = int(b.setting("decoder/layer_0/self_attention/rotary_dim", 0))
    return hd if r == 0 else r


def gpt_neox(b: _Builder, cc: Mapping) -> dict:
    d = b.shape("decoder/embeddings/weight")[1]
    n = b.layers("decoder")
    heads = b.heads("decoder/num_heads", d)
    hd = d // heads
    # stored row j*d + h*hd + t (q/k/v j, head h) is transformers row h*3*hd + j*hd + t
    perm = tuple(int(i) for i in np.arange(3 * d).reshape(3, heads, hd).swapaxes(0, 1).reshape(-1))
    parallel = b.has("decoder/layer_0/input_layer_norm/gamma")
    for i in range(n):
        p, q = f"gpt_neox.layers.{i}.", f"decoder/layer_{i}/"
        if b.shape(q + "self_attention/linear_0/weight")[0] != 3 * d:
            b.fail(f"{q}self_attention/linear_0 is not [q; k; v] of the model width {d}")
        b.norm(p + "input_layernorm", q + ("input_layer_norm" if parallel else "self_attention/layer_norm"))
        b.norm(p + "post_attention_layernorm", q + ("post_attention_layer_norm" if parallel else "ffn/layer_norm"))
        b.put(p + "attention.query_key_value.weight", q + "self_attention/linear_0/weight", perm=perm)
        b.put(p + "attention.query_key_value.bias", q + "self_attention/linear_0/bias", perm=perm)
        b.linear(p + "attention.dense", q + "self_attention/linear_1")
        b.linear(p + "mlp.dense_h_to_4h", q + "ffn/linear_0")
        b.linear(p + "mlp.dense_4h_to_h", q + "ffn/linear_1")
    b.put("gpt_neox.embed_in.weight", "decoder/embeddings/weight")
    b.norm("gpt_neox.final_layer_norm", "decoder/layer_norm")
    tied = _tied(b, "lm_head.weight")  # the module's name; transformers writes it to files as embed_out
    rot = _rotary(b, hd)
    return dict(hidden_size=d, num_hidden_layers=n, num_attention_heads=heads, tie_word_embeddings=tied,
                intermediate_size=b.shape("decoder/layer_0/ffn/linear_0/weight")[0],
                vocab_size=b.shape("decoder/embeddings/weight")[0], use_parallel_residual=parallel,
                rope_parameters={"rope_type": "default", "partial_rotary_factor": rot / hd, "rope_theta": float(
                    b.setting("decoder/layer_0/self_attention/rotary_base", 10000.0))},
                hidden_act=ACTIVATIONS.get(int(b.setting("decoder/activation", 3)), "gelu"))


def bloom(b: _Builder, cc: Mapping) -> dict:
    d = b.shape("decoder/embeddings/weight")[1]
    n = b.layers("decoder")
    heads = b.heads("decoder/num_heads", d)
    hd = d // heads
    # the same per-head q/k/v interleave as GPT-NeoX (BloomLoader.set_qkv_linear)
    perm = tuple(int(i) for i in np.arange(3 * d).reshape(3, heads, hd).swapaxes(0, 1).reshape(-1))
    for i in range(n):
        p, q = f"transformer.h.{i}.", f"decoder/layer_{i}/"
        if b.shape(q + "self_attention/linear_0/weight")[0] != 3 * d:
            b.fail(f"{q}self_attention/linear_0 is not [q; k; v] of the model width {d}")
        b.norm(p + "input_layernorm", q + "self_attention/layer_norm")
        b.put(p + "self_attention.query_key_value.weight", q + "self_attention/linear_0/weight", perm=perm)
        b.put(p + "self_attention.query_key_value.bias", q + "self_attention/linear_0/bias", perm=perm)
        b.linear(p + "self_attention.dense", q + "self_attention/linear_1")
        b.norm(p + "post_attention_layernorm", q + "ffn/layer_norm")
        b.linear(p + "mlp.dense_h_to_4h", q + "ffn/linear_0")
        b.linear(p + "mlp.dense_4h_to_h", q + "ffn/linear_1")
    if b.shape("decoder/layer_0/ffn/linear_0/weight")[0] != 4 * d:
        b.fail("BLOOM's MLP is 4 x hidden_size wide; this file's is not (not a BLOOM conversion)")
    b.put("transformer.word_embeddings.weight", "decoder/embeddings/weight")
    b.norm("transformer.word_embeddings_layernorm", "decoder/layernorm_embedding")
    b.norm("transformer.ln_f", "decoder/layer_norm")
    tied = _tied(b, "lm_head.weight")
    cfg = dict(hidden_size=d, n_layer=n, n_head=heads, vocab_size=b.shape("decoder/embeddings/weight")[0],
               tie_word_embeddings=tied)
    if cc.get("layer_norm_epsilon") is not None:
        cfg["layer_norm_epsilon"] = float(cc["layer_norm_epsilon"])
    return cfg


def _falcon_perm(heads: int, kv: int, hd: int) -> tuple:
    """transformers row i of Falcon's fused ``query_key_value`` is stored row ``perm[i]``.

    Mirrors ``RWLoader.set_qkv_linear`` on the row indices (the converter has no inverse): one kv head keeps the
    ``[q; k; v]`` order; as many kv heads as heads interleave per head (as GPT-NeoX); grouped kv heads
    (``new_decoder_architecture``) store ``(group, heads / kv + 2, head_dim)`` rows."""
    idx = np.arange((heads + 2 * kv) * hd)
    if kv == 1:
        fwd = idx
    elif kv == heads:
        fwd = idx.reshape(heads, 3, hd).swapaxes(0, 1).reshape(-1)
    else:
        g = idx.reshape(kv, heads // kv + 2, hd)
        fwd = np.concatenate([g[:, :-2].reshape(-1), g[:, -2].reshape(-1), g[:, -1].reshape(-1)])
    return tuple(int(i) for i in np.argsort(fwd))  # stored row k holds transformers row fwd[k]


def falcon(b: _Builder, cc: Mapping) -> dict:
    d = b.shape("decoder/embeddings/weight")[1]
    n = b.layers("decoder")
    heads = b.heads("decoder/num_heads", d)
    hd = d // heads
    kvn = "decoder/layer_0/self_attention/num_heads_kv"
    kv = int(b.setting(kvn)) if b.has(kvn) else heads
    if kv <= 0 or heads % kv:
        b.fail(f"num_heads_kv is {kv}, which does not divide num_heads {heads} (a broken or edited file)")
    if b.shape("decoder/layer_0/self_attention/linear_0/weight")[0] != (heads + 2 * kv) * hd:
        b.fail(f"self_attention/linear_0 is not (num_heads + 2 num_heads_kv) x head_dim = {(heads + 2 * kv) * hd} rows")
    perm = _falcon_perm(heads, kv, hd)
    new = b.has("decoder/layer_0/input_layer_norm/gamma")
    shared = b.has("decoder/layer_0/shared_layer_norm/gamma")
    for i in range(n):
        p, q = f"transformer.h.{i}.", f"decoder/layer_{i}/"
        if new:
            b.norm(p + "ln_attn", q + "input_layer_norm")
            b.norm(p + "ln_mlp", q + "post_attention_layer_norm")
        elif shared:
            b.norm(p + "input_layernorm", q + "shared_layer_norm")
        else:
            b.norm(p + "input_layernorm", q + "self_attention/layer_norm")
            b.norm(p + "post_attention_layernorm", q + "ffn/layer_norm")
        b.put(p + "self_attention.query_key_value.weight", q + "self_attention/linear_0/weight", perm=perm)
        if b.has(q + "self_attention/linear_0/bias"):
            b.put(p + "self_attention.query_key_value.bias", q + "self_attention/linear_0/bias", perm=perm)
        b.linear(p + "self_attention.dense", q + "self_attention/linear_1")
        b.linear(p + "mlp.dense_h_to_4h", q + "ffn/linear_0")
        b.linear(p + "mlp.dense_4h_to_h", q + "ffn/linear_1")
    b.put("transformer.word_embeddings.weight", "decoder/embeddings/weight")
    b.norm("transformer.ln_f", "decoder/layer_norm")
    tied = _tied(b, "lm_head.weight")
    alibi = bool(int(b.setting("decoder/alibi", 0)))
    return dict(hidden_size=d, num_hidden_layers=n, num_attention_heads=heads, num_kv_heads=kv,
                new_decoder_architecture=new, multi_query=kv == 1 and not new, parallel_attn=new or shared,
                alibi=alibi, bias=b.has("decoder/layer_0/self_attention/linear_0/bias"),
                ffn_hidden_size=b.shape("decoder/layer_0/ffn/linear_0/weight")[0],
                vocab_size=b.shape("decoder/embeddings/weight")[0], tie_word_embeddings=tied)


def gptj(b: _Builder, cc: Mapping) -> dict:
    d = b.shape("decoder/embeddings/weight")[1]
    n = b.layers("decoder")
    heads = b.heads("decoder/num_heads", d)
    hd = d // heads
    rot = _rotary(b, hd)
    if rot % 2 or rot > hd:
        b.fail(f"rotary_dim {rot} does not fit the head size {hd}")
    rows = np.arange(d, dtype=np.float64)[:, None].copy()
    fwd = ct2_utils.permute_for_sliced_rotary(rows, heads, rot)[:, 0].astype(int)
    perm = tuple(int(i) for i in np.argsort(fwd))  # stored row k came from transformers row fwd[k]
    for i in range(n):
        p, q = f"transformer.h.{i}.", f"decoder/layer_{i}/"
        b.norm(p + "ln_1", q + "shared_layer_norm")
        lin = q + "self_attention/linear_0/weight"
        if b.shape(lin)[0] != 3 * d:
            b.fail(f"{lin} is not [q; k; v] of the model width {d}")
        b.put(p + "attn.q_proj.weight", lin, rows=(0, d), perm=perm)
        b.put(p + "attn.k_proj.weight", lin, rows=(d, 2 * d), perm=perm)
        b.put(p + "attn.v_proj.weight", lin, rows=(2 * d, 3 * d))
        b.linear(p + "attn.out_proj", q + "self_attention/linear_1")
        b.linear(p + "mlp.fc_in", q + "ffn/linear_0")
        b.linear(p + "mlp.fc_out", q + "ffn/linear_1")
    b.put("transformer.wte.weight", "decoder/embeddings/weight")
    b.norm("transformer.ln_f", "decoder/layer_norm")
    tied = _tied(b, "lm_head.weight")
    return dict(n_embd=d, n_layer=n, n_head=heads, n_inner=b.shape("decoder/layer_0/ffn/linear_0/weight")[0],
                rotary_dim=rot, vocab_size=b.shape("decoder/embeddings/weight")[0], tie_word_embeddings=tied,
                activation_function=ACTIVATIONS.get(int(b.setting("decoder/activation", 1)), "gelu_new"))
