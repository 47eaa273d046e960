"""WordNet 3.0 access: the NLTK corpus, and a cached array form of it (:class:`Lexicon`).

NLTK parses the whole of WordNet in ~15 s on a small CPU (``wn.all_synsets()``), which is
longer than a demo notebook may take. :func:`load_lexicon` therefore builds, once per
machine, an array form of everything the lexical notebooks and the similarity engine need
(synset names in ``all_synsets()`` order, parts of speech, lexnames, definitions, lemma
names, hypernym / instance-hypernym links, NLTK's ``min_depth`` / ``max_depth``, and each
synset's table of ancestors with their shortest hypernym distances), saves it as
``<cache>/wordnet/lexicon-<key>.npz`` and loads it in a fraction of a second afterwards.
The key changes with the WordNet files and the NLTK version, so a stale cache is never
used. ``<cache>`` is ``$GEOLIP_CACHE`` or ``<repo>/.cache``.

Build it ahead of time with ``python -m geolip_lib.lexical`` (part of ``make setup``).
"""
from __future__ import annotations

import functools
import hashlib
import io
import os
import sys
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from .. import progress as _progress
from ..paths import ROOT, cache_root, shared_cache_root
from ..results import atomic_write_bytes

SCHEMA = 2  # bump when the cached arrays change meaning
ROOT_NAME = "*ROOT*"  # NLTK's fake root for simulate_root
POS_CODES = "nvasr"  # index of a synset's pos in this string is its pos code
_SETUP_HINT = ("run `make setup` or `python scripts/provision_wordnet.py`, then "
               "`export NLTK_DATA=<repo>/.cache/nltk_data`")


def _ensure_nltk_path() -> None:
    """Put the project's provisioned NLTK data directory on NLTK's search path."""
    import nltk

    for base in [*os.environ.get("NLTK_DATA", "").split(os.pathsep), str(ROOT / ".cache" / "nltk_data")]:
        if base and base not in nltk.data.path and Path(base).is_dir():
            nltk.data.path.append(base)


def get_wordnet():
    """Return ``nltk.corpus.wordnet`` after checking that WordNet loads.

    Raises
    ------
    RuntimeError
        One line saying how to provision WordNet when it is missing.
    """
    _ensure_nltk_path()
    from nltk.corpus import wordnet as wn

    try:
        wn.ensure_loaded()
        wn.synset("entity.n.01")
    except LookupError:
        raise RuntimeError(f"WordNet 3.0 for NLTK is not installed: {_SETUP_HINT}") from None
    return wn


def wordnet_root() -> Path:
    """Directory holding the WordNet data files NLTK reads (found without parsing them)."""
    bases = [*os.environ.get("NLTK_DATA", "").split(os.pathsep), str(ROOT / ".cache" / "nltk_data"),
             str(Path.home() / "nltk_data"), os.path.join(sys.prefix, "nltk_data"),
             "/usr/share/nltk_data", "/usr/local/share/nltk_data"]
    for base in bases:  # the common places, checked without importing nltk (slow import)
        if base and (Path(base) / "corpora" / "wordnet" / "data.noun").is_file():
            return Path(base) / "corpora" / "wordnet"
    import nltk

    _ensure_nltk_path()
    try:
        return Path(str(nltk.data.find("corpora/wordnet")))
    except LookupError:
        try:
            return Path(str(nltk.data.find("corpora/wordnet.zip")))
        except LookupError:
            raise RuntimeError(f"WordNet 3.0 for NLTK is not installed: {_SETUP_HINT}") from None


def cache_dir() -> Path:
    """``$GEOLIP_CACHE/wordnet`` (default ``<repo>/.cache/wordnet``)."""
    return cache_root() / "wordnet"


#: the code that builds the lexicon: part of its cache key (a builder change never meets an older, valid npz in
#: the shared cache, which every fresh checkout would otherwise copy)
BUILDER = Path(__file__)


def _cache_key() -> str:
    root = wordnet_root()
    h = hashlib.sha1(f"schema={SCHEMA};nltk={version('nltk')}".encode())
    h.update(b"builder:" + hashlib.sha256(BUILDER.read_bytes()).digest())
    for name in ("data.noun", "data.verb", "data.adj", "data.adv", "index.sense", "lexnames"):
        p = root / name
        if p.exists():
            with open(p, "rb") as fh:
                head = fh.read(1 << 16)
            h.update(f"{name}:{p.stat().st_size}:".encode() + head)
        elif root.is_file():  # wordnet.zip
            h.update(f"zip:{root.stat().st_size}".encode())
            break
    return h.hexdigest()[:16]


def _csr(rows: list[list[int]], dtype=np.int32) -> tuple[np.ndarray, np.ndarray]:
    lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    flat = np.fromiter((x for r in rows for x in r), dtype=dtype, count=int(indptr[-1]))
    return indptr, flat


def _join(strings: list[str]) -> np.ndarray:
    for s in strings:
        if "\n" in s:
            raise ValueError(f"strings: unexpected newline in {s!r}")
    return np.frombuffer("\n".join(strings).encode("utf-8"), dtype=np.uint8)


