"""The transformers classes a set of state-dict keys can fill, built on the meta device (part of :mod:`.rebuild`).

Key spaces. transformers 5 renames some modules at load time (DINOv2's ``attention.attention.query`` is
``attention.q_proj`` in the running model; the experts of a mixture-of-experts are fused) and writes the 4.x names
back on save: ``revert_weight_conversion`` of the meta model's state dict gives the names of a checkpoint, and
those are exactly the names transformers 4.57 uses (compared for every tiny model_type of the family registry:
no difference). So a reader's keys are placed against the checkpoint names first (``ckpt``), then against the
running model's names (``runtime``), which are turned into checkpoint names by transformers' own
``revert_weight_conversion`` -- the conversion tables live in transformers, not here.
"""
from __future__ import annotations

import contextlib
import inspect
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

import torch
import transformers
from transformers import AutoConfig
from transformers.core_model_loading import revert_weight_conversion

from .common import quiet_transformers

__all__ = ["AUTOS", "Layout", "Placement", "best_place", "candidates", "layouts", "refuse_misfit", "make_config", "output_ties", "place", "to_ckpt"]

#: the auto mappings whose classes are candidates, in order of preference on a tie (an encoder's masked-LM head
#: and its causal-LM head have the same tensors: the masked one is what encoders are exported as, unless the
#: config says ``is_decoder``)
AUTOS = ("AutoModel", "AutoModelForMaskedLM", "AutoModelForCausalLM", "AutoModelForSeq2SeqLM",
         "AutoModelForSpeechSeq2Seq", "AutoModelForPreTraining", "AutoModelForTextEncoding")
#: towers a dual encoder is exported alone as (their config is a sub-config of the model_type's)
EXTRA = {"clip": ("CLIPTextModel", "CLIPTextModelWithProjection", "CLIPVisionModel", "CLIPVisionModelWithProjection"),
         "siglip": ("SiglipTextModel", "SiglipVisionModel")}


def make_config(cfg: Mapping[str, Any]):
    """A transformers config from a dict with ``model_type``; an unknown field value is a one-line ValueError."""
    cfg = dict(cfg)
    mt = cfg.pop("model_type")
    try:
        with quiet_transformers():
            return AutoConfig.for_model(mt, **cfg)
    except (ValueError, TypeError, KeyError) as e:
        raise ValueError(f"config: transformers cannot build a {mt} config from these fields: "
                         f"{str(e).splitlines()[0][:200]}") from None


@dataclass
class Layout:
    """One candidate class built on meta: its checkpoint names and shapes, its running names, its ties."""

    cls: type
    model: Any
    ckpt: dict
    runtime: dict
    prefix: str
    tied: dict = field(default_factory=dict)
    #: non-persistent buffers (``position_ids``, rotary ``inv_freq``): not saved; a reader that gives one is not wrong
    buffers: frozenset = frozenset()
    #: the constructor's keywords this layout was built with (``add_pooling_layer=False``: the class without its
    #: pooler, which feature-extraction exports leave out since the pooled output is not what they return)
    kwargs: dict = field(default_factory=dict)


#: buffers older transformers saved (or an exporter keeps) that a 5.x model computes: a per-layer rotary
#: ``inv_freq``, GPT-2 / GPT-J's causal-mask ``attn.bias`` / ``attn.masked_bias``, ``position_ids``
LEGACY_BUFFERS = re.compile(r"(?:^|\.)(?:rotary_emb\.inv_freq|attn\.masked_bias|attn\.bias|position_ids)$")


def _classes(config) -> list:
    out: list = []
    autos = list(AUTOS)
    if getattr(config, "is_decoder", False):
        autos.remove("AutoModelForCausalLM")
        autos.insert(1, "AutoModelForCausalLM")
    for name in autos:
        auto = getattr(transformers, name, None)
        try:
            cls = auto._model_mapping[type(config)]
        except (KeyError, AttributeError, ValueError):
            continue
        for c in (cls if isinstance(cls, (list, tuple)) else (cls,)):
            if c not in out:
                out.append(c)
    for name in EXTRA.get(config.model_type, ()):
        c = getattr(transformers, name, None)
        if c is not None and c not in out:
            out.append(c)
    return out


