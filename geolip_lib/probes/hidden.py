"""Hidden-state probes: layer-by-layer norm and pairwise-cosine evolution (seed 001 §1)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from .. import validation as V

#: the seed's ten probe sentences (seed 001 section 1)
SENTENCES: list[str] = [
    "The cat sat on the mat.",
    "Quantum mechanics describes the behavior of particles at the atomic scale.",
    "She quickly ran to the store before it closed.",
    "The derivative of x squared is two x.",
    "Red and blue make purple when mixed together.",
    "The president signed the new trade agreement yesterday.",
    "Three plus four equals seven.",
    "Love is patient, love is kind.",
    "The function returns a sorted list of integers.",
    "Mount Everest is the tallest mountain in the world.",
]


def layer_geometry(layers: Sequence[Any], mask: Any) -> dict:
    """Per-layer token-norm and within-sequence pairwise-cosine statistics.

    For each layer and each sequence ``b``: the valid positions (``mask[b] == 1``) give
    the mean and std of token norms, and the mean and std of cosines over position pairs
    ``i < j``; these per-sequence numbers are then averaged over sequences (the seed's
    aggregation). Sequences with a single valid token have no pairs and are left out of
    the cosine average (the seed counted them as cosine 0: a bias, fixed here).

    Parameters
    ----------
    layers : sequence of (B, S, D) tensors
        Embedding output first, then one per block (``LoadedModel.hidden_states``).
    mask : (B, S) tensor
        1 for real tokens, 0 for padding.

    Returns
    -------
    dict
        Lists over layers: ``layer``, ``mean_norm``, ``std_norm``, ``mean_cos``,
        ``std_cos``; plus ``n_sequences`` and ``mean_seq_len``.
    """
    if len(layers) == 0:
        V.fail("layers", "expected at least one layer")
    m = V.as_tensor(mask, "mask", ndim=2).to(torch.float64) > 0
    out: dict = {"layer": [], "mean_norm": [], "std_norm": [], "mean_cos": [], "std_cos": []}
    lengths = m.sum(1)
    n_pairs = lengths * (lengths - 1) / 2
    pair_mask = (m[:, :, None] & m[:, None, :]).triu(1)
    has_pairs = n_pairs > 0
    for li, h in enumerate(layers):
        x = V.as_tensor(h, f"layers[{li}]", ndim=3, dtype=torch.float64)
        if x.shape[:2] != m.shape:
            V.fail(f"layers[{li}]", f"expected leading shape {tuple(m.shape)} like mask, got {tuple(x.shape)}")
        norms = x.norm(dim=-1)
        w = m.to(torch.float64)
        mu = (norms * w).sum(1) / lengths
        sd = (((norms - mu[:, None]) ** 2 * w).sum(1) / lengths).sqrt()
        xn = x / norms.clamp_min(1e-8)[..., None]
        cos = xn @ xn.transpose(1, 2)
        pm = pair_mask.to(torch.float64)
        denom = n_pairs.clamp_min(1)
        cmu = (cos * pm).sum((1, 2)) / denom
        csd = ((((cos - cmu[:, None, None]) ** 2) * pm).sum((1, 2)) / denom).sqrt()
        out["layer"].append(li)
        out["mean_norm"].append(float(mu.mean()))
        out["std_norm"].append(float(sd.mean()))
        out["mean_cos"].append(float(cmu[has_pairs].mean()) if has_pairs.any() else float("nan"))
        out["std_cos"].append(float(csd[has_pairs].mean()) if has_pairs.any() else float("nan"))
    out["n_sequences"] = int(m.shape[0])
    out["mean_seq_len"] = float(lengths.to(torch.float64).mean())
    return out


def synthetic_images(n: int, size: int, seed: int = 0) -> torch.Tensor:
    """Deterministic probe images for vision stacks: ``(n, 3, size, size)`` in [0, 1].

    Half smooth colour gradients / sinusoidal gratings (structured), half uniform noise,
    from ``numpy.random.default_rng(seed)`` — no dataset download needed.
    """
    V.check_positive_int(n, "n")
    V.check_positive_int(size, "size")
    rng = np.random.default_rng(seed)
    yy, xx = np.meshgrid(np.linspace(0, 1, size), np.linspace(0, 1, size), indexing="ij")
    imgs = []
    for k in range(n):
        if k % 2 == 0:
            f = rng.uniform(1, 6, size=3)
            ph = rng.uniform(0, 2 * np.pi, size=3)
            ang = rng.uniform(0, np.pi, size=3)
            chans = [0.5 + 0.5 * np.sin(2 * np.pi * f[c] * (np.cos(ang[c]) * xx + np.sin(ang[c]) * yy) + ph[c])
                     for c in range(3)]
            imgs.append(np.stack(chans))
        else:
            imgs.append(rng.uniform(0, 1, size=(3, size, size)))
    return torch.from_numpy(np.stack(imgs)).to(torch.float32)


# ---------------------------------------------------------------- encoder vs decoder (seed 001 §1)
#: the seed's translation pair (seed 001 §1, "ENCODER vs DECODER HIDDEN STATE COMPARISON")
TRANSLATION_PAIR: tuple[str, str] = ("translate English to German: The house is big.", "Das Haus ist groß.")
#: the seed compared the first five positions only
SEED_POSITIONS = 5


def seed_layers(n_layers: int) -> list[int]:
    """The seed's layers ``[0, n // 2, n]`` (hidden-state indices: 0 = embedding output,
    ``n`` = after the last block and, for T5, the final norm), without repeats."""
    V.check_positive_int(n_layers, "n_layers", minimum=0)
    return sorted({0, n_layers // 2, n_layers})


def position_cosines(encoder: Sequence[Any], decoder: Sequence[Any], layers: Sequence[int],
                     seed_positions: int = SEED_POSITIONS) -> list[dict]:
    """Per-position cosine between encoder and decoder hidden states at the given layers.

    Position ``t`` of the encoder is compared with position ``t`` of the decoder for
    ``t < min(S_enc, S_dec)`` (the seed: the first ``min(S_enc, S_dec, 5)``), as seed 001
    §1 does. The two positions hold different tokens (the English source and the German
    target), so the cosine is between representations of different tokens read by two
    different stacks.

    Parameters
    ----------
    encoder, decoder : sequences of (S, D) tensors or arrays
        Hidden states per layer, one sequence each (index 0 = embedding output).
    layers : sequence of int
        Layer indices present in both (the seed: :func:`seed_layers`).
    seed_positions : int
        How many leading positions the seed compared.

    Returns
    -------
    list of dict, one per layer
        ``layer``, ``cosine`` (per position, list), ``mean`` (over all compared positions),
        ``n_positions``, ``seed_mean`` (mean over the seed's first ``seed_positions``).
    """
    V.check_positive_int(seed_positions, "seed_positions")
    out = []
    for li in layers:
        if not (0 <= li < len(encoder) and li < len(decoder)):
            V.fail("layers", f"layer {li} is not in both stacks ({len(encoder)} encoder, {len(decoder)} decoder states)")
        e = V.as_tensor(encoder[li], f"encoder[{li}]", ndim=2, dtype=torch.float64)
        d = V.as_tensor(decoder[li], f"decoder[{li}]", ndim=2, dtype=torch.float64)
        if e.shape[1] != d.shape[1]:
            V.fail(f"decoder[{li}]", f"expected width {e.shape[1]} like the encoder, got {d.shape[1]}")
        n = min(e.shape[0], d.shape[0])
        cos = torch.nn.functional.cosine_similarity(e[:n], d[:n], dim=1, eps=1e-8).numpy()
        out.append({"layer": int(li), "cosine": cos.tolist(), "mean": float(cos.mean()), "n_positions": int(n),
                    "seed_mean": float(cos[:seed_positions].mean())})
    return out


@torch.no_grad()
def encoder_decoder_states(model: torch.nn.Module, tokenizer: Any, source: str, target: str) -> dict:
    """Hidden states of an encoder–decoder model on a (source, target) pair, as seed 001 §1 ran them.

    The encoder reads ``tokenizer(source)``; the decoder reads ``tokenizer(target)`` as
    its input ids (unshifted, with the tokenizer's ``</s>``, no decoder start token: the
    seed's call) with the encoder's last hidden state as ``encoder_hidden_states``.

    Returns
    -------
    dict
        ``encoder`` / ``decoder``: lists of ``(S, D)`` float32 CPU tensors (embedding output
        first, HF's convention); ``source_tokens`` / ``target_tokens``: the token strings.
    """
    dev = next(model.parameters()).device
    src = tokenizer(source, return_tensors="pt").input_ids.to(dev)
    tgt = tokenizer(target, return_tensors="pt").input_ids.to(dev)
    # get_encoder / get_decoder: T5 keeps its stacks on the model, BART and Marian under ``model.model``
    enc = model.get_encoder()(input_ids=src, output_hidden_states=True)
    dec = model.get_decoder()(input_ids=tgt, encoder_hidden_states=enc.last_hidden_state, output_hidden_states=True)
    cpu = lambda hs: [h[0].detach().to("cpu", torch.float32) for h in hs]  # noqa: E731
    return {"encoder": cpu(enc.hidden_states), "decoder": cpu(dec.hidden_states),
            "source_tokens": tokenizer.convert_ids_to_tokens(src[0].tolist()),
            "target_tokens": tokenizer.convert_ids_to_tokens(tgt[0].tolist())}


def is_encoder_decoder(lm: Any) -> bool:
    """True for text models with an encoder and a decoder that reads it (T5, BART, Marian, mBART, Pegasus); not
    Whisper, whose encoder reads audio features, not token ids."""
    m = getattr(lm, "model", None)
    return bool(getattr(getattr(lm, "config", None), "is_encoder_decoder", False)
                and callable(getattr(m, "get_encoder", None)) and callable(getattr(m, "get_decoder", None))
                and getattr(m, "main_input_name", "input_ids") == "input_ids"
                and getattr(lm, "tokenizer", None) is not None)


def encoder_decoder_cosine(lm: Any, source: str = TRANSLATION_PAIR[0], target: str = TRANSLATION_PAIR[1], *,
                           seed_positions: int = SEED_POSITIONS) -> dict:
    """Seed 001 §1's encoder-vs-decoder comparison: per-position cosine at layers 0, middle, last.

    Parameters
    ----------
    lm : LoadedModel
        An encoder–decoder text model (:func:`is_encoder_decoder`); any other model gives ``applicable: False``.
    source, target : str
        The seed's pair (:data:`TRANSLATION_PAIR`).
    seed_positions : int
        Leading positions the seed compared (its ``seed_mean``).

    Returns
    -------
    dict
        ``applicable``; when True: ``source``, ``target``, ``source_tokens``,
        ``target_tokens``, ``n_encoder_layers``, ``n_decoder_layers``, ``layers``
        (:func:`seed_layers` of the encoder depth, as the seed), ``by_layer``
        (:func:`position_cosines`), ``final_norm`` {encoder, decoder: {mean, std}} (token
        norms of the last hidden state, as the seed printed).
    """
    if not is_encoder_decoder(lm):
        fam = getattr(lm, "family", "?")
        reads = getattr(getattr(lm, "model", None), "main_input_name", "input_ids")
        if getattr(getattr(lm, "config", None), "is_encoder_decoder", False) and reads != "input_ids":
            return {"applicable": False, "reason": f"its encoder reads {reads}, not token ids ({fam}): the seed's "
                                                   f"translation pair cannot be fed to it"}
        return {"applicable": False,
                "reason": f"not an encoder–decoder model ({fam}): no decoder reads an encoder"}
    st = encoder_decoder_states(lm.model, lm.tokenizer, source, target)
    n_enc, n_dec = len(st["encoder"]) - 1, len(st["decoder"]) - 1
    layers = [li for li in seed_layers(n_enc) if li <= n_dec]
    norms = {k: st[k][-1].double().norm(dim=1) for k in ("encoder", "decoder")}
    return {"applicable": True, "source": source, "target": target, "source_tokens": st["source_tokens"],
            "target_tokens": st["target_tokens"], "n_encoder_layers": n_enc, "n_decoder_layers": n_dec,
            "layers": layers, "by_layer": position_cosines(st["encoder"], st["decoder"], layers, seed_positions),
            "final_norm": {k: {"mean": float(v.mean()), "std": float(v.std(unbiased=False))} for k, v in norms.items()}}
