"""The Serve app's configuration: one pydantic model, read from the ``args`` of a Serve config
file (``deploy/cpu.yaml``, ``deploy/gpu.yaml``), so ``finrag serve --config FILE`` and
``serve run FILE`` build the same app from the same YAML."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

DEPLOYMENTS = ("Ingress", "Router", "Embedder", "Retriever", "LightReranker", "LargeReranker",
               "Generator")
# the profile role each deployment loads (its GPU share comes from it)
DEPLOYMENT_ROLES = {"Router": "router", "Embedder": "embedder", "LightReranker": "light_reranker",
                    "LargeReranker": "large_reranker", "Generator": "generator"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DeploymentOptions(_Strict):
    """What Ray Serve's ``.options()`` takes for one deployment; unset fields keep Serve's."""

    num_replicas: int | str | None = None  # a number or "auto"
    autoscaling_config: dict[str, Any] | None = None
    max_ongoing_requests: int | None = Field(None, ge=1)
    max_queued_requests: int | None = None
    ray_actor_options: dict[str, Any] | None = None
    graceful_shutdown_timeout_s: float | None = None

    @model_validator(mode="after")
    def _one_scaling_mode(self):
        if self.autoscaling_config and isinstance(self.num_replicas, int):
            raise ValueError("give num_replicas or autoscaling_config, not both")
        return self

    def serve_options(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class Limits(_Strict):
    max_question_chars: int = Field(2000, ge=1)
    max_body_bytes: int = Field(16_384, ge=256)
    deadline_s: float = Field(300.0, gt=0)  # past it a request gets 504 (its work still ends)
    # answer requests in progress at once; one more gets 503 + Retry-After at once
    max_in_flight: int = Field(8, ge=1)
    retry_after_s: int | None = Field(None, ge=1)  # None: from recent answer latency
    # a request body not received in full within this gets 408 (slow bodies hold slots)
    body_timeout_s: float = Field(10.0, gt=0)
    # /healthz: how long each deployment may take to answer its probe
    health_timeout_s: float = Field(10.0, gt=0)
    # GET /v1/documents: the most documents in one page
    max_page_size: int = Field(200, ge=1)
    # POST /v1/documents: the largest file one may upload, and how long its body may take
    max_upload_bytes: int = Field(64 * 2**20, ge=1024)
    upload_timeout_s: float = Field(300.0, gt=0)
    # writes (upload, remove, collections) at once, counted from before the body is read until
    # the write ends; one more gets 503 + Retry-After at once
    max_writes: int = Field(2, ge=1)
    # past it the client gets 504; the write itself still runs to its end (committed whole or
    # not at all) and holds its slot until then
    write_deadline_s: float = Field(600.0, gt=0)
    # /healthz: how long a deep probe of the deployments is reused (one runs at a time)
    health_cache_s: float = Field(3.0, ge=0)


class IdentityProxy(_Strict):
    """An identity proxy in front (OIDC or LDAP, through the proxy) names the user and the
    user's groups in headers it sets; ``groups`` maps each group to the collections it reads
    ('*': all). Trusted only when configured here (otherwise such headers are ignored), and
    only with the shared secret the proxy sends in ``secret_header`` (from the environment
    variable ``secret_env``), so that a client reaching the app past the proxy cannot name
    itself. A malformed or repeated header gets 401. The groups header lists names split by
    ``groups_separator``; a name in double quotes may hold the separator (a DN such as
    ``"CN=Desk A,OU=Groups,DC=bank,DC=com"``)."""

    user_header: str = "X-Forwarded-User"
    groups_header: str = "X-Forwarded-Groups"
    secret_header: str = "X-Proxy-Secret"
    secret_env: str = "FINRAG_PROXY_SECRET"
    groups_separator: str = Field(",", min_length=1, max_length=4)
    groups: dict[str, list[str]] = Field(min_length=1)

    @model_validator(mode="after")
    def _usable_separator(self):
        sep = self.groups_separator
        if not (sep.isascii() and sep.isprintable()) or not sep.strip() or '"' in sep \
                or "\\" in sep:
            raise ValueError(f"auth.proxy.groups_separator {sep!r}: printable ASCII other than "
                             f"spaces, '\"' and '\\' (e.g. ',', ';' or '|')")
        return self

    def secret(self) -> str:
        value = os.environ.get(self.secret_env, "").strip()
        if len(value) < 16:
            raise ValueError(f"auth.proxy: ${self.secret_env} must hold the proxy's shared "
                             f"secret (16+ characters)")
        return value


class NoTokenFile(ValueError):
    """The bearer token file is gone or empty: its token no longer counts (unlike a file caught
    half-written, whose last good token may)."""


class Auth(_Strict):
    """Bearer-token auth for /v1/*: the token from a file (a mounted secret), the name of the
    environment variable that holds it, or the token itself (tests). /healthz and /metrics
    stay open.

    ``required``: refuse to start without a token. None (the default) means required whenever
    the service listens on anything but loopback (``build_app`` and ``finrag serve`` check)."""

    bearer_token: str | None = None
    bearer_token_env: str | None = "FINRAG_API_TOKEN"
    bearer_token_file: str | None = None  # default: the file named by $FINRAG_API_TOKEN_FILE
    # scoped tokens (`finrag token`): default the file named by $FINRAG_TOKENS_FILE; the bearer
    # token above, if any, stays a token that reads every collection
    tokens_file: str | None = None
    # the audit log (JSON lines, rotated): default $FINRAG_AUDIT_FILE, else audit.jsonl beside
    # the token file when there is one, else none
    audit_file: str | None = None
    proxy: IdentityProxy | None = None
    required: bool | None = None
    # a reverse proxy forwards to this service (even on loopback): a token must be set
    behind_proxy: bool = False
    # how often the bearer token file is read again (rotated, emptied or deleted in place)
    bearer_token_reread_s: float = Field(30.0, gt=0, le=3600)

    def tokens_path(self) -> Path | None:
        path = self.tokens_file or os.environ.get("FINRAG_TOKENS_FILE")
        return Path(path).expanduser() if path else None

    def audit_path(self) -> Path | None:
        path = self.audit_file or os.environ.get("FINRAG_AUDIT_FILE")
        if path:
            return Path(path).expanduser()
        tokens = self.tokens_path()
        return tokens.with_name("audit.jsonl") if tokens is not None else None

    def token(self) -> str | None:
        if self.bearer_token:
            return self._checked(self.bearer_token, "auth.bearer_token")
        path = self.bearer_token_file or os.environ.get("FINRAG_API_TOKEN_FILE")
        if path:
            try:
                value = Path(path).expanduser().read_text(encoding="utf-8").strip()
            except OSError as e:
                raise NoTokenFile(f"cannot read the bearer token file named by auth."
                                  f"bearer_token_file / $FINRAG_API_TOKEN_FILE "
                                  f"({e.strerror or type(e).__name__})") from None
            except UnicodeDecodeError:
                raise ValueError("cannot read the bearer token file named by auth."
                                 "bearer_token_file / $FINRAG_API_TOKEN_FILE "
                                 "(not UTF-8 text)") from None
            if not value:
                raise NoTokenFile("the bearer token file is empty")
            return self._checked(value, "the bearer token file")
        if self.bearer_token_env:
            value = os.environ.get(self.bearer_token_env, "").strip()
            return self._checked(value, f"${self.bearer_token_env}") if value else None
        return None

    @staticmethod
    def _checked(token: str, where: str) -> str:
        # a header value is printable ASCII; a token that cannot be sent could never match
        if not token.isascii() or not token.isprintable() or " " in token:
            raise ValueError(f"{where}: a bearer token must be printable ASCII without spaces")
        if len(token) < 12:
            raise ValueError(f"{where}: a bearer token needs at least 12 characters")
        return token


def is_loopback(host: str | None) -> bool:
    """True for an address only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    import ipaddress

    if host is None or host == "localhost":  # None: Serve's default, 127.0.0.1
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class Batching(_Strict):
    """The Generator gathers concurrent single-prompt requests into one engine batch."""

    max_batch_size: int = Field(8, ge=1)
    batch_wait_timeout_s: float = Field(0.05, ge=0)


class AppConfig(_Strict):
    # an index folder or a publish root (`finrag publish`); default: $FINRAG_INDEX, else the
    # user's default index folder
    index: str | None = None
    profile: str | None = None  # default: $FINRAG_PROFILE, else the profiles file's default
    profiles_file: str | None = None  # a user profiles YAML (default: $FINRAG_CONFIG)
    meta_index: str | None = None  # V-A variant folder (default: <index>-meta when present)
    llmctx_index: str | None = None  # V-B variant folder (default: <index>-llmctx)
    large_rerank: bool | None = None  # None: the profile's setting
    use_llm_router: bool = True
    companies: list[str] = Field(default_factory=list)  # extra company tables (YAML)
    limits: Limits = Field(default_factory=Limits)
    auth: Auth = Field(default_factory=Auth)
    batching: Batching = Field(default_factory=Batching)
    # OMP_NUM_THREADS of a deployment that reserves less than one CPU (default: the cores of
    # the machine that builds the app); Ray would give it 1, and the served generator then
    # took ~1.8x as long per answer as in one process on 2 cores
    shared_cpu_threads: int | None = Field(None, ge=1)
    deployments: dict[str, DeploymentOptions] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _known_deployments(self):
        unknown = sorted(set(self.deployments) - set(DEPLOYMENTS))
        if unknown:
            raise ValueError(f"unknown deployment(s) {', '.join(unknown)}; "
                             f"known: {', '.join(DEPLOYMENTS)}")
        return self

    def options(self, name: str, profile=None) -> dict[str, Any]:
        """Serve options of a deployment. Without ``ray_actor_options`` it reserves no CPU:
        Ray's default of one CPU per actor would need 7 CPUs for the app and leave nothing
        for a batch job on a small machine (placement is the config's job). Such a deployment
        shares the machine's cores: it gets ``shared_cpu_threads`` unless its own
        ``runtime_env`` sets OMP_NUM_THREADS. Without ``num_gpus`` in the YAML a deployment
        reserves its role's GPU share from the ``profile`` (``models.devices.placement_gpus``);
        a Router whose LLM is the Generator's, or that calls no LLM, reserves none."""
        from finrag.models.devices import placement_gpus

        opts = self.deployments.get(name)
        opts = opts.serve_options() if opts else {}
        actor = opts.setdefault("ray_actor_options", {"num_cpus": 0})
        role = DEPLOYMENT_ROLES.get(name)
        if profile is not None and role in profile.roles and "num_gpus" not in actor:
            own_llm = self.use_llm_router and (
                profile.role("router").model != profile.role("generator").model)
            gpus = placement_gpus(profile, [role]) if role != "router" or own_llm else 0.0
            if gpus:
                actor["num_gpus"] = gpus
        if actor.get("num_cpus") is not None and actor["num_cpus"] < 1:
            env = actor.setdefault("runtime_env", {}).setdefault("env_vars", {})
            env.setdefault("OMP_NUM_THREADS", str(self.shared_cpu_threads or os.cpu_count() or 1))
        return opts

    def index_dir(self) -> Path:
        from finrag.retrieval.store.index import default_index_dir

        return Path(self.index).expanduser() if self.index else default_index_dir()


class ServeFile(BaseModel):
    """The parts of a Serve config file finrag reads (the rest is Serve's)."""

    model_config = ConfigDict(extra="allow")

    http_options: dict[str, Any] = Field(default_factory=dict)
    # one HTTP proxy on the head node, or one on every node (Serve's default)
    proxy_location: Literal["HeadOnly", "EveryNode", "Disabled"] = "EveryNode"
    applications: list[dict[str, Any]]

    @model_validator(mode="after")
    def _one_finrag_app(self):
        if not self.finrag_apps():
            raise ValueError("no application with import_path finrag.serving.app:build_app")
        return self

    def finrag_apps(self) -> list[dict[str, Any]]:
        return [a for a in self.applications if a.get("import_path") == "finrag.serving.app:build_app"]

    def app_config(self) -> AppConfig:
        return AppConfig.model_validate(self.finrag_apps()[0].get("args") or {})


def load_serve_file(path: str | Path) -> ServeFile:
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"no Serve config at {path}") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: a Serve config is a YAML mapping")
    return ServeFile.model_validate(raw)
