"""The definition -> lemma training objectives, one per kind of model; which one a family
uses is its spec's ``objective`` (``geolip_lib.families``), its prompt the spec's ``prompt``."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ..families import REGISTRY, spec
from ..validation import fail
from .pipeline_encoding import encoder_module


def seq2seq_loss(model: nn.Module, tokenizer, inputs: Sequence[str], targets: Sequence[str],
                 max_input_len: int = 128, max_target_len: int = 16) -> torch.Tensor:
    """Cross-entropy of ``targets`` given ``inputs`` for an encoder–decoder model (T5).

    Uses ``model(labels=...)``, which shifts the labels right to build the decoder input.
    (The seed fed the unshifted target ids as decoder input, so each position could read
    the token it had to predict.) Padding positions are ignored (-100).
    """
    dev = next(model.parameters()).device
    enc = tokenizer(list(inputs), return_tensors="pt", padding=True, truncation=True,
                    max_length=max_input_len, return_token_type_ids=False).to(dev)
    lab = tokenizer(list(targets), return_tensors="pt", padding=True, truncation=True,
                    max_length=max_target_len, return_token_type_ids=False).to(dev)
    labels = lab["input_ids"].masked_fill(lab["attention_mask"] == 0, -100)
    return model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], labels=labels).loss


def seed_section9_loss(model: nn.Module, tokenizer, inputs: Sequence[str], targets: Sequence[str],
                       max_input_len: int = 128, max_target_len: int = 16) -> torch.Tensor:
    """Seed 001 §9's ``compute_batch_loss``, as written (seed mode; T5 only).

    The target ids themselves (``"{lemma}</s>"``, padded) are the decoder input AND the
    labels, unshifted: position t reads token t and is scored on predicting token t, so the
    answer leaks into the input and the loss can fall by copying. The decoder output goes
    straight into ``lm_head``, without the ``d_model ** -0.5`` rescaling T5's own forward
    applies before its tied head (the seed called ``model.decoder`` and ``model.lm_head``
    itself), and no decoder attention mask is passed. Kept so that the seed's training, and
    the lift it reported, can be reproduced beside :func:`seq2seq_loss` (the corrected
    objective); attached encoder hooks apply.
    """
    if not getattr(model.config, "is_encoder_decoder", False):
        fail("model", f"seed §9's objective needs an encoder-decoder model (T5); {type(model).__name__} has no "
                      "decoder to feed the target to (use the family's own objective)")
    dev = next(model.parameters()).device
    enc = tokenizer(list(inputs), return_tensors="pt", padding=True, truncation=True,
                    max_length=max_input_len, return_token_type_ids=False).to(dev)
    dec = tokenizer(list(targets), return_tensors="pt", padding=True, truncation=True,
                    max_length=max_target_len, return_token_type_ids=False).to(dev)
    labels = dec["input_ids"].masked_fill(dec["input_ids"] == tokenizer.pad_token_id, -100)
    h = model.get_encoder()(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state
    out = model.get_decoder()(input_ids=dec["input_ids"], encoder_hidden_states=h,
                              encoder_attention_mask=enc["attention_mask"]).last_hidden_state
    logits = model.lm_head(out)
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1), ignore_index=-100)


def causal_completion_loss(model: nn.Module, tokenizer, inputs: Sequence[str], targets: Sequence[str],
                           max_input_len: int = 128, max_target_len: int = 16) -> torch.Tensor:
    """Decoder-LM alternative: CE on the target tokens of ``"{input} => {target}"`` only."""
    dev = next(model.parameters()).device
    ids, labels = [], []
    for x, y in zip(inputs, targets):
        a = tokenizer(f"{x} =>", add_special_tokens=False)["input_ids"][:max_input_len]
        t = tokenizer(f" {y}", add_special_tokens=False)["input_ids"][:max_target_len]
        ids.append(a + t)
        labels.append([-100] * len(a) + t)
    L = max(map(len, ids))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    x = torch.tensor([r + [pad] * (L - len(r)) for r in ids], device=dev)
    m = torch.tensor([[1] * len(r) + [0] * (L - len(r)) for r in ids], device=dev)
    y = torch.tensor([r + [-100] * (L - len(r)) for r in labels], device=dev)
    return model(input_ids=x, attention_mask=m, labels=y).loss


def embedding_regression_loss(model: nn.Module, tokenizer, inputs: Sequence[str], target_ids: Sequence[int],
                              max_input_len: int = 128) -> torch.Tensor:
    """Encoder-only alternative (BERT): ``1 - cos(mean-pooled modulated definition,
    frozen input embedding of the lemma token)``. Encoder-only models cannot emit the
    lemma, so the objective asks the pooled definition to point at the lemma's own
    embedding row."""
    dev = next(model.parameters()).device
    enc = tokenizer(list(inputs), return_tensors="pt", padding=True, truncation=True,
                    max_length=max_input_len, return_token_type_ids=False).to(dev)
    h = encoder_module(model)(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state
    mk = enc["attention_mask"].unsqueeze(-1).to(h.dtype)
    pooled = (h * mk).sum(1) / mk.sum(1)
    tgt = model.get_input_embeddings().weight[torch.as_tensor(list(target_ids), device=dev)].detach()
    return (1 - F.cosine_similarity(pooled, tgt, dim=-1)).mean()


#: objective key (a spec's ``objective``) -> loss function
LOSSES: dict[str, Callable] = {"seq2seq": seq2seq_loss, "causal_completion": causal_completion_loss,
                               "embedding_regression": embedding_regression_loss}
#: objective key -> the seed's own version where the seed trained one (seed mode): §9 trained T5 only
SEED_LOSSES: dict[str, Callable] = {"seq2seq": seed_section9_loss}
#: family -> its loss function (families whose spec names an objective)
OBJECTIVES: dict[str, Callable] = {name: LOSSES[s.objective] for name, s in REGISTRY.items() if s.objective}
#: losses that regress onto the lemma token's embedding row (they take token ids, not lemma texts)
_TOKEN_TARGETS = (embedding_regression_loss,)


@torch.no_grad()
def per_item_losses(lm, matched, idx, **kwargs) -> np.ndarray:
    """:func:`definition_lemma_loss` of each entry of ``idx`` on its own, shape (len(idx),).

    The items a validation loss averages, so its interval can resample them (the trainer's
    ``evaluate`` averages per-batch losses, which weight the items by their target tokens).
    Attached modulators apply; call it in eval mode.
    """
    return np.array([float(definition_lemma_loss(lm, matched, [k], **kwargs)) for k in np.asarray(idx)],
                    dtype=np.float64)


def seed_objective_available(lm) -> bool:
    """Whether seed §9's own objective (:data:`SEED_LOSSES`) exists for ``lm``'s family (T5)."""
    return lm.family in OBJECTIVES and spec(lm.family).objective in SEED_LOSSES


def definition_lemma_loss(lm, matched, idx, *, prompt: str | None = None, max_input_len: int = 128,
                          max_target_len: int = 16, seed_mode: bool = False) -> torch.Tensor:
    """The definition -> lemma objective for ``lm.family`` on entries ``idx``.

    T5: sequence-to-sequence CE of the lemma given ``"summarize: {definition}"``;
    decoder LMs: CE on the lemma after ``"{definition} =>"``; encoder-only (BERT):
    cosine regression of the pooled definition onto the lemma token's embedding row.
    ``seed_mode=True``: seed §9's objective as written (:func:`seed_section9_loss`, T5 only;
    other families fail with one line).
    """
    fam = lm.family
    if fam not in OBJECTIVES:
        fail("lm", f"no definition -> lemma objective for family {fam!r} (have {sorted(OBJECTIVES)})")
    template = prompt or spec(fam).prompt
    idx = np.asarray(idx)
    inputs = [template.format(definition=matched.definitions[k]) for k in idx]
    if seed_mode:
        if not seed_objective_available(lm):
            fail("seed_mode", f"seed §9 trained T5 only; no seed objective for family {fam!r} "
                              f"(objective {spec(fam).objective!r}): train it with seed_mode=False")
        return SEED_LOSSES[spec(fam).objective](lm.model, lm.tokenizer, inputs, [matched.lemmas[k] for k in idx],
                                                max_input_len=max_input_len, max_target_len=max_target_len)
    if OBJECTIVES[fam] in _TOKEN_TARGETS:
        return OBJECTIVES[fam](lm.model, lm.tokenizer, inputs, np.asarray(matched.token_ids)[idx],
                               max_input_len=max_input_len)
    return OBJECTIVES[fam](lm.model, lm.tokenizer, inputs, [matched.lemmas[k] for k in idx],
                           max_input_len=max_input_len, max_target_len=max_target_len)
