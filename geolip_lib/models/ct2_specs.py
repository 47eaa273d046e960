"""CTranslate2 specs written by ``ct2-transformers-converter`` mapped back to transformers state-dict keys.

The converter (``ctranslate2/converters/transformers.py``, one ``*Loader`` per transformers config class) fills a
spec (``ctranslate2/specs/transformer_spec.py``, ``attention_spec.py``, ``common_spec.py``) with the model's
tensors under CTranslate2's own names. This module inverts the loaders for the families read here; each inverse
is a *plan*: one :class:`Entry` per transformers tensor (which CTranslate2 variable, which rows of a fused
projection, transposed or not, rows to add back), built from the variable table alone (names, shapes and the
rank-0 settings such as ``num_heads``), so the preflight's header needs no tensor data and the conversion applies
the same plan to the values. What the loaders did, and how it is undone:

* fused projections: self-attention ``linear_0`` = ``[q; k; v]`` (grouped-query sizes from ``num_heads_kv``),
  cross-attention ``linear_1`` = ``[k; v]``: split by rows;
* GPT-2's ``Conv1D`` weights were transposed (``set_linear``): transposed back;
* Marian: the converter drops the ``<pad>`` row of the shared embeddings and of the output projection (its
  decoder starts from a zero embedding instead): a zero row is added back (noted);
* layer norms: ``gamma`` / ``beta`` -> ``weight`` / ``bias``; Llama-style RMS norms have ``gamma`` only;
* what the converter dropped (GPT-2's tied ``lm_head``, Marian's sinusoidal position table that the class
  recomputes) is noted, not invented.

A variable the plan has no place for is refused by name (one line); so is a head count that is zero or does not
fit the shapes. ``model_type`` is read from the structure where only one family writes it (Qwen2: q/k/v biases
without an o bias; GPT-2: learned positions + pre-norm + gelu_new; BERT: token types + pooler; Marian: zero start
embedding); a Llama-shaped file is also what Mistral writes, so ``model_type`` is asked for by name there.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Optional

import numpy as np

__all__ = ["Entry", "Plan", "apply", "plan", "SUPPORTED"]

#: ``common_spec.Activation`` ids -> transformers activation names
ACTIVATIONS = {0: "relu", 1: "gelu_new", 2: "silu", 3: "gelu", 4: "gelu_fast", 5: "tanh"}
#: spec name -> the model types whose inverse is here
SUPPORTED = {"TransformerDecoderSpec": ("llama", "mistral", "qwen2", "gpt2"), "TransformerEncoderSpec": ("bert",),
             "TransformerSpec": ("marian",)}
#: model_type -> the project's family (``geolip_lib.families``) that builds it
FAMILIES = {"llama": "decoder_lm", "mistral": "decoder_lm", "qwen2": "decoder_lm", "gpt2": "gpt2", "bert": "bert",
            "marian": "bart"}
#: model_type -> the transformers class the converter read (``architecture_name`` of its loader)
ARCHITECTURES = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM",
                 "gpt2": "GPT2LMHeadModel", "bert": "BertModel", "marian": "MarianMTModel"}


@dataclass(frozen=True)
class Entry:
    """One transformers tensor: ``key`` <- rows ``rows`` of CTranslate2 variable ``name`` (after aliases),
    transposed when ``transpose``, with ``pad_rows`` zero rows appended."""

    key: str
    name: str
    rows: Optional[tuple[int, int]] = None
    transpose: bool = False
    pad_rows: int = 0


@dataclass
class Plan:
    entries: list
    config: dict
    notes: list
    dropped: list


class _Builder:
    """Collects entries; knows the table (shapes of stored variables, aliases, settings) and the file's name."""

    def __init__(self, where: str, shapes: Mapping, aliases: Mapping, settings: Mapping):
        self.where, self.shapes, self.aliases, self.settings = where, shapes, aliases, settings
        self.entries: list[Entry] = []
        self.notes: list[str] = []
        self.dropped: list[str] = []
        self.used: set[str] = set()

    def fail(self, what: str):
        raise ValueError(f"CTranslate2 file {self.where}: {what}")

    def src(self, name: str) -> str:
        return self.aliases.get(name, name)

    def has(self, name: str) -> bool:
        return self.src(name) in self.shapes

    def shape(self, name: str) -> tuple:
        if not self.has(name):
            self.fail(f"no variable {name!r} (not a file of this spec as the converter writes it)")
        return tuple(self.shapes[self.src(name)])

    def setting(self, name: str, default=None):
        v = self.settings.get(self.src(name))
        if v is None:
            if default is None:
                self.fail(f"no setting {name!r}")
            return default
        return np.asarray(v).reshape(-1)[0].item()

    def put(self, key: str, name: str, **kw):
        self.shape(name)
        self.used.add(name)
        self.entries.append(Entry(key, self.src(name), **kw))

    def linear(self, key: str, name: str, transpose: bool = False):
        self.put(f"{key}.weight", f"{name}/weight", transpose=transpose)
        if self.has(f"{name}/bias"):
            self.put(f"{key}.bias", f"{name}/bias")

    def norm(self, key: str, name: str):
        self.put(f"{key}.weight", f"{name}/gamma")
        if self.has(f"{name}/beta"):
            self.put(f"{key}.bias", f"{name}/beta")

    def split(self, keys: list, name: str, sizes: list, bias: str = "all"):
        """Rows of fused ``name/weight`` (and ``name/bias``) to ``keys``; ``bias``: "all" | "none"."""
        rows = self.shape(f"{name}/weight")[0]
        if sum(sizes) != rows:
            self.fail(f"{name}/weight has {rows} rows, a fused projection of sizes {sizes} has {sum(sizes)} "
                      f"(num_heads / num_heads_kv do not fit the shapes)")
        start = 0
        for key, n in zip(keys, sizes):
            self.put(f"{key}.weight", f"{name}/weight", rows=(start, start + n))
            if bias == "all" and self.has(f"{name}/bias"):
                self.put(f"{key}.bias", f"{name}/bias", rows=(start, start + n))
            start += n

    def layers(self, stack: str) -> int:
        ids = sorted({int(m.group(1)) for m in (re.match(rf"^{stack}/layer_(\d+)/", n) for n in self.shapes) if m})
        if not ids or ids != list(range(len(ids))):
            self.fail(f"{stack} layers {ids[:5]} are not 0..n-1")
        return len(ids)

    def heads(self, name: str, d: int) -> int:
        h = int(self.setting(name))
        if h <= 0 or d % h:
            self.fail(f"{name} is {h}, which does not divide the model width {d} (a broken or edited file)")
        return h

    def leftover(self):
        placed = {self.src(n) for n in self.used}
        for n, shp in self.shapes.items():
            if n in placed or len(shp) == 0 or n.endswith("/weight_scale"):
                continue
            self.fail(f"variable {n!r} {list(shp)} has no place in the transformers model (this reader does not "
                      f"map it; the conversion would lose it)")


