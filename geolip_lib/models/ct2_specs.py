"""CTranslate2 specs written by ``ct2-transformers-converter`` mapped back to transformers state-dict keys.

The converter (``ctranslate2/converters/transformers.py``, one ``*Loader`` per transformers config class) fills a
spec (``ctranslate2/specs/transformer_spec.py``, ``attention_spec.py``, ``common_spec.py``) with the model's
tensors under CTranslate2's own names. This module inverts the loaders for the families read here (the maps live
in :mod:`.ct2_decoders`: Llama, Mistral, Qwen2, Qwen3, Gemma, GPT-2, OPT, GPT-NeoX, GPT-J, BLOOM, Falcon; and
:mod:`.ct2_encoders`: BERT, RoBERTa, XLM-RoBERTa, DistilBERT, Marian, T5; Whisper is :mod:`.ct2_whisper`'s); each
inverse is a *plan*: one :class:`Entry` per transformers tensor (which CTranslate2 variable, which rows of a fused
projection, transposed or not, rows to add back), built from the variable table alone (names, shapes and the
rank-0 settings such as ``num_heads``), so the preflight's header needs no tensor data and the conversion applies
the same plan to the values. What the loaders did, and how it is undone:

* fused projections: self-attention ``linear_0`` = ``[q; k; v]`` (grouped-query sizes from ``num_heads_kv``),
  cross-attention ``linear_1`` = ``[k; v]``: split by rows;
* GPT-2's ``Conv1D`` weights were transposed (``set_linear``): transposed back;
* row orders: GPT-NeoX / BLOOM / Falcon store per-head q/k/v interleaves as ``[q; k; v]``, GPT-J permutes q and
  k for its sliced rotary: the order is put back (:attr:`Entry.perm`);
* rows the converter drops: Marian's ``<pad>`` row (its decoder starts from a zero embedding instead), OPT's first
  two position rows, RoBERTa's first ``padding_idx + 1``: never read, added back as zeros (noted);
* layer norms: ``gamma`` / ``beta`` -> ``weight`` / ``bias``; RMS norms have ``gamma`` only (Gemma's stored as
  transformers keeps it: CTranslate2 adds the 1 itself);
* what the converter dropped (a tied ``lm_head``, XLM-RoBERTa's classifier) is noted, not invented; a zero
  ``final_logits_bias`` it skipped is given as zeros (:attr:`Plan.filled`).

A variable the plan has no place for is refused by name (one line); so is a head count that is zero or does not
fit the shapes. ``model_type`` is read from the structure where only one loader writes it (Qwen2: q/k/v biases
without an o bias; Qwen3: q/k norms; Gemma: norms stored as ``1 + weight``; GPT-2: learned positions + gelu_new;
OPT: learned positions + ReLU; BLOOM: ALiBi + embedding norm; GPT-J: one shared norm; Falcon: parallel attention
with fewer kv heads; BERT: two token types + pooler; DistilBERT: neither; Marian: zero start embedding; T5:
relative attention bias). A Llama-shaped file is also what Mistral writes, and RoBERTa / XLM-RoBERTa write what
BERT does (one token type instead of two), so ``model_type`` is asked for by name there.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

import numpy as np

__all__ = ["Entry", "Plan", "apply", "plan", "SUPPORTED"]

#: ``common_spec.Activation`` ids -> transformers activation names
ACTIVATIONS = {0: "relu", 1: "gelu_new", 2: "silu", 3: "gelu", 4: "gelu_fast", 5: "tanh"}
#: spec name -> the model types whose inverse is here
SUPPORTED = {"TransformerDecoderSpec": ("llama", "mistral", "qwen2", "qwen3", "gemma", "gpt2", "opt", "gpt_neox",
                                       "gptj",
                                       "bloom", "falcon"),
             "TransformerEncoderSpec": ("bert", "roberta", "xlm-roberta", "distilbert"),
             "TransformerSpec": ("marian", "t5", "mt5")}
#: model_type -> the project's family (``geolip_lib.families``) that builds it
FAMILIES = {"llama": "decoder_lm", "mistral": "decoder_lm", "qwen2": "decoder_lm", "qwen3": "decoder_lm",
            "gemma": "decoder_lm",
            "gpt2": "gpt2", "opt": "opt", "gpt_neox": "gpt_neox", "gptj": "gptj", "bloom": "bloom", "falcon": "falcon",
            "bert": "bert",
            "roberta": "bert", "xlm-roberta": "bert", "distilbert": "distilbert", "marian": "bart",
            "t5": ("t5", "t5_v1_1"), "mt5": ("t5", "t5_v1_1")}
#: model_type -> the transformers class the converter read (``architecture_name`` of its loader)
ARCHITECTURES = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM",
                 "qwen3": "Qwen3ForCausalLM",
                 "gemma": "GemmaForCausalLM", "gpt2": "GPT2LMHeadModel", "opt": "OPTForCausalLM",
                 "gpt_neox": "GPTNeoXForCausalLM", "gptj": "GPTJForCausalLM", "bloom": "BloomForCausalLM",
                 "falcon": "FalconForCausalLM",
                 "bert": "BertModel", "roberta": "RobertaModel", "xlm-roberta": "XLMRobertaModel",
                 "distilbert": "DistilBertModel", "marian": "MarianMTModel", "t5": "T5ForConditionalGeneration",
                 "mt5": "MT5ForConditionalGeneration"}


@dataclass(frozen=True)
class Entry:
    """One transformers tensor: ``key`` <- rows ``rows`` of CTranslate2 variable ``name`` (after aliases),
    transposed when ``transpose``, with ``pad_rows`` zero rows appended and ``pad_front`` zero rows put first."""

    key: str
    name: str
    rows: Optional[tuple[int, int]] = None
    transpose: bool = False
    pad_rows: int = 0
    pad_front: int = 0
    #: row order to undo after slicing: transformers row i is stored row ``perm[i]`` (GPT-NeoX's per-head q/k/v,
    #: GPT-J's rotary halves)
    perm: Optional[tuple] = None
    #: a tensor the file does not hold, of zeros of this shape (``name`` then names what it stands beside)
    zeros: Optional[tuple] = None


@dataclass
class Plan:
    entries: list
    config: dict
    notes: list
    dropped: list
    filled: list = field(default_factory=list)  #: keys the class fills itself (a zero bias the converter skipped)


class _Builder:
    """Collects entries; knows the table (shapes of stored variables, aliases, settings) and the file's name."""

    def __init__(self, where: str, shapes: Mapping, aliases: Mapping, settings: Mapping):
        self.where, self.shapes, self.aliases, self.settings = where, shapes, aliases, settings
        self.entries: list[Entry] = []
        self.notes: list[str] = []
        self.dropped: list[str] = []
        self.filled: list[str] = []
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
    from . import ct2_decoders as dec, ct2_encoders as enc  # they import this module's builder

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