def _sub(cls, config):
    """The config ``cls`` takes: ``config`` or the sub-config of its type (CLIPTextModel of a CLIPConfig)."""
    want = getattr(cls, "config_class", None)
    if want is None or isinstance(config, want):
        return config
    for v in vars(config).values():
        if isinstance(v, want):
            return v
    return None


def _builds(cls) -> list:
    """The constructor keywords each candidate of ``cls`` is built with: as it is, and -- where its constructor
    takes ``add_pooling_layer`` (BertModel, RobertaModel, ViTModel ...) -- without the pooler, which Optimum's
    feature-extraction graphs do not hold (they return the hidden states only). The class offers that switch
    itself, so the rebuilt folder holds exactly the file's tensors and no pooler is ever made up."""
    try:
        takes = "add_pooling_layer" in inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        takes = False
    return [{}, {"add_pooling_layer": False}] if takes else [{}]


def layouts(config, errors: list | None = None) -> list[Layout]:
    """Every candidate class of ``config``'s model_type, built on meta (a class that cannot be built is left out,
    its error's first line appended to ``errors``); a class with a switchable pooler twice (:func:`_builds`)."""
    out = []
    for cls, kw in ((c, kw) for c in _classes(config) for kw in _builds(c)):
        sub = _sub(cls, config)
        if sub is None:
            continue
        try:
            with quiet_transformers(), torch.device("meta"):
                model = cls(sub, **kw)
        except Exception as e:  # noqa: BLE001 -- a class this config cannot make: not a candidate
            if errors is not None:
                errors.append(f"{cls.__name__}: {(str(e).splitlines() or [type(e).__name__])[0][:200]}")
            continue
        sd = model.state_dict()
        with quiet_transformers(), contextlib.suppress(Exception):
            ck = revert_weight_conversion(model, dict(sd))
            ck = {k: tuple(v.shape) for k, v in ck.items()}
            out.append(Layout(cls, model, ck, {k: tuple(v.shape) for k, v in sd.items()},
                              getattr(model, "base_model_prefix", "") or "",
                              dict(getattr(model, "all_tied_weights_keys", {}) or {}),
                              frozenset(k for k, _ in model.named_buffers() if k not in sd), dict(kw)))
    return out


@dataclass
class Placement:
    """Where the given keys go in one layout: ``ckpt`` (given -> checkpoint key), ``runtime`` (given -> running
    key, to be reverted), ``unplaced`` (given keys with no place), ``missing`` (checkpoint keys nobody fills),
    ``buffers`` (given keys that are non-persistent buffers: left out, transformers computes them), ``twins``
    (absent checkpoint key -> the present key it is tied to, whose values it takes: see :func:`place`)."""

    layout: Layout
    ckpt: dict
    runtime: dict
    unplaced: list
    missing: list
    buffers: list = field(default_factory=list)
    twins: dict = field(default_factory=dict)

    @property
    def score(self) -> tuple:
        """Fewest tensors without a place, then fewest missing, then fewest keys whose prefix had to change (a
        ``model.``-prefixed file is the head class that has that prefix, not the bare model)."""
        moved = sum(k != v for k, v in self.ckpt.items()) + sum(k != v for k, v in self.runtime.items())
        return (len(self.unplaced), len(self.missing), moved)


def _variants(key: str, prefix: str) -> list:
    out = [key]
    if prefix:
        if key.startswith(prefix + "."):
            out.append(key[len(prefix) + 1:])
        else:
            out.append(f"{prefix}.{key}")
    return out


