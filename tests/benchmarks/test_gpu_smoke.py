"""benchmarks.gpu_smoke: a clear exit without CUDA, and its --device cpu dry run through every
role (the same code a GPU host runs)."""

import os
import subprocess
import sys

import pytest

from conftest import REPO


def smoke(*args):
    return subprocess.run([sys.executable, "-m", "finrag.benchmarks.gpu_smoke", *map(str, args)],
                          cwd=REPO, env=dict(os.environ, HF_HUB_OFFLINE="1"),
                          capture_output=True, text=True, timeout=600)


def test_without_cuda_it_says_so_and_exits_2():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the smoke would run")
    res = smoke("--queries", "1")
    assert res.returncode == 2
    assert "gpu_smoke: no CUDA" in res.stderr and "--device cpu" in res.stderr
    assert res.stdout == ""


@pytest.mark.slow
def test_cpu_dry_run_goes_through_every_role(tmp_path):
    res = smoke("--device", "cpu", "--queries", "3", "--answer-tokens", "8", "--out", tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    report = (tmp_path / "report.md").read_text()
    for role in ("embed", "search", "light_rerank", "large_rerank", "route", "generate"):
        assert f"| {role} |" in report
    for placed in ("generator", "embedder", "light_reranker", "large_reranker", "vectors"):
        assert f"| {placed} | cpu |" in report
    assert "Energy: unavailable" in report and "medians only" in report
    assert (tmp_path / "smoke.json").is_file()
