"""WordNet 3.0 access: the NLTK corpus, and a cached array form of it (:class:`Lexicon`).

NLTK parses the whole of WordNet in ~15 s on a small CPU (``wn.all_synsets()``), which is
longer than a demo notebook may take. :func:`load_lexicon` therefore builds, once per
machine, an array form of everything the lexical notebooks and the similarity engine need
(synset names in ``all_synsets()`` order, parts of speech, lexnames, definitions, lemma
names, hypernym / instance-hypernym links, NLTK's ``min_depth`` / ``max_depth``, and each
synset's table of ancestors with their shortest hypernym distances), saves it as
``<cache>/wordnet/lexicon-<key>.npz`` and loads it in a fraction of a second afterwards.
The key changes with the WordNet files, the NLTK version and the code of this module
(:data:`BUILDER`), so a stale cache, or one built by other code, is never used. ``<cache>`` is
``$GEOLIP_CACHE`` or ``<repo>/.cache``; a second checkout copies the file from the user-level
shared cache (:func:`geolip_lib.paths.shared_cache_root`). Each file is read as data (a regular file
only, bounded, no pickle) and checked against the build's own invariants before use
(:func:`lexicon_problem`: lengths, ids, orders, NLTK's depths, the ancestor tables of the hypernym
links); one that fails is not used, with one ``warning:`` line, and is rebuilt.

Build it ahead of time with ``python -m geolip_lib.lexical`` (part of ``make setup``).
"""
from __future__ import annotations

import functools
import hashlib
import io
import os
import sys
import zipfile
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Optional

import numpy as np
from tqdm.auto import tqdm

from .. import progress as _progress
from ..cache_auth import RecordRefused, read_bytes
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


#: what the build writes: ``name -> (dtype, length)``, a length in synsets (``"N"``, ``"N+1"``) or the name of
#: the offsets whose last entry it is
_ARRAYS = {"pos": (np.uint8, "N"), "lexname_id": (np.int16, "N"), "min_depth": (np.int16, "N"),
           "max_depth": (np.int16, "N"), "ecc": (np.int16, "N"), "name_rank": (np.int32, "N+1"),
           "lemma_indptr": (np.int64, "N+1"), "hyper_indptr": (np.int64, "N+1"), "inst_indptr": (np.int64, "N+1"),
           "anc_indptr": (np.int64, "N+1"), "hyper_ids": (np.int32, "hyper_indptr"),
           "inst_ids": (np.int32, "inst_indptr"), "anc_ids": (np.int32, "anc_indptr"),
           "anc_dist": (np.int16, "anc_indptr")}
#: the lexname prefix of each part of speech (``POS_CODES`` order; satellite adjectives are ``adj.*``)
_LEXNAME_PREFIX = ("noun.", "verb.", "adj.", "adj.", "adv.")


def _rows_of(indptr: np.ndarray) -> np.ndarray:
    """The row of each entry of a CSR table."""
    return np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))


