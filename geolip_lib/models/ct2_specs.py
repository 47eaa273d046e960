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
