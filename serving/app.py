"""The HTTP service: a FastAPI Ingress over the deployments, composed by ``build_app``; its
routes are ``serving.routes``'s, by concern:

    POST /v1/answer     {"question", "system", "generate", "stream"} → the Answer record
                        (``stream``: server-sent events ``text``… then ``answer``)
    GET  /v1/documents  the filings in the index
    GET  /v1/documents/{doc_id}/pages/{page}?chunk=ID
                        a page as PNG (base64) with the cited passage highlighted, and its text
    POST /v1/chat/completions, GET /v1/models
                        the OpenAI chat-completions surface (``serving.openai_api``)
    GET  /              the web page: ask, read the answer, open the cited page
    GET  /healthz       ready when every deployment answers (its probe reused a few seconds);
                        to a caller with a valid token also what is served and why not ready
    GET  /metrics       Prometheus text
    GET  /docs          the endpoints as plain HTML (no script); /openapi.json the schema

Every reply carries a Content-Security-Policy (this origin only, the web page's inline script
and style by their hashes), ``frame-ancestors 'none'``, X-Frame-Options, nosniff and
no-referrer. A request a route does not take, or one a write right refuses, is refused before
its body is read.

The Ingress runs the same ``Pipeline`` as the CLI, in a worker thread per request, with its
components replaced by deployment handles (``serving.remote``). It admits at most
``limits.max_in_flight`` answers at once; one more gets 503 with Retry-After at once, so a
client never waits on a hidden queue. An admitted request always gets a reply: the Answer, a
4xx/5xx naming the problem, or 504 past ``limits.deadline_s``. Auth, those limits and the
mapping of failures to replies are ``serving.admission``'s.
"""

import asyncio
import base64
import hashlib
import re
import threading
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from ray import serve
from starlette.routing import Match

from finrag.models.devices import placement_gpus
from finrag.models.energy import Meter, UnavailableMeter, meter_for
from finrag.retrieval.systems.pipelines import Pipeline
from finrag.serving import openai_api
from finrag.serving.admission import ApiError, Gate, check_auth, incident
from finrag.serving.config import AppConfig
from finrag.serving.deployments import Embedder, Generator, Reranker, Retriever, Router, _profile
from finrag.serving.metrics import Metrics
from finrag.serving.remote import (RemoteEmbedder, RemoteFacts, RemoteIndex, RemoteLLM,
                                   RemoteReranker, RemoteRouter, wait)
from finrag.serving.routes import answers, chat, documents, health, writing
from finrag.serving.routes.documents import DOCUMENT, PAGE, WEB_PAGE
from finrag.serving.routes.replies import AnswerAudit, error_reply, ingress_of
from finrag.serving.tokens import Grant
from finrag.serving.writes import IndexWriter

api = FastAPI(title="finrag", version="1",
              description="Answers questions over SEC filings with document-routed retrieval. "
                          "Every answer carries its citations, routing, tokens, LLM calls, "
                          "per-stage latency and energy (with its source).",
              # FastAPI's Swagger UI and ReDoc load their scripts from a CDN: /docs is ours
              docs_url=None, redoc_url=None)
for _routes in (answers, chat, documents, writing, health):
    api.include_router(_routes.router)


@api.exception_handler(ApiError)
async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
    return error_reply(request, exc.status, exc.kind, exc.message, exc.headers)


@api.exception_handler(RequestValidationError)
async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
    problems = []
    for e in exc.errors():
        where = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body"
        problems.append(f"{where}: {e.get('msg')}")
    return error_reply(request, 422, "bad_request", "; ".join(problems) or "invalid request")


_ENDPOINTS = {"/v1/answer", "/v1/documents", "/healthz", "/metrics", "/docs", "/openapi.json",
              "/", *openai_api.PATHS}


def _endpoint(path: str) -> str:
    """The metrics label of a path: its route, never the ids in it."""
    if path in _ENDPOINTS:
        return path
    if not path.startswith("/v1/documents/"):
        return "other"
    return (PAGE if "/pages/" in path else DOCUMENT + "/collections"
            if path.endswith("/collections") else DOCUMENT)


def _hashes(page: str, tag: str) -> str:
    """The CSP sources of a page's inline ``tag`` blocks: the sha256 of each one's text."""
    found = re.findall(rf"<{tag}>(.*?)</{tag}>", page, re.DOTALL)
    return " ".join("'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest())
                    .decode() + "'" for text in found) or "'none'"


