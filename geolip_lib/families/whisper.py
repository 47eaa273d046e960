"""Whisper (transformers ``WhisperForConditionalGeneration``): stacks ``encoder`` (audio) and ``decoder`` (text).

Weight names (:func:`adapt`: the catalog's rules)
-------------------------------------------------
Like BART (``bart.py``), with a convolutional front end and no ``shared`` table. Names (under ``model.``)::

    encoder.conv1, encoder.conv2                                other (the log-mel front end, Conv1d)
    encoder.embed_positions, decoder.embed_positions            embed (encoder: fixed sinusoids)
    decoder.embed_tokens                                        embed
    {encoder,decoder}.layers.{i}.self_attn.{q,k,v,out}_proj     q / k / v / o (self; k_proj has no bias)
    decoder.layers.{i}.encoder_attn.{q,k,v,out}_proj            q / k / v / o (cross)
    {stack}.layers.{i}.fc1 / fc2                                mlp_in / mlp_out
    {stack}.layers.{i}.{self_attn,encoder_attn,final}_layer_norm, {stack}.layer_norm   norm
    proj_out.weight                                             unembed (tied to decoder.embed_tokens)

Scores: ``(x W_q^T + b_q)(x W_k^T)^T / sqrt(head_dim)`` in encoder self, decoder self (causal) and
cross attention (keys: the encoder's output); positions are added to the input (no position term
inside attention); the q bias term is extra to the bilinear form.

Inputs: the encoder reads log-mel features ``(B, num_mel_bins, 2 * max_source_positions)``, not
tokens. Trained Whisper checkpoints install offline as CTranslate2 files (faster-whisper), converted
by :mod:`geolip_lib.models.ct2`. Hidden states (``text_hidden``): the ``decoder`` stack reads the
texts' tokens (teacher-forced, shifted right) with cross-attention to the encoder's output for a fixed
synthetic input, :func:`synthetic_log_mel` (the log-mel of a deterministic 1-second 200 -> 2000 Hz
chirp at 16 kHz, made with numpy, the same for every text; no audio file, no feature extractor). The
``encoder`` stack's states are of audio frames, not of the texts' tokens: ``hidden_states(stack="encoder")``
is refused with one line.
"""
from __future__ import annotations


from ..checkpoints.rules import Heads, build, need, rules
from .bart import LAYER_ROWS
from .hf import blocks_at
from .spec import FamilySpec, Sizes, hidden_to_cpu
from ..lazy import lazy

np = lazy("numpy")
torch = lazy("torch")

RULES = rules(
    *LAYER_ROWS,  # the same per-layer names as BART's
    (r"(?:^|\.)(?P<stack>encoder|decoder)\.embed_(?:tokens|positions)\.weight$", "embed", None),
    (r"(?:^|\.)(?P<stack>encoder|decoder)\.layer_norm\.", "norm", None),
    (r"(?:^|\.)encoder\.conv[12]\.", "other", None, None, "log-mel convolution front end"),
    (r"(?:^|\.)proj_out\.weight$", "unembed", None),
)


