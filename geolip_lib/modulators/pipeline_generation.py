"""Seed 001 §7 and §11: the modulator's impact on token states, and greedy generation side by side."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ..validation import as_tensor, fail
from .hooks import attach
from .pipeline_encoding import encoder_module


SEED_QUICK_TEST_SENTENCES = (  # seed 001 §7's quick test
    "summarize: The cat sat on the mat.",
    "summarize: Quantum mechanics describes particles at atomic scale.",
    "summarize: The derivative of x squared is two x.",
    "summarize: Love is patient, love is kind.",
    "summarize: Mount Everest is the tallest mountain.",
)


def impact_statistics(original, modulated) -> dict:
    """Seed §7's ``measure_modulator_impact`` on one sentence's token states.

    Parameters
    ----------
    original, modulated : (S, D) arrays
        Last hidden state of the S tokens without and with the modulator.

    Returns
    -------
    dict of float64 arrays: ``cos`` (S,) per-token cosine, ``norm_ratio`` (S,)
    ``|mod| / (|orig| + 1e-8)``, ``pairwise_shift`` (S(S−1)/2,) change of the cosine of every
    token pair (upper triangle, ``mod − orig``; empty for one token).
    """
    a = as_tensor(original, "original", ndim=2, dtype=torch.float64)
    b = as_tensor(modulated, "modulated", ndim=2, dtype=torch.float64)
    if a.shape != b.shape:
        fail("modulated", f"shape {tuple(b.shape)} differs from original {tuple(a.shape)}")
    an, bn = F.normalize(a, dim=1, eps=1e-12), F.normalize(b, dim=1, eps=1e-12)
    iu = torch.triu_indices(a.shape[0], a.shape[0], 1)
    return {"cos": (an * bn).sum(1).cpu().numpy(), "norm_ratio": (b.norm(dim=1) / (a.norm(dim=1) + 1e-8)).cpu().numpy(),
            "pairwise_shift": ((bn @ bn.T) - (an @ an.T))[iu[0], iu[1]].cpu().numpy()}


@torch.no_grad()
def modulator_impact(lm, modulator, sentences: Sequence[str] = SEED_QUICK_TEST_SENTENCES, *,
                     stack: str = "encoder") -> dict:
    """Seed §7's quick test: the last hidden state of each sentence with and without
    ``modulator`` attached to every block of ``stack``, compared token by token.

    Each sentence is encoded on its own (no padding), as in the seed. The summary keys are
    the seed's (means and population standard deviations over all tokens / token pairs of
    all sentences).

    Returns
    -------
    dict: ``cos``, ``norm_ratio``, ``pairwise_shift`` (arrays pooled over the sentences),
    ``n_tokens``, ``n_pairs``, ``per_sentence`` (``[{"sentence", "n_tokens", "cos_mean"}]``) and
    ``cos_mean``, ``cos_std``, ``norm_ratio_mean``, ``pairwise_shift_mean``,
    ``pairwise_shift_std``.
    """
    model = lm.model if hasattr(lm, "model") else lm
    enc = encoder_module(model, getattr(lm, "family", None))
    dev = next(model.parameters()).device
    parts, per = [], []
    for s in sentences:
        b = lm.tokenizer(s, return_tensors="pt", return_token_type_ids=False).to(dev)
        h0 = enc(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).last_hidden_state[0]
        with attach(lm, modulator, stack=stack):
            h1 = enc(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).last_hidden_state[0]
        st = impact_statistics(h0.float().cpu(), h1.float().cpu())
        parts.append(st)
        per.append({"sentence": s, "n_tokens": int(h0.shape[0]), "cos_mean": float(st["cos"].mean())})
    out = {k: np.concatenate([p[k] for p in parts]) for k in ("cos", "norm_ratio", "pairwise_shift")}
    out.update(n_tokens=int(out["cos"].size), n_pairs=int(out["pairwise_shift"].size), per_sentence=per,
               cos_mean=float(out["cos"].mean()), cos_std=float(out["cos"].std()),
               norm_ratio_mean=float(out["norm_ratio"].mean()),
               pairwise_shift_mean=float(out["pairwise_shift"].mean()) if out["pairwise_shift"].size else float("nan"),
               pairwise_shift_std=float(out["pairwise_shift"].std()) if out["pairwise_shift"].size else float("nan"))
    return out


def token_differences(a: Sequence[int], b: Sequence[int]) -> int:
    """Positional mismatches over the common length plus the length difference (seed §11)."""
    a, b = np.asarray(list(a)), np.asarray(list(b))
    n = min(a.size, b.size)
    return int((a[:n] != b[:n]).sum() + abs(a.size - b.size))


@torch.no_grad()
def greedy_generate(model: nn.Module, tokenizer, prompts: Sequence[str], max_new_tokens: int = 32) -> list[dict]:
    """Greedy generation, one prompt at a time; returns ``[{"prompt", "text", "ids"}]``.

    Attached hooks apply (T5: the encoder stack runs inside ``generate``).
    """
    out = []
    dev = next(model.parameters()).device
    for p in prompts:
        b = tokenizer(p, return_tensors="pt", return_token_type_ids=False).to(dev)
        g = model.generate(**b, max_new_tokens=max_new_tokens, do_sample=False, num_beams=1)
        ids = g[0].tolist()
        if not getattr(model.config, "is_encoder_decoder", False):
            ids = ids[b["input_ids"].shape[1]:]
        out.append({"prompt": p, "text": tokenizer.decode(ids, skip_special_tokens=True), "ids": ids})
    return out


def compare_generations(original: list[dict], modulated: list[dict]) -> list[dict]:
    """Side-by-side rows: prompt, original text, modulated text, identical, token_diffs, n_tokens."""
    rows = []
    for o, m in zip(original, modulated):
        rows.append({"prompt": o["prompt"], "original": o["text"], "modulated": m["text"],
                     "identical": o["ids"] == m["ids"], "token_diffs": token_differences(o["ids"], m["ids"]),
                     "n_tokens": max(len(o["ids"]), len(m["ids"]))})
    return rows


def golden_and_sensitivity(lm, modulator, original: list[dict], prompts: Sequence[str], sections: Sequence[str],
                           sweep_prompt: str, alphas: Sequence[float], alpha: float, max_new_tokens: int) -> dict:
    """Seed §10/§11 with one modulator: greedy generation of ``prompts`` at ``alpha`` beside
    ``original`` (the unmodulated generations of ``prompts`` then ``sweep_prompt``, from
    :func:`greedy_generate`), each row labelled with its seed section; then ``sweep_prompt``
    at every alpha of ``alphas`` (the §11 sensitivity sweep). Greedy, as the seed: its
    helper's calls all pass ``temperature=0.0``.

    Returns
    -------
    ``{"side_by_side": rows of :func:`compare_generations` + "seed_section", "sensitivity":
    [{"alpha", "text", "token_diffs", "identical"}]}``
    """
    modulator.set_alpha(alpha)
    with attach(lm, modulator):
        golden = greedy_generate(lm.model, lm.tokenizer, list(prompts), max_new_tokens)
    side = compare_generations(original[:len(prompts)], golden)
    for r, sec in zip(side, sections):
        r["seed_section"] = sec
    sensitivity = []
    for a in alphas:
        modulator.set_alpha(a)
        with attach(lm, modulator):
            g = greedy_generate(lm.model, lm.tokenizer, [sweep_prompt], max_new_tokens)
        row = compare_generations(original[-1:], g)[0]
        sensitivity.append({"alpha": a, "text": row["modulated"], "token_diffs": row["token_diffs"],
                            "identical": row["identical"]})
    return {"side_by_side": side, "sensitivity": sensitivity}