def _gather(indptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(which, entry)``: for each of ``rows`` (in turn, with repeats) every entry index of that row of a CSR
    table, and the position in ``rows`` it came from."""
    lengths = indptr[rows + 1] - indptr[rows]
    which = np.repeat(np.arange(len(rows), dtype=np.int64), lengths)
    starts = np.cumsum(lengths) - lengths
    return which, np.repeat(indptr[rows], lengths) + np.arange(int(lengths.sum()), dtype=np.int64) - \
        np.repeat(starts, lengths)


def lexicon_problem(lx: Lexicon) -> Optional[str]:
    """Why a :class:`Lexicon` read from a cache is not what :func:`build_lexicon` writes (None: it is). Checked
    against the build's own invariants, so that a file built by other code, damaged or poisoned (every
    ``min_depth`` 0, arrays of the wrong length) is rebuilt rather than used: each array's dtype and length;
    offsets that start at 0, never decrease and end at their table's length; every id in range; names unique,
    each of its part of speech, ``name_rank`` their Python string order; lexnames sorted, each of its synset's
    part of speech; hypernym rows sorted by name; ``min_depth`` / ``max_depth`` NLTK's (0 at a synset without
    hypernyms, else one more than the least / greatest of its hypernyms'); each ancestor table exactly the
    breadth-first one of the hypernym links (the synset itself at 0, each other ancestor one more than the
    nearest of its hypernyms' distances to it, every ancestor of a hypernym present) and ``ecc`` its
    largest distance. What no invariant ties (which synset a hypernym link names, the words of a definition
    or a lemma) is the build's word alone: a shared cache is trusted that far (README, "Caches")."""
    n = len(lx.names)
    if n == 0:
        return "it holds no synset"
    for k, (dtype, length) in _ARRAYS.items():
        a = getattr(lx, k)
        want = n if length == "N" else n + 1 if length == "N+1" else None
        if not isinstance(a, np.ndarray) or a.dtype != dtype or a.ndim != 1 or (want is not None and len(a) != want):
            what = f"{a.dtype} of shape {a.shape}" if isinstance(a, np.ndarray) else type(a).__name__
            return f"{k} is {what}, where the build writes {np.dtype(dtype)} of length {want or 'its offsets give'}"
    if len(lx.definitions) != n:
        return f"{len(lx.definitions)} definitions for {n} synsets"
    for ptr, size, what in (("lemma_indptr", len(lx.lemma_names), "lemma_names"),
                            ("hyper_indptr", len(lx.hyper_ids), "hyper_ids"),
                            ("inst_indptr", len(lx.inst_ids), "inst_ids"), ("anc_indptr", len(lx.anc_ids), "anc_ids")):
        p = getattr(lx, ptr)
        if p[0] != 0 or p[-1] != size or np.any(np.diff(p) < 0):
            return f"{ptr} are not offsets into the {size} entries of {what}"
    if len(lx.anc_dist) != len(lx.anc_ids):
        return f"{len(lx.anc_dist)} ancestor distances for {len(lx.anc_ids)} ancestors"
    if np.any(np.diff(lx.lemma_indptr) < 1):
        return "a synset without a lemma"
    for k in ("hyper_ids", "inst_ids", "anc_ids"):
        a = getattr(lx, k)
        if a.size and (a.min() < 0 or a.max() >= n):
            return f"{k}: an id outside [0, {n})"
    if lx.pos.max() >= len(POS_CODES):
        return f"pos: a code outside [0, {len(POS_CODES)})"
    if lx.lexnames != sorted(set(lx.lexnames)):
        return "lexnames are not sorted and distinct"
    if lx.lexname_id.min() < 0 or lx.lexname_id.max() >= len(lx.lexnames):
        return f"lexname_id: an index outside [0, {len(lx.lexnames)})"
    if not all(lx.lexnames[j].startswith(_LEXNAME_PREFIX[p]) for j, p in zip(lx.lexname_id.tolist(), lx.pos.tolist())):
        return "a synset whose lexname is not of its part of speech"
    if len(set(lx.names)) != n:
        return "a synset name twice"
    if any(name.rpartition(".")[0].rpartition(".")[2] != POS_CODES[code]
           for name, code in zip(lx.names, lx.pos.tolist())):
        return "a synset name not of its part of speech"
    all_names = [*lx.names, ROOT_NAME]
    order = np.argsort(lx.name_rank, kind="stable")
    if np.any(lx.name_rank[order] != np.arange(n + 1)) or any(
            all_names[a] >= all_names[b] for a, b in zip(order[:-1].tolist(), order[1:].tolist())):
        return "name_rank is not the names' string order"
    for ptr, ids in (("hyper_indptr", "hyper_ids"), ("inst_indptr", "inst_ids")):
        rows, rank = _rows_of(getattr(lx, ptr)), lx.name_rank[getattr(lx, ids)]
        if np.any((np.diff(rank) <= 0) & (np.diff(rows) == 0)):
            return f"{ids}: a row not sorted by name (or a link twice)"
    # depths, from the hypernym links (hypernyms and instance hypernyms together, as NLTK's depths walk them)
    child = np.concatenate([_rows_of(lx.hyper_indptr), _rows_of(lx.inst_indptr)])
    parent = np.concatenate([lx.hyper_ids, lx.inst_ids]).astype(np.int64)
    has_parent = np.zeros(n, dtype=bool)
    has_parent[child] = True
    low = np.full(n, np.iinfo(np.int32).max, dtype=np.int64)
    high = np.full(n, -1, dtype=np.int64)
    np.minimum.at(low, child, lx.min_depth[parent].astype(np.int64))
    np.maximum.at(high, child, lx.max_depth[parent].astype(np.int64))
    if np.any(np.where(has_parent, low + 1, 0) != lx.min_depth):
        return "min_depth is not NLTK's: 0 without hypernyms, else one more than the least of its hypernyms'"
    if np.any(np.where(has_parent, high + 1, 0) != lx.max_depth):
        return "max_depth is not NLTK's: 0 without hypernyms, else one more than the greatest of its hypernyms'"
    # the ancestor tables: rows sorted by id, the synset itself at 0 and nothing else at 0
    rows = _rows_of(lx.anc_indptr)
    keys = rows * n + lx.anc_ids
    if len(keys) < n:
        return f"{len(keys)} ancestors for {n} synsets, each its own"
    dist = lx.anc_dist.astype(np.int64)
    if np.any(np.diff(keys) <= 0):
        return "anc_ids: a row not sorted by id (or an ancestor twice)"
    at = np.searchsorted(keys, np.arange(n, dtype=np.int64) * (n + 1))
    if np.any(at >= len(keys)) or np.any(keys[np.minimum(at, len(keys) - 1)] != np.arange(n) * (n + 1)) \
            or np.any(dist[at] != 0) or np.count_nonzero(dist == 0) != n or np.any(dist < 0):
        return "an ancestor table without its synset at distance 0, or another ancestor at distance 0"
    if np.any(np.maximum.reduceat(dist, lx.anc_indptr[:-1]) != lx.ecc):
        return "ecc is not the largest distance of each ancestor table"

    def look(row: np.ndarray, anc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        q = row * n + anc
        i = np.minimum(np.searchsorted(keys, q), len(keys) - 1)
        return keys[i] == q, i

    # every ancestor of a hypernym is an ancestor, at most one further away
    edge, entry = _gather(lx.anc_indptr, parent)
    found, i = look(child[edge], lx.anc_ids[entry])
    if not np.all(found) or np.any(dist[i] > dist[entry] + 1):
        return "an ancestor table missing an ancestor of a hypernym, or farther from it than the hypernym plus one"
    # and every ancestor but the synset itself is one further than from some hypernym
    edge, entry = _gather(lx.anc_indptr, child)
    found, i = look(parent[edge], lx.anc_ids[entry])
    reached = np.zeros(len(keys), dtype=bool)
    reached[entry[found & (dist[i] == dist[entry] - 1)]] = True
    if np.any(~reached & (dist > 0)):
        return "an ancestor table with an ancestor its hypernyms do not reach at that distance"
    return None


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
    """The cached :class:`Lexicon` (built and saved on first use, ≈20 s; then ≈0.5 s to read, ≈0.5 s to check)."""
    name = f"lexicon-{_cache_key()}.npz"
    path = cache_dir() / name
    shared = shared_cache_root()
    shared_path = shared / "wordnet" / name if shared is not None else None
    for src in (path, shared_path):  # this checkout's cache, then the one every checkout shares
        if src is None:
            continue
        lex, data = _read_cached(src)
        if lex is None:
            continue
        if src != path:
            atomic_write_bytes(path, data)
        elif shared_path is not None and not shared_path.exists():
            _publish(shared_path, data)  # a checkout built before the shared cache existed
        return lex
    lex = build_lexicon(progress=progress)
    data = lex.to_npz_bytes()
    atomic_write_bytes(path, data)
    if shared_path is not None:
        _publish(shared_path, data)
    return lex


def _read_cached(src: Path) -> tuple[Optional[Lexicon], bytes]:
    """``(lexicon, its file's bytes)`` of a cached lexicon file, or ``(None, b"")`` when there is none or it is
    not used, which one ``warning:`` line says: not a regular file (a pipe, a device: never waited on) or over
    :data:`_MAX_LEXICON_BYTES`, not the uncompressed npz the build writes (no pickle is ever loaded, no
    member inflated), or arrays that break the build's invariants (:func:`lexicon_problem`)."""
    try:
        data = read_bytes(src, _MAX_LEXICON_BYTES, "the WordNet lexicon")
    except FileNotFoundError:
        return None, b""
    except RecordRefused as exc:
        print(f"warning: WordNet lexicon {exc}; not used", file=sys.stderr, flush=True)
        return None, b""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            if any(m.compress_type != zipfile.ZIP_STORED for m in z.infolist()):
                raise ValueError("a compressed member, where the build stores its arrays uncompressed")
        lex = Lexicon.from_npz(io.BytesIO(data))  # allow_pickle=False: a planted file is data or refused
        why = lexicon_problem(lex)
    except Exception as exc:  # noqa: BLE001 - whatever a damaged file raises, it is rebuilt
        why = f"not the arrays the build writes ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
    if why is not None:
        print(f"warning: WordNet lexicon {src}: {why}; not used", file=sys.stderr, flush=True)
        return None, b""
    return lex, data


def _publish(shared_path: Path, data: bytes) -> None:
    """Best effort: a read-only or full home never fails a notebook."""
    try:
        atomic_write_bytes(shared_path, data)
    except OSError:
        pass
