"""`finrag doctor`: what this machine can run, and a non-zero exit when the chosen profile
cannot run here."""

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO


def doctor(*args, env=None):
    return subprocess.run([sys.executable, "-m", "finrag.serving.cli", "doctor", *args], cwd=REPO,
                          env=dict(os.environ, HF_HUB_OFFLINE="1", **(env or {})),
                          capture_output=True, text=True, timeout=300)


def test_doctor_reports_the_machine_and_every_profile():
    res = doctor("--profile", "tiny", "--json")
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    machine = report["machine"]
    assert machine["torch"] and isinstance(machine["cuda"], list)
    assert set(machine["nvml"]) >= {"readable"} and "gpus" in machine["faiss"]
    assert "version" in machine["vllm"]
    assert report["chosen"] == "tiny" and report["profiles"]["tiny"]["runs"]
    assert set(report["profiles"]) >= {"tiny", "cpu", "gpu"}
    tiny = {r["role"]: r for r in report["profiles"]["tiny"]["roles"]}
    assert all(r["weights"] for r in tiny.values())
    assert tiny["generator"]["device"] in ["cpu"] + [f"cuda:{d['index']}" for d in machine["cuda"]]


@pytest.mark.slow
def test_doctor_fails_for_a_profile_that_cannot_run(tmp_path):
    missing = tmp_path / "no-such-model"
    config = tmp_path / "profiles.yaml"
    config.write_text(f"""
profiles:
  broken:
    engine: transformers
    roles:
      embedder: {{kind: sentence-transformers, model: sentence-transformers/all-MiniLM-L6-v2}}
      light_reranker: {{kind: maxsim, model: sentence-transformers/all-MiniLM-L6-v2}}
      large_reranker: {{kind: llm-scorer, model: HuggingFaceTB/SmolLM2-135M-Instruct}}
      router: {{kind: llm, model: HuggingFaceTB/SmolLM2-135M-Instruct, device: "cuda:7"}}
      generator: {{kind: llm, model: {missing}}}
""")
    res = doctor("--profile", "broken", "--config", str(config))
    assert res.returncode == 1, res.stdout + res.stderr
    assert "profile broken cannot run on this machine" in res.stdout
    assert str(missing) in res.stdout and "is neither a packaged model" in res.stdout
    assert "router: device 'cuda:7' asked for" in res.stdout
    ok = doctor("--profile", "tiny", "--config", str(config))
    assert ok.returncode == 0 and "profile tiny can run on this machine" in ok.stdout


def test_doctor_reports_the_llamacpp_build_and_refuses_without_it(tmp_path):
    from finrag.models.profiles import load_config
    from finrag.serving.cli.doctor import check_profile, inspect_machine

    machine = inspect_machine()
    assert set(machine.llamacpp) == {"version", "where"}
    cpu = load_config(env={}).active("cpu")
    assert cpu.engine == "llamacpp"
    machine.llamacpp = {"version": None, "where": "importing it failed: no module"}
    report = check_profile(cpu, machine)
    assert not report["runs"]
    assert any("llama.cpp" in p and "importing it failed" in p for p in report["problems"])
    transformers = check_profile(load_config(env={}).active("cpu-transformers"), machine)
    assert not any("llama.cpp" in p for p in transformers["problems"])