def _llama(b: _Builder, mt: str, cc: Mapping) -> dict:
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
        b.fail("rotary_interleave is set (GPT-J style rotary): not a Llama / Mistral / Qwen2 conversion")
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
        b.linear(p + "mlp.gate_proj", q + "ffn/linear_0")
        b.linear(p + "mlp.up_proj", q + "ffn/linear_0_noact")
        b.linear(p + "mlp.down_proj", q + "ffn/linear_1")
    b.put("model.embed_tokens.weight", "decoder/embeddings/weight")
    b.norm("model.norm", "decoder/layer_norm")
    tied = b.src("decoder/projection/weight") == "decoder/embeddings/weight"
    b.used.add("decoder/projection/weight")
    if tied:
        b.dropped.append("lm_head.weight (tied to the embeddings: the converter stored it as an alias)")
    else:
        b.put("lm_head.weight", "decoder/projection/weight")
    qb, ob = b.has("decoder/layer_0/self_attention/linear_0/bias"), b.has("decoder/layer_0/self_attention/linear_1/bias")
    if mt == "qwen2" and ob:
        b.fail("an o_proj bias: Qwen2 has none (not a Qwen2 conversion)")
    cfg = dict(hidden_size=d, num_hidden_layers=n, num_attention_heads=heads, num_key_value_heads=kv,
               intermediate_size=b.shape("decoder/layer_0/ffn/linear_0/weight")[0],
               vocab_size=b.shape("decoder/embeddings/weight")[0], tie_word_embeddings=tied,
               rope_theta=float(b.setting("decoder/layer_0/self_attention/rotary_base", 10000.0)),
               hidden_act=ACTIVATIONS.get(int(b.setting("decoder/activation", 2)), "silu"))
    if hd * heads != d:
        cfg["head_dim"] = hd
    if mt in ("llama", "mistral"):
        cfg["attention_bias"] = qb
        if qb != ob:
            b.fail(f"q/k/v bias {qb} but o bias {ob}: Llama / Mistral have both or neither (Qwen2?)")
    if mt == "llama":
        cfg["mlp_bias"] = b.has("decoder/layer_0/ffn/linear_0/bias")
    if cc.get("layer_norm_epsilon") is not None:
        cfg["rms_norm_eps"] = float(cc["layer_norm_epsilon"])
    return cfg


