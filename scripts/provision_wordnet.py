#!/usr/bin/env python
"""Provision WordNet 3.0 for NLTK into ``<repo>/.cache/nltk_data`` (idempotent).

Order of attempts (the first that works wins):

1. an NLTK WordNet already present (in the target or anywhere on ``nltk.data.path``);
2. ``nltk.download("wordnet")`` when the network allows (10 s time-out);
3. the system WordNet 3.0 dict (Debian ``wordnet-base`` + ``wordnet-sense-index`` in
   ``/usr/share/wordnet``; installed with apt-get when running as root and missing),
   *copied* (NLTK 3.10 does not follow the symlinks reliably) into
   ``<target>/corpora/wordnet`` together with a rebuilt ``lexnames`` file, which Debian
   does not ship (rebuilt from the ``lexnames(5WN)`` man page when present, else from the
   fixed WordNet 3.0 table below — the 45 lexicographer files never change in 3.0);
4. otherwise exit 1 with one message saying exactly what to install.

Prints the NLTK data directory to use (``export NLTK_DATA=...``).
"""
from __future__ import annotations

import gzip
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("GEOLIP_NLTK_DATA", ROOT / ".cache" / "nltk_data"))
SYSTEM_DIRS = [Path("/usr/share/wordnet"), Path("/usr/local/WordNet-3.0/dict"), Path("/usr/share/wordnet/dict")]
DEBIAN_PACKAGES = ["wordnet-base", "wordnet-sense-index"]
REQUIRED = ["data.noun", "data.verb", "data.adj", "data.adv", "index.noun", "index.verb",
            "index.adj", "index.adv", "noun.exc", "verb.exc", "adj.exc", "adv.exc", "index.sense"]
# WordNet 3.0 lexicographer files: number, name, syntactic category (lexnames(5WN)).
LEXNAMES = """adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute
noun.body noun.cognition noun.communication noun.event noun.feeling noun.food noun.group
noun.location noun.motive noun.object noun.person noun.phenomenon noun.plant noun.possession
noun.process noun.quantity noun.relation noun.shape noun.state noun.substance noun.time
verb.body verb.change verb.cognition verb.communication verb.competition verb.consumption
verb.contact verb.creation verb.emotion verb.motion verb.perception verb.possession verb.social
verb.stative verb.weather adj.ppl""".split()
CATEGORY = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}


def log(msg: str) -> None:
    print(f"[wordnet] {msg}", file=sys.stderr)


def wordnet_works(data_dir: Path | None) -> bool:
    """True when NLTK can load WordNet 3.0 from ``data_dir`` (or its default path)."""
    code = ("import nltk, sys\n"
            "from nltk.corpus import wordnet as wn\n"
            "assert wn.get_version() == '3.0', wn.get_version()\n"
            "assert wn.synset('dog.n.01').lexname() == 'noun.animal'\n"
            "assert wn.synset('run.v.01').lexname() == 'verb.motion'\n")
    env = dict(os.environ)
    if data_dir is not None:
        env["NLTK_DATA"] = str(data_dir)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    return r.returncode == 0


def lexnames_text() -> str:
    """The 45-line ``lexnames`` file: from the man page when installed, else the fixed table."""
    names = LEXNAMES
    for man in (Path("/usr/share/man/man5/lexnames.5WN.gz"), Path("/usr/share/man/man5/lexnames.5.gz")):
        if man.exists():
            rows = re.findall(r"^(\d\d)\t(\S+)\s*\t", gzip.open(man, "rt", errors="replace").read(), re.M)
            parsed = [name for _, name in sorted(rows, key=lambda r: int(r[0]))]
            if len(parsed) == 45:
                if parsed != LEXNAMES:
                    log(f"warning: {man} lists other lexicographer files than WordNet 3.0; using the man page")
                names = parsed
            break
    return "".join(f"{i:02d}\t{n}\t{CATEGORY[n.split('.')[0]]}\n" for i, n in enumerate(names))


def find_system_dict() -> Path | None:
    for d in SYSTEM_DIRS:
        if all((d / f).exists() for f in REQUIRED):
            return d
    return None


def apt_install() -> bool:
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return False
    log(f"installing Debian packages {' '.join(DEBIAN_PACKAGES)} with apt-get")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    # wait for the dpkg lock: two checkouts set up at once (a CI clone beside a working copy) otherwise fail
    wait = ["-o", "DPkg::Lock::Timeout=600"]
    cmd = ["apt-get", *wait, "install", "-y", "-qq", "--no-install-recommends", *DEBIAN_PACKAGES]
    if subprocess.run(cmd, env=env, capture_output=True).returncode != 0:
        subprocess.run(["apt-get", *wait, "update", "-qq"], env=env, capture_output=True)
        return subprocess.run(cmd, env=env, capture_output=True).returncode == 0
    return True


def copy_system_dict(src: Path, target: Path) -> None:
    dest = target / "corpora" / "wordnet"
    tmp = target / "corpora" / ".wordnet.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for f in src.iterdir():
        if f.is_file():
            shutil.copyfile(f, tmp / f.name)  # a real copy, not a symlink
    (tmp / "lexnames").write_text(lexnames_text(), encoding="utf-8")
    (tmp / "README.geolip").write_text(f"Copied from {src} (WordNet 3.0) by scripts/provision_wordnet.py\n")
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(tmp, dest)


def try_download(target: Path) -> bool:
    socket.setdefaulttimeout(10)
    try:
        import contextlib
        import io

        import nltk

        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            ok = nltk.download("wordnet", download_dir=str(target), quiet=True, raise_on_error=True,
                               print_error_to=io.StringIO())
    except Exception:  # noqa: BLE001 - offline: fall through to the system dict
        return False
    return bool(ok) and wordnet_works(target)


def main() -> int:
    TARGET.mkdir(parents=True, exist_ok=True)
    if wordnet_works(TARGET):
        log(f"already present in {TARGET}")
    elif os.environ.get("NLTK_DATA") and wordnet_works(None):
        log(f"already present in NLTK_DATA={os.environ['NLTK_DATA']}")
        print(os.environ["NLTK_DATA"])
        return 0
    elif try_download(TARGET):
        log(f"downloaded with nltk.download into {TARGET}")
    else:
        src = find_system_dict()
        if src is None and apt_install():
            src = find_system_dict()
        if src is None:
            print("error: WordNet 3.0 is not available: no NLTK WordNet, no network for "
                  "nltk.download, and no system dict. Install Debian's packages "
                  f"(`sudo apt-get install {' '.join(DEBIAN_PACKAGES)}`) or put NLTK's wordnet "
                  f"corpus in {TARGET}/corpora/wordnet, then rerun.", file=sys.stderr)
            return 1
        copy_system_dict(src, TARGET)
        if not wordnet_works(TARGET):
            print(f"error: copied {src} into {TARGET}/corpora/wordnet but NLTK cannot read it; "
                  "check that it is WordNet 3.0 (Debian wordnet-base).", file=sys.stderr)
            return 1
        log(f"copied the system WordNet 3.0 dict {src} into {TARGET}")
    print(TARGET)
    return 0


if __name__ == "__main__":
    sys.exit(main())
