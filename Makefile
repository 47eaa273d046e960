# geolip — the two commands that do everything on a fresh machine:
#   make report   set-up, then the demo profile end to end -> reports/demo/index.html, report.pdf
#                 (make report RUN_ARGS=--resume skips finished jobs; PROFILE=paper on a GPU box)
#   make test     set-up, then the whole test suite (what CI runs)
# and for people who edit notebooks:
#   make lab      JupyterLab on the project's kernel
SHELL := /bin/bash
PY := .venv/bin/python
export NLTK_DATA := $(CURDIR)/.cache/nltk_data
PROFILE ?= demo
# offline only for the profiles that need no hub (demo, tiny); PROFILE=paper downloads unless
# the caller exports HF_HUB_OFFLINE=1 (a filled HF_HOME) or the model files set local_dir:
ifneq ($(filter $(PROFILE),demo tiny),)
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
endif
export PYDEVD_DISABLE_FILE_VALIDATION := 1
PYTEST_ARGS ?=
RUN_ARGS ?=

.PHONY: setup report test lab notebooks bench clean help
help:
	@sed -n '2,7p' Makefile

setup:
	@bash scripts/setup.sh

report: setup
	$(PY) run_all.py --profile $(PROFILE) $(RUN_ARGS)

test: setup
	$(PY) -m pytest -m "not gpu" $(PYTEST_ARGS)

lab: setup
	.venv/bin/jupyter lab --notebook-dir=notebooks

# Re-pair every notebook with its jupytext .py (the .py is what is reviewed).
notebooks: setup
	.venv/bin/jupytext --sync notebooks/[0-9]*.ipynb

bench: setup
	$(PY) -m pip install -q -e '.[bench]'
	@for b in benchmarks/*.py; do echo "== $$b"; $(PY) $$b --quick || exit 1; done

clean:
	rm -rf reports/*/ .pytest_cache
