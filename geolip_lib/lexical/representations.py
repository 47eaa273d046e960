"""Encoder and static representations of WordNet entries (seed 001 §2).

* encoder: the definition, wrapped in the family's prompt (its spec's ``prompt``; T5:
  ``"summarize: {definition}"``, BERT / MiniLM and others: the definition itself), through
  the family spec's encoder forward (:meth:`geolip_lib.families.FamilySpec.encode`, shared
  with the modulator pipeline); the last hidden state pooled over non-padding tokens (mean;
  decoder LMs may use the last token). The pipeline's ``encode_mean_pooled`` keeps its own
  batching (input order) and pooling dtype: see ``modulators/pipeline_encoding.py``;
* static: the input-embedding rows of the matched tokens.
"""
from __future__ import annotations

import hashlib
import io
from typing import Sequence

import numpy as np
import torch

from tqdm.auto import tqdm

from .. import progress as _progress
from ..families import DEFAULT_PROMPT, REGISTRY, spec
from ..results import atomic_write_bytes
from ..validation import check_choice, check_positive_int
from .wordnet import cache_dir

#: family -> its definition prompt where it is not the bare definition (the specs' ``prompt``)
PROMPTS = {name: s.prompt for name, s in REGISTRY.items() if s.prompt != DEFAULT_PROMPT}
POOLINGS = ("mean", "last")


def prompt_for(family: str) -> str:
    """The seed's prompt template for a model family (``{definition}`` is replaced; unknown family: the bare definition)."""
    return PROMPTS.get(family, DEFAULT_PROMPT)


def pool_hidden(hidden: torch.Tensor, mask: torch.Tensor, pooling: str = "mean") -> torch.Tensor:
    """Pool ``(B, S, D)`` hidden states over the tokens where ``mask`` (B, S) is 1 -> ``(B, D)``.

    ``"mean"``: average of the real tokens. ``"last"``: the last real token (works for left
    and right padding).
    """
    check_choice(pooling, "pooling", POOLINGS)
    m = mask.to(hidden.dtype)
    if pooling == "mean":
        return (hidden * m.unsqueeze(-1)).sum(1) / m.sum(1, keepdim=True).clamp_min(1)
    pos = torch.arange(mask.shape[1], device=mask.device).expand_as(mask)
    last = torch.where(mask.bool(), pos, torch.full_like(pos, -1)).argmax(1)
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]


