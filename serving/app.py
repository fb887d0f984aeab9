"""The HTTP service: a FastAPI Ingress over the deployments, composed by ``build_app``.

    POST /v1/answer     {"question", "system", "generate", "stream"} → the Answer record
                        (``stream``: server-sent events ``text``… then ``answer``)
    GET  /v1/documents  the filings in the index
    GET  /healthz       ready when every deployment answers
    GET  /metrics       Prometheus text
    GET  /docs, /openapi.json

The Ingress runs the same ``Pipeline`` as the CLI, in a worker thread per request, with its
components replaced by deployment handles (``serving.remote``). It admits at most
``limits.max_in_flight`` answers at once; one more gets 503 with Retry-After at once, so a
client never waits on a hidden queue. An admitted request always gets a reply: the Answer, a
4xx/5xx naming the problem, or 504 past ``limits.deadline_s``.
"""


import asyncio
import hmac
import json
import logging
import math
import statistics
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel, ConfigDict, Field
from ray import serve

from retrieval.systems.pipelines import SYSTEMS, QuestionError
from serving.config import AppConfig
from serving.deployments import Embedder, Generator, Reranker, Retriever, Router, _profile
from serving.metrics import Metrics

log = logging.getLogger("finrag.serve")

api = FastAPI(title="finrag", version="1",
              description="Answers questions over SEC filings with document-routed retrieval. "
                          "Every answer carries its citations, routing, tokens, LLM calls, "
                          "per-stage latency and energy (with its source).")


class AnswerRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(..., description="The question, in plain words")
    system: Literal[SYSTEMS] = Field("hdrr", description="Which system answers")
    generate: bool = Field(True, description="False: stop after retrieval (no answer text)")
    stream: bool = Field(False, description="Server-sent events: the text as it is written, "
                                            "then the Answer record")