def _policy(page: Path) -> str:
    """The Content-Security-Policy of every reply: scripts and styles only the web page's
    own (by hash), pictures of pages as data: URLs, calls to this origin, no framing."""
    text = page.read_text(encoding="utf-8")
    return (f"default-src 'self'; script-src {_hashes(text, 'script')}; "
            f"style-src {_hashes(text, 'style')}; img-src 'self' data:; connect-src 'self'; "
            f"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


SECURITY_HEADERS = {"Content-Security-Policy": _policy(WEB_PAGE), "X-Frame-Options": "DENY",
                    "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}
_ANSWER_PATHS = ("/v1/answer", "/v1/chat/completions")


def _route_refusal(request: Request) -> ApiError | None:
    """404 for a path no route takes, 405 for a method its route does not take; None when a
    route takes the request."""
    matches = {route.matches(request.scope)[0] for route in request.app.router.routes}
    if Match.FULL in matches:
        return None
    if Match.PARTIAL in matches:
        allowed = ", ".join(sorted(_methods(request.app.router.routes, request.url.path)))
        return ApiError(405, "bad_request", f"{request.method} is not allowed here"
                        + (f"; allowed: {allowed}" if allowed else ""),
                        {"Allow": allowed} if allowed else None)
    return ApiError(404, "not_found", "no such endpoint; GET /docs lists them")


def _methods(routes: list, path: str) -> set[str]:
    """The methods the routes of ``path`` take (Serve's routes sit in an included router)."""
    found: set[str] = set()
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            found |= _methods(inner.routes, path)
        elif getattr(route, "path_regex", None) is not None and route.path_regex.match(path):
            found |= set(getattr(route, "methods", None) or ())
    return found


@api.middleware("http")
async def _limits_and_counts(request: Request, call_next) -> Response:
    ingress = ingress_of(request)
    endpoint = _endpoint(request.url.path)
    try:
        refused = await _admit_request(ingress, request)
        response = refused or await call_next(request)
    except asyncio.CancelledError:  # the client went away before a reply
        audit = getattr(request.state, "answer_audit", None)
        if audit is not None:
            audit.end(499, ended="client_closed")
        raise
    except Exception as exc:  # a fault of ours: in the log with an id, never in the reply
        response = error_reply(request, 500, "internal", incident(exc))
    finally:
        slot = getattr(request.state, "write_slot", None)
        if slot is not None and not slot.handed:
            slot.release()
    audit = getattr(request.state, "answer_audit", None)
    if audit is not None and not audit.streamed:
        audit.end(response.status_code)
    response.headers.update(SECURITY_HEADERS)
    if ingress is not None:
        ingress.metrics.requests.labels(endpoint, str(response.status_code)).inc()
    return response


async def _admit_request(ingress: Any, request: Request) -> JSONResponse | None:
    """The Gate's checks before any handler runs (``serving.admission.Gate.check_request``),
    with ours on the headers alone, before the body is read: the route, a free write slot;
    an answer request's audit line is due from then on. The refusal, or None to go on."""
    if ingress is None:
        return None

    def before_body(grant: Grant | None) -> None:
        refusal = _route_refusal(request)
        if refusal is not None:
            raise refusal
        path = request.url.path
        if request.method != "GET" and path.startswith("/v1/documents"):
            request.state.write_slot = ingress.write_slot()
        if request.method == "POST" and path in _ANSWER_PATHS:
            request.state.answer_audit = AnswerAudit(ingress.gate, grant, path)

    try:
        await ingress.gate.check_request(request, before_body)
    except ApiError as e:
        return error_reply(request, e.status, e.kind, e.message, e.headers)
    return None


def ingress_meter(profile) -> Meter:
    """The Ingress's energy meter. Its own process runs no model on a GPU; on a profile that
    places roles on GPUs those belong to other deployments (other requests share them), so
    they are not read from here (never a host-wide sum): the Generator charges each request
    its token share of its own GPU, and an answer's energy is that share, its scope naming
    what is left out. Otherwise the CPU package's counter (RAPL) where readable."""
    if placement_gpus(profile, list(profile.roles)):
        return UnavailableMeter("the GPUs that served a request belong to other deployments; "
                                "not read from the Ingress")
    return meter_for(["cpu"])


# Module functions the Ingress calls are defined above it: Serve pickles the class when it is
# decorated, with the module's names as they are then (one defined below was a NameError in
# the replica, and the app never became ready).
@serve.deployment
@serve.ingress(api)
class Ingress(answers.AnswerRoutes, chat.ChatRoutes, documents.DocumentRoutes,
              writing.WriteRoutes, health.HealthRoutes):
    """The routes of ``serving.routes``, over one ``Pipeline`` whose components are handles to
    the deployments (built on first use), behind the Gate's auth, limits and admission."""

    def __init__(self, config: dict, router, embedder, retriever, light, large, generator):
        self.cfg = AppConfig.model_validate(config)
        self.handles = dict(router=router, embedder=embedder, retriever=retriever, light=light,
                            large=large, generator=generator)
        self.metrics = Metrics()
        self.gate = Gate(self.cfg, self.metrics)  # auth, limits, admission, error replies
        self._pipeline = None
        self._build = threading.Lock()
        self._builder: threading.Thread | None = None
        self._starting = threading.Lock()  # held an instant, never across the build
        self._build_problem: str | None = None
        self._writer: IndexWriter | None = None
        self.writes = 0  # write slots taken (``routes.writing.WriteSlot``)
        self._health_kept: tuple[float, str | None, int] | None = None  # when, problem, docs
        self._health_probe: asyncio.Future | None = None
        api.state.ingress = self

    # the Pipeline over remote components, built on first use (handles block: not in __init__)
    def pipeline(self) -> Pipeline:
        with self._build:
            if self._pipeline is None:
                h = self.handles
                prof = _profile(self.cfg)
                variants = {v: RemoteIndex(h["retriever"], v)
                            for v in wait(h["retriever"].variants.remote())}
                self._pipeline = Pipeline(
                    RemoteIndex(h["retriever"]), RemoteEmbedder(h["embedder"]), prof,
                    variants=variants,
                    light=RemoteReranker(h["light"]) if h["light"] else None,
                    large=RemoteReranker(h["large"]) if h["large"] else None,
                    engines={prof.role("generator").model: RemoteLLM(h["generator"])},
                    meter=ingress_meter(prof), router=RemoteRouter(h["router"]),
                    facts=RemoteFacts(h["retriever"]))
            return self._pipeline

    def _warm(self) -> bool:
        """True once the pipeline is built; else its build is started (once, in a thread of
        its own, so probes never queue behind it)."""
        if self._pipeline is not None:
            return True
        with self._starting:  # not self._build: the event loop must never wait for a build
            if self._builder is None or not self._builder.is_alive():
                self._builder = threading.Thread(target=self._try_build, daemon=True)
                self._builder.start()
        return False

    def _try_build(self) -> None:
        try:
            self.pipeline()
            self._build_problem = None
        except Exception as exc:
            self._build_problem = f"connecting to the deployments failed: {incident(exc)}"


def _serve_host() -> str | None:
    """The address Serve's proxies listen on, when Serve is running (None: no Ray, nothing
    served yet). One that cannot be read is not taken for loopback: a service whose address
    is unknown needs a token as one listening beyond this machine does."""
    import ray

    if not ray.is_initialized():
        return None
    try:
        from ray.serve.context import _get_global_client

        return _get_global_client().http_config.host
    except Exception:
        return "an address Serve did not say"


def build_app(args: dict | AppConfig | None = None) -> serve.Application:
    """The whole service as one Serve application, from a config (the ``args`` of
    ``deploy/*.yaml``). Placement, replicas and limits of each deployment come from
    ``deployments:``; deployments the profile does not use are left out."""
    cfg = args if isinstance(args, AppConfig) else AppConfig.model_validate(args or {})
    check_auth(cfg, _serve_host())
    conf = cfg.model_dump(mode="json")
    prof = _profile(cfg)
    embedder = Embedder.options(**cfg.options("Embedder", prof)).bind(conf)
    retriever = Retriever.options(**cfg.options("Retriever")).bind(conf)
    generator = Generator.options(**cfg.options("Generator", prof)).bind(conf)
    light = large = None
    if "light_reranker" in prof.roles:
        light = Reranker.options(name="LightReranker", **cfg.options("LightReranker", prof)).bind(
            conf, "light_reranker")
    if prof.pipeline.large_rerank and "large_reranker" in prof.roles:
        large = Reranker.options(name="LargeReranker", **cfg.options("LargeReranker", prof)).bind(
            conf, "large_reranker")
    shares_llm = prof.role("router").model == prof.role("generator").model
    router = Router.options(**cfg.options("Router", prof)).bind(conf, embedder,
                                                          generator if shares_llm else None)
    # room above the admission limit for /healthz, /metrics, refused bodies and the 503s
    # themselves; past it Serve's own bounded queue answers 503 rather than letting requests
    # wait unseen. Serve's router counts a replica's requests from a report that lags a burst,
    # so the room is twice what a burst of refusals (the hardening probes send 30) needs.
    room = cfg.limits.max_in_flight + 32
    ingress = {"max_ongoing_requests": room, "max_queued_requests": room} | cfg.options("Ingress")
    return Ingress.options(**ingress).bind(conf, router, embedder, retriever, light, large,
                                           generator)