def shape_of(e: Entry, shapes: Mapping) -> tuple:
    if e.zeros is not None:
        return tuple(e.zeros)
    s = list(shapes[e.name])
    if e.rows is not None:
        s[0] = e.rows[1] - e.rows[0]
    if e.transpose:
        s = s[::-1]
    s[0] += e.pad_rows + e.pad_front
    return tuple(s)


def apply(p: Plan, values: Mapping[str, np.ndarray]) -> dict:
    """``{key: float32 array}`` of the plan on the (dequantized, float32) variable values."""
    out = {}
    for e in p.entries:
        if e.zeros is not None:
            out[e.key] = np.zeros(e.zeros, np.float32)
            continue
        a = np.asarray(values[e.name], dtype=np.float32)
        if e.rows is not None:
            a = a[e.rows[0]:e.rows[1]]
        if e.perm is not None:
            a = a[np.asarray(e.perm)]
        if e.transpose:
            a = a.T
        if e.pad_rows:
            a = np.concatenate([a, np.zeros((e.pad_rows,) + a.shape[1:], np.float32)], 0)
        if e.pad_front:
            a = np.concatenate([np.zeros((e.pad_front,) + a.shape[1:], np.float32), a], 0)
        a = np.ascontiguousarray(a)
        if any(np.may_share_memory(a, o) for o in out.values() if o.shape == a.shape):  # an alias placed twice:
            a = a.copy()  # its own copy (a writer refuses tensors sharing memory that it has not tied itself)
        out[e.key] = a
    return out