class ApiError(Exception):
    def __init__(self, status: int, kind: str, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status, self.kind, self.message, self.headers = status, kind, message, headers


def _ingress(request: Request):
    # Serve runs the app object the Ingress was built with; module functions may see a copy
    return getattr(request.app.state, "ingress", None)


def _error(request: Request, status: int, kind: str, message: str,
           headers: dict | None = None) -> JSONResponse:
    ingress = _ingress(request)
    if ingress is not None:
        ingress.metrics.errors.labels(kind).inc()
    return JSONResponse({"error": message, "kind": kind}, status_code=status, headers=headers)


@api.exception_handler(ApiError)
async def _api_error(request: Request, exc: ApiError):
    return _error(request, exc.status, exc.kind, exc.message, exc.headers)


@api.exception_handler(RequestValidationError)
async def _invalid(request: Request, exc: RequestValidationError):
    problems = []
    for e in exc.errors():
        where = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body"
        problems.append(f"{where}: {e.get('msg')}")
    return _error(request, 422, "bad_request", "; ".join(problems) or "invalid request")


_ENDPOINTS = {"/v1/answer", "/v1/documents", "/healthz", "/metrics", "/docs", "/openapi.json"}


@api.middleware("http")
async def _limits_and_counts(request: Request, call_next):
    ingress = _ingress(request)
    endpoint = request.url.path if request.url.path in _ENDPOINTS else "other"
    if ingress is not None and request.method == "POST":
        limit = ingress.cfg.limits.max_body_bytes
        length = request.headers.get("content-length")
        if length is None:
            response = _error(request, 411, "bad_request", "a Content-Length header is required")
        elif not length.isdigit() or int(length) > limit:
            response = _error(request, 413, "too_large",
                              f"request body of {length} bytes is over the limit of {limit} bytes")
        else:
            response = await call_next(request)
    else:
        response = await call_next(request)
    if ingress is not None:
        ingress.metrics.requests.labels(endpoint, str(response.status_code)).inc()
    return response


@serve.deployment
@serve.ingress(api)
class Ingress:
    def __init__(self, config: dict, router, embedder, retriever, light, large, generator):
        self.cfg = AppConfig.model_validate(config)
        self.handles = dict(router=router, embedder=embedder, retriever=retriever, light=light,
                            large=large, generator=generator)
        self.metrics = Metrics()
        self.pool = ThreadPoolExecutor(self.cfg.limits.max_in_flight + 1,
                                       thread_name_prefix="answer")
        self.in_flight = 0
        self.recent: deque[float] = deque(maxlen=32)  # seconds of recent answers
        self._pipeline = None
        self._build = threading.Lock()
        api.state.ingress = self

    # the Pipeline over remote components, built on first use (handles block: not in __init__)
    def pipeline(self):
        with self._build:
            if self._pipeline is None:
                from models.energy import select_meter
                from retrieval.systems.pipelines import Pipeline
                from serving.remote import (RemoteEmbedder, RemoteFacts, RemoteIndex,
                                            RemoteLLM, RemoteReranker, RemoteRouter)

                h = self.handles
                prof = _profile(self.cfg)
                variants = {v: RemoteIndex(h["retriever"], v)
                            for v in h["retriever"].variants.remote().result()}
                self._pipeline = Pipeline(
                    RemoteIndex(h["retriever"]), RemoteEmbedder(h["embedder"]), prof,
                    variants=variants,
                    light=RemoteReranker(h["light"]) if h["light"] else None,
                    large=RemoteReranker(h["large"]) if h["large"] else None,
                    engines={prof.role("generator").model: RemoteLLM(h["generator"])},
                    meter=select_meter(), router=RemoteRouter(h["router"]),
                    facts=RemoteFacts(h["retriever"]))
            return self._pipeline

    def _authorize(self, request: Request) -> None:
        token = self.cfg.auth.token()
        if token is None:
            return
        given = request.headers.get("authorization", "")
        scheme, _, value = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip(), token):
            raise ApiError(401, "unauthorized", "a valid bearer token is required "
                                                "(Authorization: Bearer <token>)",
                           {"WWW-Authenticate": "Bearer"})

    def _retry_after(self) -> int:
        if self.cfg.limits.retry_after_s:
            return self.cfg.limits.retry_after_s
        return max(1, math.ceil(statistics.median(self.recent))) if self.recent else 5

    def _admit(self, req: AnswerRequest, on_text=None) -> asyncio.Future:
        """Start one answer in a worker thread, or raise 503 when the limit is reached."""
        limit = self.cfg.limits.max_in_flight
        if self.in_flight >= limit:
            wait = self._retry_after()
            raise ApiError(503, "overloaded", f"overloaded: {self.in_flight} answers in "
                           f"progress (limit {limit}); retry after {wait} s",
                           {"Retry-After": str(wait)})
        self.in_flight += 1  # the event loop is single-threaded: no race with the check
        self.metrics.in_flight.set(self.in_flight)

        def work():
            return self.pipeline().answer(req.question, req.system, generate=req.generate,
                                          on_text=on_text)

        future = asyncio.get_running_loop().run_in_executor(self.pool, work)
        future.add_done_callback(self._finished)
        return future

    def _finished(self, future: asyncio.Future) -> None:
        self.in_flight -= 1
        self.metrics.in_flight.set(self.in_flight)
        if future.cancelled() or future.exception() is not None:
            return
        answer = future.result()
        # stages ran in other processes: this process's CPU time would undercount
        answer.energy["cpu_seconds"] = None
        self.recent.append(answer.timings_ms.get("total", 0.0) / 1000)
        self.metrics.answered(answer)

    def _check(self, req: AnswerRequest) -> None:
        limit = self.cfg.limits.max_question_chars
        if not req.question.strip():
            raise ApiError(422, "bad_request", "question: empty; ask a question in plain words")
        if len(req.question) > limit:
            raise ApiError(422, "bad_request", f"question: {len(req.question)} characters is "
                                               f"over the limit of {limit}")

    @staticmethod
    def _failure(exc: BaseException) -> ApiError:
        if isinstance(exc, QuestionError):
            return ApiError(422, "bad_request", f"question: {exc}")
        if isinstance(exc, FileNotFoundError):
            return ApiError(400, "bad_request", str(exc).splitlines()[-1] if str(exc) else
                            "a needed index is not served")
        log.exception("answer failed", exc_info=exc)
        return ApiError(500, "internal", f"internal error: {type(exc).__name__}: "
                                         f"{str(exc).splitlines()[-1] if str(exc) else ''}")

    @api.post("/v1/answer", summary="Answer a question",
              response_description="The Answer record (or an event stream when stream=true)")
    async def answer(self, req: AnswerRequest, request: Request):
        self._authorize(request)
        self._check(req)
        if req.stream:
            return self._stream(req)
        future = self._admit(req)
        try:
            answer = await asyncio.wait_for(asyncio.shield(future), self.cfg.limits.deadline_s)
        except asyncio.TimeoutError:
            raise ApiError(504, "deadline", f"no answer within the deadline of "
                                            f"{self.cfg.limits.deadline_s:g} s") from None
        except Exception as exc:
            raise self._failure(exc) from None
        return JSONResponse(answer.to_dict())

    def _stream(self, req: AnswerRequest) -> StreamingResponse:
        loop = asyncio.get_running_loop()
        pieces: asyncio.Queue = asyncio.Queue()
        future = self._admit(req, on_text=lambda t: loop.call_soon_threadsafe(
            pieces.put_nowait, t))
        future.add_done_callback(lambda _: pieces.put_nowait(None))
        deadline = loop.time() + self.cfg.limits.deadline_s

        def event(kind: str, data: Any) -> str:
            return f"event: {kind}\ndata: {json.dumps(data)}\n\n"

        async def events():
            while True:
                try:
                    piece = await asyncio.wait_for(pieces.get(), max(0.0, deadline - loop.time()))
                except asyncio.TimeoutError:
                    yield event("error", {"error": "no answer within the deadline of "
                                                   f"{self.cfg.limits.deadline_s:g} s",
                                          "kind": "deadline"})
                    return
                if piece is None:
                    break
                yield event("text", {"text": piece})
            try:
                yield event("answer", future.result().to_dict())
            except Exception as exc:
                err = self._failure(exc)
                yield event("error", {"error": err.message, "kind": err.kind})

        return StreamingResponse(events(), media_type="text/event-stream")

    @api.get("/v1/documents", summary="The filings in the index")
    async def documents(self, request: Request):
        self._authorize(request)
        docs = await self.handles["retriever"].documents.remote()
        return {"count": len(docs), "documents": docs}

    @api.get("/healthz", summary="Ready when every deployment answers")
    async def healthz(self, request: Request):
        try:
            pipe = await asyncio.get_running_loop().run_in_executor(self.pool, self.pipeline)
            docs = await self.handles["retriever"].documents.remote()
        except Exception as exc:
            return _error(request, 503, "unavailable", f"not ready: {type(exc).__name__}: {exc}")
        return {"status": "ok", "profile": pipe.profile.name, "documents": len(docs),
                "answers_in_flight": self.in_flight,
                "max_in_flight": self.cfg.limits.max_in_flight,
                "systems": [s for s in SYSTEMS if s not in ("cbr_meta", "cbr_llmctx")
                            or {"cbr_meta": "meta", "cbr_llmctx": "llmctx"}[s] in pipe.variants]}

    @api.get("/metrics", summary="Prometheus metrics")
    async def metrics_text(self):
        return Response(self.metrics.render(), media_type=CONTENT_TYPE_LATEST)


