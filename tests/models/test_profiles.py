import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from finrag.models.profiles import ROLES, load_config, resolve_role
from finrag.models.weights import WeightsError

REPO = Path(__file__).resolve().parents[2]


def test_packaged_profiles_load_with_every_role():
    config = load_config(env={})
    assert config.profile == "cpu"
    for name in ("tiny", "cpu", "gpu"):
        profile = config.active(name)
        assert set(profile.roles) == set(ROLES)
    assert config.active("gpu").engine == "vllm" and config.active("gpu").allow_hub
    assert not config.active("cpu").allow_hub and not config.active("tiny").allow_hub


def test_cpu_runs_llamacpp_and_cpu_transformers_is_the_same_profile_on_transformers():
    config = load_config(env={})
    cpu, torch_cpu = config.active("cpu"), config.active("cpu-transformers")
    assert (cpu.engine, torch_cpu.engine) == ("llamacpp", "transformers")
    assert config.active("cpu-large").engine == "llamacpp"
    assert cpu.roles == torch_cpu.roles
    assert cpu.cascade == torch_cpu.cascade and cpu.pipeline == torch_cpu.pipeline
    # llama.cpp reads the packaged GGUF itself: resolving it prepares nothing
    w = resolve_role(cpu, "generator")
    assert w.verified and w.path.endswith(".gguf")


def test_env_and_file_overrides(tmp_path):
    config = load_config(env={"FINRAG_PROFILE": "tiny", "FINRAG_ROUTER_MODEL": str(tmp_path)})
    assert config.profile == "tiny"
    assert config.active().role("router").model == str(tmp_path)
    w = resolve_role(config.active(), "router")
    assert (w.source, w.verified) == ("local", False)
    user = tmp_path / "finrag.yaml"
    user.write_text("profile: gpu\nprofiles:\n  gpu:\n    roles:\n      generator:\n"
                    "        kind: llm\n        model: my-org/my-llm\n")
    config = load_config(user, env={})
    assert config.profile == "gpu" and config.active().role("generator").model == "my-org/my-llm"
    assert config.active().role("router").model.startswith("Qwen/")  # the rest is kept
    with pytest.raises(ValueError, match="unknown profile"):
        load_config(env={"FINRAG_PROFILE": "huge"}).active()


def test_a_profile_extends_another_and_overrides_only_what_it_names(tmp_path):
    user = tmp_path / "finrag.yaml"
    user.write_text("profiles:\n  cpu-short:\n    extends: cpu\n    pipeline:\n"
                    "      context_tokens: 1500\n    roles:\n      generator:\n"
                    "        model: Qwen/Qwen2.5-Coder-1.5B-Instruct\n")
    config = load_config(user, env={})
    cpu, short = config.active("cpu"), config.active("cpu-short")
    assert short.name == "cpu-short" and short.engine == cpu.engine
    assert (short.pipeline.context_tokens, cpu.pipeline.context_tokens) == (1500, 2000)
    assert short.pipeline.answer_tokens == cpu.pipeline.answer_tokens
    assert short.cascade == cpu.cascade
    assert short.role("generator").model.endswith("1.5B-Instruct")
    assert short.role("generator").kind == "llm" and short.role("router") == cpu.role("router")
    user.write_text("profiles:\n  a:\n    extends: b\n  b:\n    extends: a\n")
    with pytest.raises(ValueError, match="loop"):
        load_config(user, env={})
    user.write_text("profiles:\n  a:\n    extends: nowhere\n")
    with pytest.raises(ValueError, match="unknown profile 'nowhere'"):
        load_config(user, env={})


def test_hub_ids_only_where_the_profile_allows_them():
    config = load_config(env={"FINRAG_GENERATOR_MODEL": "some-org/some-model"})
    with pytest.raises(WeightsError, match="does not allow the model hub"):
        resolve_role(config.active("cpu"), "generator")
    gpu = load_config(env={}).active("gpu")
    w = resolve_role(gpu, "generator")
    assert (w.source, w.path, w.verified) == ("hub", "Qwen/Qwen2.5-7B-Instruct", False)


@pytest.mark.slow
def test_models_cli_prepare_list_and_corruption(tmp_path):
    env = dict(os.environ, HF_HUB_OFFLINE="1", FINRAG_CACHE=str(tmp_path / "cache"))
    run = lambda *a: subprocess.run([sys.executable, "-m", "finrag.serving.cli", "models", *a],  # noqa
                                    env=env, cwd=REPO, capture_output=True, text=True,
                                    timeout=600)
    # the profile whose LLM is a packaged GGUF to prepare (tiny's random LLM is built, not
    # prepared)
    res = run("list", "--profile", "tiny-smollm2")
    assert res.returncode == 1 and "not prepared yet" in res.stdout
    res = run("prepare", "--profile", "tiny-smollm2")
    assert res.returncode == 0, res.stderr
    res = run("list", "--profile", "tiny-smollm2", "--json")
    assert res.returncode == 0
    roles = {r["role"]: r for r in json.loads(res.stdout)["roles"]}
    assert all(r["state"] == "verified" and r["source"] == "package" for r in roles.values())
    converted = Path(roles["generator"]["path"]) / "model.safetensors"
    with open(converted, "r+b") as f:  # damage the cached copy
        f.seek(4096)
        f.write(b"\x00" * 64)
    os.utime(converted, ns=(1, 1))
    res = run("list", "--profile", "tiny-smollm2")
    assert res.returncode == 1
    assert "sha256 mismatch" in res.stdout and "finrag models prepare" in res.stdout


@pytest.mark.slow
def test_load_llm_picks_the_profile_engine():
    from finrag.models.profiles import load_llm
    from finrag.models.transformers_engine import TransformersEngine

    tiny = load_config(env={}).active("tiny")
    engine = load_llm(tiny, "router")
    assert isinstance(engine, TransformersEngine) and engine.model_id == "tiny:llm"
    tiny = load_config(env={}).active("tiny-smollm2")
    resolve_role(tiny, "router", prepare=True)
    engine = load_llm(tiny, "router")
    assert isinstance(engine, TransformersEngine)
    assert engine.model_id == "HuggingFaceTB/SmolLM2-135M-Instruct"
    with pytest.raises(ValueError, match="not an LLM"):
        load_llm(tiny, "embedder")


@pytest.mark.slow
def test_cascade_from_profile_settings():
    from finrag.models.rerankers import LLMRelevanceScorer, MaxSimReranker
    from finrag.retrieval.systems.cascade import load_cascade

    config = load_config(env={})
    assert config.active("cpu").cascade.cumulative == 0.55
    assert config.active("cpu").cascade.cliff == 0.15
    tiny = config.active("tiny")
    resolve_role(tiny, "large_reranker", prepare=True)
    cascade = load_cascade(tiny)
    assert isinstance(cascade.light, MaxSimReranker)
    assert isinstance(cascade.large, LLMRelevanceScorer)
    candidates = [(1, "Net income was $5 million in fiscal 2023."), (2, "The board met."),
                  (3, "Revenue and net income grew."), (4, "Weather was mild.")]
    result = cascade.rerank("What was net income?", candidates)
    assert 1 <= len(result.ids) <= tiny.cascade.keep_k
    assert set(result.ids) <= {1, 2, 3, 4}
    assert [s.stage for s in result.stages][:2] == ["light", "large"]
