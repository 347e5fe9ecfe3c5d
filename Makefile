# The two promises of the README: `make compare` and `make test` work on a fresh machine.
# Every target that runs Python depends on `install`, which is a no-op when nothing changed.

PYTHON ?= python3

# Bytecode caches (__pycache__, ignored by git) are written even where the environment sets
# PYTHONDONTWRITEBYTECODE, as this machine's does: without them every Python process the suite
# starts compiles the harness's modules again, and pytest rewrites the asserts of every module
# of the plugin's distribution again (measured: 1.2 s of a 7.3 s pytest run on a one-case project).
unexport PYTHONDONTWRITEBYTECODE
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
PYTEST := $(BIN)/python -m pytest

.PHONY: install example-venv compare test test-slow emulated-cpus cpu-avx2 cpu-baseline golden bench report lint format ops api fuzz clean

install: $(STAMP)

# torch first, alone and pinned: this machine serves the 2.13.0 CPU wheel from its local wheel
# store, while any unpinned torch request would pull a multi-GB CUDA build from PyPI.
# --no-compile, then WARM: pip would byte-compile all ~9400 modules of the wheels, where the
# imports below write the caches of the ~3100 that runs use (measured on 2 cores: the two
# installs 106 s with pip's compiling, 53 s without; the imports 27 s, 10 s of it importing).
WARM := import torch, torch._dynamo, sklearn.datasets, matplotlib.backends.backend_agg, \
	matplotlib.figure, pytest, xdist, pytest_benchmark, hypothesis, jsonschema, html5lib, \
	harness.session, harness.opmatrix.matrix

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-compile torch==2.13.0
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-compile -e '.[dev]'
	$(BIN)/python -c "$(WARM)"
	touch $@

compare: install
	$(BIN)/python compare.py $(ARGS)

# The example project's own environment (examples/porting): torch, pytest and this package
# only, so its run proves that nothing depends on this repository's root. Editable, so harness
# edits are live; rebuilt when pyproject.toml changes, like the main venv.
EXAMPLE_VENV  := out/example-venv
EXAMPLE_STAMP := $(EXAMPLE_VENV)/.installed-stamp

example-venv: $(EXAMPLE_STAMP)

# As the main environment: --no-compile, then the modules the example's runs import compiled by
# importing them. torch goes in while the main environment is built; the package after it,
# because both installs build its editable wheel in this folder (conformance_harness.egg-info),
# which must not happen twice at once.
EXAMPLE_TORCH := $(EXAMPLE_VENV)/.torch-stamp

