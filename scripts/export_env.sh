#!/usr/bin/env bash
# The exporters' environment, .cache/exporters/venv (requirements-export.lock says why it is its own): the
# recipes of params/README.md "Your model, in the format you keep" run optimum-cli, ct2-transformers-converter and
# llama.cpp's convert_hf_to_gguf.py from it. Layered on the project's .venv (a .pth file), so it installs ~60 MB, not a second torch. Idempotent:
# a stamp keyed by the lock and .venv's own stamp; a second run starts no Python. Prints the venv's python.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || { echo "[export-env] error: no .venv here; run make setup first" >&2; exit 2; }
CACHE=${GEOLIP_CACHE:-.cache}
ENV=$CACHE/exporters/venv
STAMP=$ENV/.stamp-$(cat requirements-export.lock | sha256sum | cut -c1-16)  # the .pth follows .venv: no rebuild when its lock changes
if [ ! -f "$STAMP" ]; then
  echo "[export-env] building $ENV (optimum-onnx, transformers 4.57 for the exporters; ~15 s)" >&2
  rm -rf "$ENV"
  .venv/bin/python -m venv --without-pip "$ENV"
  SITE=$("$ENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  MAIN=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  # --target with --no-deps: pip never sees (nor uninstalls) the project's packages behind the .pth
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps --target "$SITE" \
    -r requirements-export.lock 2>&1 | { grep -v "^WARNING: Location" >&2 || true; }
  [ "${PIPESTATUS[0]}" = 0 ] || { echo "[export-env] error: pip could not install requirements-export.lock" >&2; exit 2; }
  echo "$MAIN" > "$SITE/zz_geolip_main.pth"   # read after the env's own packages: they win
  rm -rf "$SITE/bin"   # --target's scripts start the project's python; the env's own commands are these:
  printf '#!%s\nfrom optimum.commands.optimum_cli import main\nmain()\n' "$PWD/$ENV/bin/python" > "$ENV/bin/optimum-cli"
  printf '#!%s\nfrom ctranslate2.converters.transformers import main\nmain()\n' "$PWD/$ENV/bin/python" \
    > "$ENV/bin/ct2-transformers-converter"
  chmod +x "$ENV/bin/optimum-cli" "$ENV/bin/ct2-transformers-converter"
  "$ENV/bin/python" -c 'import transformers, optimum.exporters.onnx, ctranslate2.converters' \
    || { echo "[export-env] error: the exporters do not import; rm -r $ENV and run again" >&2; exit 2; }
  touch "$STAMP"
fi
# llama.cpp's convert_hf_to_gguf.py is not a PyPI package of its own: llama-cpp-python's source archive vendors
# llama.cpp (pinned by sha256 here); only the script, its conversion/ package and its own gguf-py are kept (the
# script puts gguf-py first on its path: it is newer than the gguf wheel of the same version number).
LCP=llama_cpp_python-0.3.36
LCP_SHA=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
LLAMA=$CACHE/exporters/llama.cpp
if [ ! -f "$LLAMA/.stamp-$LCP-2" ]; then
  echo "[export-env] llama.cpp's convert_hf_to_gguf.py from the $LCP source archive (76 MB, once)" >&2
  TMP=$(mktemp -d)
  trap 'rm -rf "$TMP"' EXIT
  ARCHIVE=$CACHE/exporters/$LCP.tar.gz
  if ! echo "$LCP_SHA  $ARCHIVE" | sha256sum -c --quiet - 2>/dev/null; then
    .venv/bin/python -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: \
      "llama-cpp-python==${LCP#llama_cpp_python-}" -d "$TMP" 2>/dev/null
    echo "$LCP_SHA  $TMP/$LCP.tar.gz" | sha256sum -c --quiet - \
      || { echo "[export-env] error: $LCP.tar.gz does not have the pinned sha256" >&2; exit 2; }
    mv "$TMP/$LCP.tar.gz" "$ARCHIVE"
  fi
  tar -xzf "$ARCHIVE" -C "$TMP" "$LCP/vendor/llama.cpp/convert_hf_to_gguf.py" "$LCP/vendor/llama.cpp/conversion" \
    "$LCP/vendor/llama.cpp/gguf-py"
  rm -rf "$LLAMA" && mkdir -p "$(dirname "$LLAMA")"
  mv "$TMP/$LCP/vendor/llama.cpp" "$LLAMA"
  touch "$LLAMA/.stamp-$LCP-2"
fi
echo "$ENV/bin/python"