def _gpt2(b: _Builder, cc: Mapping) -> dict:
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
    tied = b.src("decoder/projection/weight") == "decoder/embeddings/weight"
    b.used.add("decoder/projection/weight")
    if tied:
        b.dropped.append("lm_head.weight (tied to transformer.wte: the converter stored it as an alias)")
    else:
        b.put("lm_head.weight", "decoder/projection/weight")
    cfg = dict(n_embd=d, n_layer=n, n_head=heads, n_inner=b.shape("decoder/layer_0/ffn/linear_0/weight")[0],
               n_positions=b.shape("decoder/position_encodings/encodings")[0],
               vocab_size=b.shape("decoder/embeddings/weight")[0], tie_word_embeddings=tied,
               activation_function=ACTIVATIONS.get(int(b.setting("decoder/activation", 1)), "gelu_new"))
    if cc.get("layer_norm_epsilon") is not None:
        cfg["layer_norm_epsilon"] = float(cc["layer_norm_epsilon"])
    return cfg


def _bert(b: _Builder, cc: Mapping) -> dict:
    d = b.shape("encoder/embeddings_0/weight")[1]
    n = b.layers("encoder")
    heads = b.heads("encoder/num_heads", d)
    b.put("embeddings.word_embeddings.weight", "encoder/embeddings_0/weight")
    b.put("embeddings.token_type_embeddings.weight", "encoder/embeddings_1/weight")
    b.put("embeddings.position_embeddings.weight", "encoder/position_encodings/encodings")
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
    b.linear("pooler.dense", "pooler_dense")
    cfg = dict(hidden_size=d, num_hidden_layers=n, num_attention_heads=heads,
               intermediate_size=b.shape("encoder/layer_0/ffn/linear_0/weight")[0],
               vocab_size=b.shape("encoder/embeddings_0/weight")[0],
               type_vocab_size=b.shape("encoder/embeddings_1/weight")[0],
               max_position_embeddings=b.shape("encoder/position_encodings/encodings")[0],
               hidden_act=ACTIVATIONS.get(int(b.setting("encoder/activation", 3)), "gelu"))
    if cc.get("layer_norm_epsilon") is not None:
        cfg["layer_norm_eps"] = float(cc["layer_norm_epsilon"])
    return cfg


def _bart_layers(b: _Builder, stack: str, n: int, d: int):
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