$(EXAMPLE_TORCH): pyproject.toml
	rm -rf $(EXAMPLE_VENV)
	$(PYTHON) -m venv $(EXAMPLE_VENV)
	$(EXAMPLE_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --no-compile \
		torch==2.13.0
	$(EXAMPLE_VENV)/bin/python -c "import torch, torch._dynamo"
	touch $@

$(EXAMPLE_STAMP): $(EXAMPLE_TORCH) $(STAMP)
	$(EXAMPLE_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --no-compile \
		-e . pytest==9.0.3
	touch $@

# loadfile: the items of one case file stay on one worker (one run per case, no write races).
# tests/test_example_project.py runs the example's pytest in $(EXAMPLE_VENV).
# The two environments are built side by side (pip runs on one core), then the suite, then the
# emulated CPUs.
test:
	$(MAKE) --no-print-directory -j2 install example-venv
	mkdir -p out
	EXAMPLE_VENV=$(EXAMPLE_VENV) $(PYTEST) -n auto --dist loadfile -m "not slow" -q --junitxml=out/junit.xml $(ARGS)
	$(MAKE) --no-print-directory emulated-cpus

# The same verdict on other CPUs: every case and the op matrix under two emulated CPUs, with
# `--numerics native` so that the emulation is what runs (the portable profile would pin this
# machine's class instead): an AVX2 CPU without AVX-512 (MKL's AVX2 branch, as on an Intel
# AVX2 machine), and the x86-64 baseline (SSE4.2, no FMA: libm's non-FMA variants too). The
# goldens, written under the x86-64-v3 profile, are compared within tolerance there, and the
# messages say so. The variables of each are defined once, in harness/numerics.py
# (EMULATED_CPUS; `=`: read when a recipe runs, after `install`).
AVX2_CPU = $(shell $(BIN)/python -m harness.numerics avx2)
BASELINE_CPU = $(shell $(BIN)/python -m harness.numerics baseline)

# The two CPUs run side by side (each is one process at a time: compare.py --jobs 1, then the
# op matrix), their output kept together per CPU. --no-repeat: each side runs once there; the
# suite's own run of the cases has checked that each side gives the same bits twice.
emulated-cpus: install
	$(MAKE) --no-print-directory -j2 --output-sync=target cpu-avx2 cpu-baseline

cpu-avx2 cpu-baseline: install
	mkdir -p out/$@
	env $(if $(findstring avx2,$@),$(AVX2_CPU),$(BASELINE_CPU)) $(BIN)/python compare.py -q \
		--jobs 1 --numerics native --no-repeat --out out/$@
	env $(if $(findstring avx2,$@),$(AVX2_CPU),$(BASELINE_CPU)) $(BIN)/python -m harness.opmatrix \
		--numerics native --json out/$@/ops.json > out/$@/ops.txt || (cat out/$@/ops.txt; exit 1)
	tail -n 2 out/$@/ops.txt

test-slow: install
	$(PYTEST) -m slow -p no:xdist -q $(ARGS) || test $$? -eq 5  # 5: no test is marked slow

golden: install
	$(BIN)/python compare.py --update-golden $(ARGS)

# Benchmarks interleave the implementations they compare and end with the targets table
# (benchmarks/targets.py); a missed target never fails. `make bench ARGS=benchmarks/bench_diff.py`
# runs that file only: the folder is added only when ARGS names nothing under benchmarks.
# --numerics native: the machine's own kernels; each benchmark then runs again in a child as on
# an AVX2 CPU (benchmarks/columns.py), so the table has both columns. `make bench RUNS=3` runs
# it three times, each run's measurements in out/bench/run-N.json, and ends with the median of
# the runs' values per target and column, and each run's load (benchmarks/runs.py).
# `ARGS=--bench-column=native-only` leaves the AVX2 column out (about half the time).
RUNS ?= 1
BENCH_OUT := out/bench

bench: install
	rm -rf $(BENCH_OUT) && mkdir -p $(BENCH_OUT)
	for run in $$(seq $(RUNS)); do \
		$(PYTEST) $(if $(findstring benchmarks,$(ARGS)),,benchmarks) --benchmark-enable -p no:xdist \
			--numerics native --targets-json $(BENCH_OUT)/run-$$run.json \
			--benchmark-min-rounds=3 --benchmark-max-time=1.0 --benchmark-columns=min,median,max,rounds \
			$(ARGS) || exit 1; \
	done
	$(if $(filter 1,$(RUNS)),,$(BIN)/python benchmarks/runs.py \
		$(foreach run,$(shell seq $(RUNS)),$(BENCH_OUT)/run-$(run).json) | tee $(BENCH_OUT)/runs.txt)

ops: install
	mkdir -p out
	$(BIN)/python -m harness.opmatrix $(ARGS)

# burn's API against the engine's, from the committed harness/opmatrix/burn_api.json (no burn
# snapshot needed). Regenerate that file from a burn git directory at the pinned commit:
#   .venv/bin/python -m harness.opmatrix.burn_api extract <burn git dir>
api: install
	$(BIN)/python -m harness.opmatrix.burn_api report $(ARGS)

fuzz: install
	$(BIN)/python -m harness.opmatrix.fuzz --examples 5000 $(ARGS)

report: install
	mkdir -p out
	$(BIN)/python compare.py --html out/report.html --json out/report.json --markdown out/report.md $(ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf out .pytest_cache .benchmarks