def _fingerprint(lm, texts, pooling, batch_size, max_length) -> str:
    """Key of an encoding: model identity + a digest of its weights + the inputs and options."""
    h = hashlib.sha1(f"{getattr(lm, 'name', '')}|{lm.family}|{pooling}|{batch_size}|{max_length}|v1".encode())
    params = list(lm.model.parameters())
    for p in params[:4] + params[-4:]:
        flat = p.detach().reshape(-1)
        t = flat[:: max(1, flat.numel() // 65536)].to("cpu", torch.float64)  # strided sample: cheap on 11B models
        h.update(f"{tuple(t.shape)}:{float(t.sum()):.17g}:{float(t.abs().sum()):.17g}".encode())
    h.update(f"{sum(p.numel() for p in params)}".encode())
    for t in texts:
        h.update(t.encode("utf-8") + b"\0")
    return h.hexdigest()[:24]


def encode_texts(lm, texts: Sequence[str], *, pooling: str = "mean", batch_size: int = 64,
                 max_length: int = 128, progress: bool = True, cache: bool = False) -> np.ndarray:
    """Pooled last hidden state of each text -> ``(n, D)`` float32.

    Parameters
    ----------
    lm : geolip_lib.models.LoadedModel
        A text model (T5 / T5-v1.1: the encoder; BERT: the encoder; decoder LMs: the final
        hidden state after the last norm; other text families: the last layer returned by
        ``lm.hidden_states``).
    texts : list of str
    pooling : {"mean", "last"}
        Over non-padding tokens; ``"last"`` is meant for decoder LMs.
    batch_size, max_length : int
        Rows per forward pass; truncation length (seed: 64 rows, 128 tokens).
    progress : bool
        Show a tqdm bar.
    cache : bool
        Reuse / store the result in ``<cache>/encodings/<key>.npy``; the key digests the
        model (name, family, a checksum of its first and last weight tensors), the texts
        and the options, so notebooks 04 and 05 encode shared entries once.

    Texts are processed in order of length (less padding) and returned in input order.
    """
    if not getattr(lm, "is_text", False) or lm.tokenizer is None:
        raise ValueError(f"lm: model '{getattr(lm, 'name', lm)}' is not a text model with a tokenizer")
    if isinstance(texts, str) or len(texts) == 0:
        raise ValueError("texts: expected a non-empty list of strings")
    check_choice(pooling, "pooling", POOLINGS)
    check_positive_int(batch_size, "batch_size")
    if not cache:
        return _encode(lm, texts, pooling, batch_size, max_length, progress)
    path = cache_dir().parent / "encodings" / f"{_fingerprint(lm, texts, pooling, batch_size, max_length)}.npy"
    if path.exists():
        try:
            return np.load(path)
        except Exception:  # noqa: BLE001 - a corrupt cache entry is recomputed
            pass
    out = _encode(lm, texts, pooling, batch_size, max_length, progress)
    buf = io.BytesIO()
    np.save(buf, out)
    atomic_write_bytes(path, buf.getvalue())
    return out


@torch.inference_mode()
def _encode(lm, texts, pooling, batch_size, max_length, progress) -> np.ndarray:
    fs = spec(lm.family)
    order = np.argsort([len(t) for t in texts], kind="stable")
    out = None
    dev = next(lm.model.parameters()).device
    for s in tqdm(range(0, len(texts), batch_size), desc=f"encode {getattr(lm, 'name', '')}",
                  disable=_progress.disabled(progress), leave=False):
        idx = order[s:s + batch_size]
        enc = lm.tokenize([texts[i] for i in idx], max_length=max_length)
        ids, mask = enc["input_ids"].to(dev), enc["attention_mask"].to(dev)
        if fs.encoder is not None:
            h = fs.encode(lm.model, ids, mask)
        else:
            hs = lm.hidden_states([texts[i] for i in idx], max_length=max_length, batch_size=len(idx))
            h, mask = hs.layers[-1], hs.mask
        pooled = pool_hidden(h.float(), mask.to(h.device), pooling).cpu().numpy()
        if out is None:
            out = np.zeros((len(texts), pooled.shape[1]), dtype=np.float32)
        out[idx] = pooled
    return out


def definition_representations(lm, definitions: Sequence[str], *, prompt: str | None = None,
                               pooling: str | None = None, batch_size: int = 64,
                               max_length: int = 128, progress: bool = True, cache: bool = False) -> np.ndarray:
    """Encoder representation of each WordNet definition -> ``(n, D)`` float32.

    ``prompt`` defaults to :func:`prompt_for` ``(lm.family)``; ``pooling`` to ``"mean"``
    (decoder LMs: pass ``"last"`` for last-token pooling); ``cache`` as in :func:`encode_texts`.
    """
    template = prompt if prompt is not None else prompt_for(lm.family)
    if "{definition}" not in template:
        raise ValueError(f"prompt: expected a template containing '{{definition}}', got {template!r}")
    texts = [template.format(definition=d) for d in definitions]
    return encode_texts(lm, texts, pooling=pooling or "mean", batch_size=batch_size,
                        max_length=max_length, progress=progress, cache=cache)


def static_representations(lm, token_ids) -> np.ndarray:
    """Input-embedding rows of ``token_ids`` -> ``(n, D)`` float32."""
    E = lm.input_embeddings()
    ids = torch.as_tensor(np.asarray(token_ids, dtype=np.int64))
    if ids.ndim != 1 or (ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= E.shape[0])):
        raise ValueError(f"token_ids: expected a 1-D array of ids in [0, {E.shape[0]})")
    return E[ids].numpy().astype(np.float32, copy=False)