def _split(buf: np.ndarray) -> list[str]:
    return bytes(buf).decode("utf-8").split("\n")


@dataclass
class Lexicon:
    """WordNet 3.0 as arrays; synset ids are positions in NLTK's ``all_synsets()`` order.

    Attributes
    ----------
    names : list of str, (N,)
        NLTK synset names (``"dog.n.01"``).
    pos : (N,) uint8
        Part-of-speech code, an index into ``"nvasr"``.
    lexname_id : (N,) int16
        Index into ``lexnames``.
    definitions : list of str, (N,)
    lemma_indptr : (N+1,) int64 ; lemma_names : list of str
        Lemma names (NLTK ``Lemma.name()``, underscores kept) of synset ``i`` are
        ``lemma_names[lemma_indptr[i]:lemma_indptr[i+1]]``, in NLTK's order.
    hyper_indptr, hyper_ids / inst_indptr, inst_ids : CSR (int64, int32)
        ``hypernyms()`` and ``instance_hypernyms()``, sorted by name (NLTK's own order comes
        from a set and changes between processes).
    min_depth, max_depth : (N,) int16
        NLTK's ``Synset.min_depth()`` / ``max_depth()``.
    anc_indptr, anc_ids, anc_dist : CSR (int64, int32, int16)
        Every synset reachable upwards through hypernyms and instance hypernyms, the
        synset itself included at distance 0, with its shortest distance (NLTK's
        ``_shortest_hypernym_paths`` without the fake root); rows sorted by id.
    ecc : (N,) int16
        Largest of those distances (the fake root sits at ``ecc + 1``).
    name_rank : (N+1,) int32
        Rank of each name in Python string order among all names and ``"*ROOT*"``
        (entry ``N`` is the fake root), NLTK's tie-break when sorting subsumers.
    """

    names: list
    pos: np.ndarray
    lexname_id: np.ndarray
    lexnames: list
    definitions: list
    lemma_indptr: np.ndarray
    lemma_names: list
    hyper_indptr: np.ndarray
    hyper_ids: np.ndarray
    inst_indptr: np.ndarray
    inst_ids: np.ndarray
    min_depth: np.ndarray
    max_depth: np.ndarray
    anc_indptr: np.ndarray
    anc_ids: np.ndarray
    anc_dist: np.ndarray
    ecc: np.ndarray
    name_rank: np.ndarray
    _index: dict = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.names)

    @property
    def index(self) -> dict:
        """``{synset name: id}``."""
        if not self._index:
            self._index.update({n: i for i, n in enumerate(self.names)})
        return self._index

    @property
    def needs_root(self) -> np.ndarray:
        """(N,) bool: NLTK's ``_needs_root()`` (every part of speech but nouns)."""
        return self.pos != 0

    def ids(self, synsets, name: str = "synsets") -> np.ndarray:
        """Ids of a sequence of NLTK synsets, synset names or integer ids -> (n,) int64."""
        if isinstance(synsets, np.ndarray) and synsets.dtype.kind in "iu":
            out = synsets.astype(np.int64, copy=False)
        else:
            idx = self.index
            try:
                out = np.fromiter((s if isinstance(s, (int, np.integer)) else
                                   idx[s if isinstance(s, str) else s.name()] for s in synsets),
                                  dtype=np.int64)
            except KeyError as exc:
                raise ValueError(f"{name}: unknown synset {exc.args[0]!r} (expected NLTK WordNet 3.0 "
                                 f"synsets, names like 'dog.n.01', or integer ids)") from None
            except AttributeError:
                raise ValueError(f"{name}: expected NLTK synsets, synset names or integer ids") from None
        if out.size and (out.min() < 0 or out.max() >= len(self)):
            raise ValueError(f"{name}: synset ids must lie in [0, {len(self)})")
        return out

    def synsets(self, ids) -> list:
        """NLTK ``Synset`` objects for ids (loaded lazily, no full parse)."""
        wn = get_wordnet()
        return [wn.synset(self.names[int(i)]) for i in np.asarray(ids).ravel()]

    def lemmas_of(self, i: int) -> list:
        return self.lemma_names[self.lemma_indptr[i]:self.lemma_indptr[i + 1]]

    def hypernyms_of(self, i: int) -> np.ndarray:
        return self.hyper_ids[self.hyper_indptr[i]:self.hyper_indptr[i + 1]]

    def lexname(self, i: int) -> str:
        return self.lexnames[self.lexname_id[i]]

    # ------------------------------------------------------------------ (de)serialization
    def to_npz_bytes(self) -> bytes:
        arrays = {k: getattr(self, k) for k in (
            "pos", "lexname_id", "lemma_indptr", "hyper_indptr", "hyper_ids", "inst_indptr",
            "inst_ids", "min_depth", "max_depth", "anc_indptr", "anc_ids", "anc_dist", "ecc",
            "name_rank")}
        for k in ("names", "lexnames", "definitions", "lemma_names"):
            arrays[k] = _join(getattr(self, k))
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        return buf.getvalue()

    @classmethod
    def from_npz(cls, path) -> "Lexicon":
        with np.load(path, allow_pickle=False) as z:
            kw = {k: z[k] for k in z.files}
        for k in ("names", "lexnames", "definitions", "lemma_names"):
            kw[k] = _split(kw[k])
        return cls(**kw)