def place(keys, lay: Layout, optional=()) -> Placement:
    """Place ``keys`` in ``lay``; ``optional``: checkpoint keys whose absence is fine (ties, caller-filled)."""
    ck, rt, unplaced, buffers = {}, {}, [], []
    for k in keys:
        for v in _variants(k, lay.prefix):
            if v in lay.ckpt:
                ck[k] = v
                break
            if v in lay.runtime:
                rt[k] = v
                break
            if v in lay.buffers:
                buffers.append(k)
                break
        else:
            (buffers if LEGACY_BUFFERS.search(k) else unplaced).append(k)
    have = set(ck.values())
    if rt:
        have |= set(to_ckpt(lay, {v: torch.empty(lay.runtime[v], device="meta") for v in rt.values()}))
    missing = [k for k in lay.ckpt if k not in have and k not in optional]
    twins = {}
    for k in missing:  # a tie's source absent, one of its tied copies present: the same Parameter in the class
        group = [k] + [t for t, s in lay.tied.items() if s == k] if k in lay.tied.values() else []
        twin = next((t for t in group if t in have), None)
        if twin is not None:
            twins[k] = twin
    missing = [k for k in missing if k not in twins]
    return Placement(lay, ck, rt, unplaced, missing, buffers, twins)


def best_place(keys, lays: list, architectures=()) -> Placement:
    """The placement of ``keys`` in the layout that fits best (:attr:`Placement.score`); between equals, a class
    the config's ``architectures`` names (a config.json beside the file says what was saved), then the order of
    :data:`AUTOS`."""
    named = set(architectures or ())
    return min((place(keys, lay, optional=lay.tied) for lay in lays),
               key=lambda p: p.score[:2] + (p.layout.cls.__name__ not in named,) + p.score[2:])


def to_ckpt(lay: Layout, runtime_tensors: Mapping[str, Any]) -> dict:
    """Running-model tensors renamed (and split) into checkpoint tensors by transformers' own conversion."""
    with quiet_transformers():
        return dict(revert_weight_conversion(lay.model, dict(runtime_tensors)))


def output_ties(lay: Layout, cfg: Mapping[str, Any]) -> set:
    """The tied keys of ``lay`` that ``tie_word_embeddings`` decides (the output head's table), as opposed to ties
    the class always makes (T5's encoder and decoder tables are its shared table whatever the flag says): the
    class is built once more on meta from ``cfg`` with the flag off (through the config class, which may
    reinterpret it: T5's 5.x config keeps the tie and turns the flag into ``scale_decoder_outputs``) and the two
    tie maps compared."""
    if not lay.tied:
        return set()
    sub = _sub(lay.cls, make_config({**cfg, "tie_word_embeddings": False}))
    with quiet_transformers(), torch.device("meta"):
        untied = lay.cls(sub, **lay.kwargs)
    return set(lay.tied) - set(getattr(untied, "all_tied_weights_keys", {}) or {})


def candidates(cfg: dict, mt: str) -> list:
    """The candidate layouts, built with ties on (unless given off): a tied table may be absent or equal."""
    config = make_config({"tie_word_embeddings": True, **cfg})
    errors: list = []
    lays = layouts(config, errors)
    if not lays:
        raise ValueError(f"model_type {mt}: transformers builds no model from this config"
                         + (f" ({errors[0]})" if errors else "") + "; check the given fields (the head count?)")
    return lays


def refuse_misfit(best, mt: str, missing: str) -> None:
    """One line when the best layout leaves a tensor without a place or a parameter without a tensor (``missing``:
    how the second case is said, "are not in the file" for a header, "are missing" for a folder's tensors)."""
    name = best.layout.cls.__name__
    if best.unplaced:
        raise ValueError(f"tensor {best.unplaced[0]} has no place in {name} (model_type {mt})"
                         + (f" (and {len(best.unplaced) - 1} more)" if len(best.unplaced) > 1 else ""))
    if best.missing:
        raise ValueError(f"{len(best.missing)} tensors of {name} (model_type {mt}) {missing}: "
                         f"{', '.join(best.missing[:5])}")