def _marian(b: _Builder, cc: Mapping, vocab: Optional[list]) -> dict:
    d = b.shape("decoder/embeddings/weight")[1]
    ne, nd = b.layers("encoder"), b.layers("decoder")
    he, hdec = b.heads("encoder/num_heads", d), b.heads("decoder/num_heads", d)
    _bart_layers(b, "encoder", ne, d)
    _bart_layers(b, "decoder", nd, d)
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
    for s in ("encoder", "decoder"):
        if b.has(f"{s}/position_encodings/encodings"):
            b.used.add(f"{s}/position_encodings/encodings")
    b.dropped.append("model.{encoder,decoder}.embed_positions.weight (sinusoidal: the class recomputes them; "
                     "compared with the file's at the check)")
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
        if b.has("encoder/embeddings_1/weight") and b.has("pooler_dense/weight"):
            return "bert"
    elif spec == "TransformerSpec":
        if int(b.setting("decoder/start_from_zero_embedding", 0)) == 1:
            return "marian"
    elif b.has("decoder/layer_0/ffn/linear_0_noact/weight"):
        if b.has("decoder/layer_0/self_attention/linear_0/bias") and not b.has(
                "decoder/layer_0/self_attention/linear_1/bias"):
            return "qwen2"
        b.fail("a Llama-shaped decoder (Llama and Mistral write the same variables): say which with "
               "config: {model_type: llama} (or mistral, qwen2) in the params file")
    elif b.has("decoder/position_encodings/encodings") and int(b.setting("decoder/activation", -1)) == 1:
        return "gpt2"
    b.fail(f"a {spec} whose structure this reader cannot place: say which model with config: {{model_type: ...}} "
           f"({', '.join(SUPPORTED[spec])})")


def plan(where: str, spec: str, shapes: Mapping, aliases: Mapping, settings: Mapping, ct2_config: Mapping,
         vocab: Optional[list], given: Mapping[str, Any], family: Optional[str] = None) -> Plan:
    """The inverse of the converter for this file (see the module docstring); ``given``: the params file's
    ``config:`` (``model_type`` when the structure leaves it open)."""
    b = _Builder(where, shapes, aliases, settings)
    mt = _model_type(b, spec, given)
    if family is not None and family != FAMILIES[mt]:
        b.fail(f"a {mt} conversion ({spec}), which family {FAMILIES[mt]} builds; the params file says family {family}")
    cc = ct2_config or {}
    if mt in ("llama", "mistral", "qwen2"):
        cfg = _llama(b, mt, cc)
    elif mt == "gpt2":
        cfg = _gpt2(b, cc)
    elif mt == "bert":
        cfg = _bert(b, cc)
    else:
        cfg = _marian(b, cc, vocab)
    b.leftover()
    if mt != "marian" and vocab:
        ids = {t: i for i, t in enumerate(vocab)}
        for tok, key in (("bos_token", "bos_token_id"), ("eos_token", "eos_token_id"), ("unk_token", "unk_token_id")):
            if cc.get(tok) in ids and key != "unk_token_id":
                cfg[key] = ids[cc[tok]]
    cfg = {"model_type": mt, "architectures": [ARCHITECTURES[mt]], **cfg}
    return Plan(b.entries, cfg, b.notes, b.dropped)


def shape_of(e: Entry, shapes: Mapping) -> tuple:
    s = list(shapes[e.name])
    if e.rows is not None:
        s[0] = e.rows[1] - e.rows[0]
    if e.transpose:
        s = s[::-1]
    s[0] += e.pad_rows
    return tuple(s)


def apply(p: Plan, values: Mapping[str, np.ndarray]) -> dict:
    """``{key: float32 array}`` of the plan on the (dequantized, float32) variable values."""
    out = {}
    for e in p.entries:
        a = np.asarray(values[e.name], dtype=np.float32)
        if e.rows is not None:
            a = a[e.rows[0]:e.rows[1]]
        if e.transpose:
            a = a.T
        if e.pad_rows:
            a = np.concatenate([a, np.zeros((e.pad_rows,) + a.shape[1:], np.float32)], 0)
        out[e.key] = np.ascontiguousarray(a)
    return out