def _ancestor_tables(parents: list[list[int]]):
    """Breadth-first shortest upward distances from every node (cycles are harmless)."""
    rows_ids, rows_dist, ecc = [], [], []
    for s in range(len(parents)):
        dist = {s: 0}
        frontier = [s]
        d = 0
        while frontier:
            d += 1
            nxt = []
            for x in frontier:
                for p in parents[x]:
                    if p not in dist:
                        dist[p] = d
                        nxt.append(p)
            frontier = nxt
        keys = sorted(dist)
        rows_ids.append(keys)
        rows_dist.append([dist[k] for k in keys])
        ecc.append(max(dist.values()))
    indptr, ids = _csr(rows_ids)
    _, dists = _csr(rows_dist, dtype=np.int16)
    return indptr, ids, dists, np.asarray(ecc, dtype=np.int16)


def build_lexicon(wn=None, progress: bool = True) -> Lexicon:
    """Build a :class:`Lexicon` from NLTK's WordNet (≈20 s; use :func:`load_lexicon`)."""
    wn = wn or get_wordnet()
    syns = list(tqdm(wn.all_synsets(), desc="WordNet synsets", total=117659, disable=_progress.disabled(progress)))
    names = [s.name() for s in syns]
    index = {n: i for i, n in enumerate(names)}
    # NLTK keeps pointers in a set, so hypernyms() order varies between processes
    # (string hashing is salted); store them sorted by name, a deterministic order
    hyper = [[index[h.name()] for h in sorted(s.hypernyms())] for s in syns]
    inst = [[index[h.name()] for h in sorted(s.instance_hypernyms())] for s in syns]
    lexnames = sorted({s.lexname() for s in syns})
    lex_index = {n: i for i, n in enumerate(lexnames)}
    lemma_rows = [[lm.name() for lm in s.lemmas()] for s in syns]
    lemma_indptr = np.zeros(len(syns) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in lemma_rows], out=lemma_indptr[1:])
    hyper_indptr, hyper_ids = _csr(hyper)
    inst_indptr, inst_ids = _csr(inst)
    anc_indptr, anc_ids, anc_dist, ecc = _ancestor_tables([h + i for h, i in zip(hyper, inst)])
    all_names = names + [ROOT_NAME]
    order = sorted(range(len(all_names)), key=all_names.__getitem__)
    name_rank = np.empty(len(all_names), dtype=np.int32)
    name_rank[np.asarray(order)] = np.arange(len(all_names), dtype=np.int32)
    return Lexicon(
        names=names,
        pos=np.asarray([POS_CODES.index(s.pos()) for s in syns], dtype=np.uint8),
        lexname_id=np.asarray([lex_index[s.lexname()] for s in syns], dtype=np.int16),
        lexnames=lexnames,
        definitions=[s.definition() for s in syns],
        lemma_indptr=lemma_indptr,
        lemma_names=[x for r in lemma_rows for x in r],
        hyper_indptr=hyper_indptr, hyper_ids=hyper_ids,
        inst_indptr=inst_indptr, inst_ids=inst_ids,
        min_depth=np.asarray([s.min_depth() for s in syns], dtype=np.int16),
        max_depth=np.asarray([s.max_depth() for s in syns], dtype=np.int16),
        anc_indptr=anc_indptr, anc_ids=anc_ids, anc_dist=anc_dist, ecc=ecc,
        name_rank=name_rank,
    )


#: the arrays weigh ~22 MB; a cached file far larger is not read (rebuilt instead)
_MAX_LEXICON_BYTES = 512 * 1024 * 1024


@functools.lru_cache(maxsize=1)
def load_lexicon(progress: bool = True) -> Lexicon:
    """The cached :class:`Lexicon` (built and saved on first use, ≈20 s; then ≈0.5 s)."""
    name = f"lexicon-{_cache_key()}.npz"
    path = cache_dir() / name
    shared = shared_cache_root()
    shared_path = shared / "wordnet" / name if shared is not None else None
    for src in (path, shared_path):  # this checkout's cache, then the one every checkout shares
        if src is None or not src.is_file() or src.stat().st_size > _MAX_LEXICON_BYTES:
            continue
        try:
            lex = Lexicon.from_npz(src)  # allow_pickle=False: a planted file is data or refused
        except Exception:  # noqa: BLE001 - a corrupt cache is rebuilt
            continue
        if src != path:
            atomic_write_bytes(path, src.read_bytes())
        elif shared_path is not None and not shared_path.exists():
            _publish(shared_path, src.read_bytes())  # a checkout built before the shared cache existed
        return lex
    lex = build_lexicon(progress=progress)
    data = lex.to_npz_bytes()
    atomic_write_bytes(path, data)
    if shared_path is not None:
        _publish(shared_path, data)
    return lex


def _publish(shared_path: Path, data: bytes) -> None:
    """Best effort: a read-only or full home never fails a notebook."""
    try:
        atomic_write_bytes(shared_path, data)
    except OSError:
        pass