def adapt(tensors, config) -> list:
    """Map Whisper tensor names to catalog entries (see the module docstring)."""
    d, he, hd_ = need(config, "whisper", "d_model", "encoder_attention_heads", "decoder_attention_heads")

    def heads(stack, attn):
        h = hd_ if stack == "decoder" else he
        return Heads(h, d // h, h, d)
    return build(tensors, RULES, heads)


def _sizes(cfg: dict) -> Sizes:
    d, h = int(cfg["d_model"]), int(cfg["encoder_attention_heads"])
    return Sizes(d_model=d, n_layers=int(cfg["encoder_layers"]), n_heads=h, head_dim=d // h, n_kv_heads=h)


def synthetic_log_mel(n_mels: int, n_frames: int, *, sr: int = 16000, hop: int = 160, n_fft: int = 400) -> np.ndarray:
    """``(n_mels, n_frames)`` float32 log-mel of a deterministic chirp (200 -> 2000 Hz), Whisper's scaling.

    Hann-windowed STFT (``n_fft`` 400, hop 160 at 16 kHz, as Whisper), a triangular mel filter bank
    (HTK mel scale, 0 .. 8 kHz), ``log10`` clamped to 8 below the maximum, then ``(x + 4) / 4``.
    """
    n = hop * n_frames + n_fft
    t = np.arange(n) / sr
    f0, f1, dur = 200.0, 2000.0, n / sr
    x = 0.5 * np.sin(2 * np.pi * (f0 * t + (f1 - f0) * t * t / (2 * dur)))
    win = np.hanning(n_fft + 1)[:-1]
    frames = np.stack([x[i * hop:i * hop + n_fft] * win for i in range(n_frames)])
    power = np.abs(np.fft.rfft(frames, axis=1)) ** 2  # (n_frames, n_fft // 2 + 1)
    mel = lambda f: 2595.0 * np.log10(1.0 + f / 700.0)  # noqa: E731
    inv = lambda m: 700.0 * (10 ** (m / 2595.0) - 1.0)  # noqa: E731
    edges = inv(np.linspace(mel(0.0), mel(sr / 2), n_mels + 2))
    freqs = np.linspace(0, sr / 2, power.shape[1])
    fb = np.zeros((n_mels, power.shape[1]))
    for m in range(n_mels):
        lo, c, hi = edges[m:m + 3]
        fb[m] = np.clip(np.minimum((freqs - lo) / (c - lo), (hi - freqs) / (hi - c)), 0, None)
    logm = np.log10(np.maximum(fb @ power.T, 1e-10))
    logm = np.maximum(logm, logm.max() - 8.0)
    return ((logm + 4.0) / 4.0).astype(np.float32)


def whisper_hidden(model, stack, ids, mask, dec) -> list:
    """Decoder states of the texts (teacher-forced ``dec``, else ``ids``) reading the encoder's output for
    :func:`synthetic_log_mel`; the encoder stack is refused (its states are audio frames, not tokens)."""
    if stack != "decoder":
        raise ValueError("whisper: hidden_states(stack='encoder') is not defined for texts (the encoder reads "
                         "log-mel features); use stack='decoder'")
    cfg = model.config
    feats = torch.from_numpy(synthetic_log_mel(cfg.num_mel_bins, 2 * cfg.max_source_positions))
    p = next(model.parameters())
    feats = feats.to(device=p.device, dtype=p.dtype)[None].expand(ids.shape[0], -1, -1)
    enc = model.get_encoder()(input_features=feats)
    d_ids, d_mask = dec if dec is not None else (ids, mask)
    out = model.get_decoder()(input_ids=d_ids.to(ids.device), attention_mask=d_mask.to(ids.device),
                              encoder_hidden_states=enc.last_hidden_state, output_hidden_states=True,
                              use_cache=False)
    return hidden_to_cpu(out.hidden_states)


_TINY = dict(model_type="whisper", d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
             decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, num_mel_bins=8,
             max_source_positions=16, max_target_positions=64, dropout=0.0, attention_dropout=0.0,
             activation_dropout=0.0, pad_token_id=0, bos_token_id=101, eos_token_id=102,
             decoder_start_token_id=102, suppress_tokens=[], begin_suppress_tokens=[])

WHISPER = FamilySpec(
    name="whisper", stacks=("decoder", "encoder"), audio_stacks=("encoder",), is_text=True, is_generative=True,
    auto_class="AutoModelForSpeechSeq2Seq", model_types=("whisper",), sizes=_sizes, adapt=adapt,
    text_hidden=whisper_hidden, teacher_forced_decoder=True,
    locate_blocks=blocks_at({"encoder": "encoder.layers", "decoder": "decoder.layers"}, "whisper"),
    objective=None, tiny_defaults=_TINY, tiny_tokenizer="minilm",
    qk_statement="Whisper: scores are (x W_q^T + b_q)(x W_k^T)^T / sqrt(head_dim) in encoder, decoder and cross "
                 "attention (k_proj has no bias); the bilinear form holds the x W_q^T W_k x term, the q-bias term "
                 "is extra; positions are added to the input; the encoder reads log-mel features.",
)