def build_app(args: dict | AppConfig | None = None):
    """The whole service as one Serve application, from a config (the ``args`` of
    ``deploy/*.yaml``). Placement, replicas and limits of each deployment come from
    ``deployments:``; deployments the profile does not use are left out."""
    cfg = args if isinstance(args, AppConfig) else AppConfig.model_validate(args or {})
    if cfg.auth.required and cfg.auth.token() is None:
        raise ValueError("auth.required is set but no bearer token is configured: set "
                         f"${cfg.auth.bearer_token_env or 'FINRAG_API_TOKEN'} (auth.bearer_token_env)")
    conf = cfg.model_dump(mode="json")
    prof = _profile(cfg)
    embedder = Embedder.options(**cfg.options("Embedder")).bind(conf)
    retriever = Retriever.options(**cfg.options("Retriever")).bind(conf)
    generator = Generator.options(**cfg.options("Generator")).bind(conf)
    light = large = None
    if "light_reranker" in prof.roles:
        light = Reranker.options(name="LightReranker", **cfg.options("LightReranker")).bind(
            conf, "light_reranker")
    if prof.pipeline.large_rerank and "large_reranker" in prof.roles:
        large = Reranker.options(name="LargeReranker", **cfg.options("LargeReranker")).bind(
            conf, "large_reranker")
    shares_llm = prof.role("router").model == prof.role("generator").model
    router = Router.options(**cfg.options("Router")).bind(conf, embedder,
                                                          generator if shares_llm else None)
    # room above the admission limit for /healthz, /metrics and the 503s themselves; past it
    # Serve's own bounded queue answers 503 rather than letting requests wait unseen
    ingress = {"max_ongoing_requests": cfg.limits.max_in_flight + 16,
               "max_queued_requests": cfg.limits.max_in_flight + 16} | cfg.options("Ingress")
    return Ingress.options(**ingress).bind(conf, router, embedder, retriever, light, large,
                                           generator)
