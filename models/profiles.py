"""Model profiles (tiny, cpu, gpu, …): one config object, loaded from YAML with env overrides,
and the resolution of each role's model to local, verified weights."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict

from models.weights import (PACKAGED, PackagedGGUF, PackagedModel, WeightsError, resolve_gguf,
                            resolve_packaged, transformers_dir)

ROLES = ("embedder", "light_reranker", "large_reranker", "router", "generator")
PACKAGED_PROFILES = Path(__file__).with_name("profiles.yaml")


class RoleSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["sentence-transformers", "flag-embedding", "maxsim", "cross-encoder",
                  "llm-scorer", "llm"]
    model: str


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


class PipelineSettings(BaseModel):
    """Retrieval and generation budgets of the systems (DESIGN.md §5 defaults)."""

    model_config = ConfigDict(extra="forbid")
    fts_k: int = 20  # BM25 candidates
    dense_k: int = 30  # dense candidates
    rrf_k: int = 60
    large_rerank: bool = True  # run the cascade's large stage (False: light stage + cutoff)
    context_tokens: int = 3000  # generator context budget for retrieved text
    context_tables: bool = False  # repeat a block's table rows with their column names
    answer_tokens: int = 256  # generator max new tokens
    sfr_part_tokens: int = 6000  # SFR: whole-document parts of at most this many tokens
    agentic_max_retries: int = 2  # entity-anchored retries after a failed verification
    verify_chunks: int = 3  # top chunks shown to the agentic verification call
    facts_routes: bool = True  # hdrr answers metric questions from XBRL facts when it holds them


class Profile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = ""
    engine: Literal["transformers", "vllm"] = "transformers"
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
    source: Literal["package", "local", "hub"]
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
    packaged = PACKAGED.get(model)
    if isinstance(packaged, PackagedModel):
        path = resolve_packaged(packaged)
        return ResolvedWeights(model, "package", str(path), True, _folder_size(path),
                               packaged.requirement)
    if isinstance(packaged, PackagedGGUF):
        requirement = " ".join(packaged.requirements)
        if profile.role(role).kind in ("llm", "llm-scorer") and profile.engine == "transformers":
            if not prepare and not _converted(packaged):
                raise WeightsError(f"{model}: not prepared yet; run `finrag models prepare "
                                   f"--profile {profile.name}`")
            path = transformers_dir(packaged, progress=progress)
        else:
            path = resolve_gguf(packaged, progress=progress)
        return ResolvedWeights(model, "package", str(path), True, _folder_size(path), requirement)
    if Path(model).exists():
        return ResolvedWeights(model, "local", str(Path(model).resolve()), False,
                               _folder_size(Path(model)))
    if profile.allow_hub:
        return ResolvedWeights(model, "hub", model, False, None)
    raise WeightsError(
        f"{role}: {model!r} is neither a packaged model ({', '.join(PACKAGED)}) nor a local "
        f"folder, and profile {profile.name!r} does not allow the model hub")


def _converted(model: PackagedGGUF) -> bool:
    from models.weights import cache_dir

    folder = cache_dir() / "transformers" / f"{Path(model.filename).stem}-{model.sha256[:12]}"
    return (folder / "finrag-converted.json").is_file()


def load_llm(profile: Profile, role: str = "generator", **kwargs):
    """The engine for an LLM role: vLLM where the profile says so, else transformers."""
    spec = profile.role(role)
    if spec.kind not in ("llm", "llm-scorer"):
        raise ValueError(f"role {role!r} is a {spec.kind}, not an LLM")
    weights = resolve_role(profile, role)
    if profile.engine == "vllm":
        from models.vllm_engine import VLLMEngine

        # room for the profile's longest prompt: an SFR part or the context, plus the
        # instructions and the answer
        p = profile.pipeline
        kwargs.setdefault("max_model_len",
                          max(p.sfr_part_tokens, p.context_tokens) + p.answer_tokens + 1024)
        return VLLMEngine(weights.path, **kwargs)
    from models.transformers_engine import TransformersEngine

    return TransformersEngine(weights.path, model_id=spec.model, **kwargs)


def load_reranker(profile: Profile, role: str, *, embedder=None, engine=None):
    """The reranker a role names: MaxSim over the embedder, an LLM yes/no scorer, or a
    cross-encoder. Pass an already loaded embedder or engine to share it between roles."""
    from models import rerankers

    spec = profile.role(role)
    if spec.kind == "maxsim":
        from models.embedders import load_embedder

        if embedder is None:
            weights = resolve_role(profile, role)
            embedder = load_embedder(weights.path)
        return rerankers.MaxSimReranker(embedder)
    if spec.kind == "llm-scorer":
        return rerankers.LLMRelevanceScorer(engine or load_llm(profile, role), model_id=spec.model)
    if spec.kind == "cross-encoder":
        return rerankers.CrossEncoderReranker(resolve_role(profile, role).path, model_id=spec.model)
    raise ValueError(f"role {role!r} is a {spec.kind}, not a reranker")


def load_cascade(profile: Profile, **shared):
    """The profile's two-stage cascade with its configured cut-offs."""
    from models.rerankers import Cascade

    light = load_reranker(profile, "light_reranker", **shared)
    large = load_reranker(profile, "large_reranker", **shared)
    return Cascade(light, large, **profile.cascade.model_dump())
