"""``GET /healthz`` (ready when every deployment answers in time; with a valid token also what
is served, or why not ready) and ``GET /metrics`` (Prometheus text)."""

import asyncio
import logging
import time
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST

from finrag.serving.admission import first_line, incident
from finrag.serving.routes.replies import error_reply
from finrag.serving.tokens import Grant

log = logging.getLogger("finrag.serve")
router = APIRouter()


async def _awaited(response: Any) -> Any:
    return await response


class HealthRoutes:
    @router.get("/healthz", summary="Ready when every deployment answers in time; with a "
                                    "valid token also what is served, or why not ready",
                response_model=None)
    async def healthz(self, request: Request) -> dict[str, Any] | JSONResponse:
        detail, grant = self._health_detail(request)
        problem, docs = await self._kept_health()
        if problem:
            return error_reply(request, 503, "unavailable",
                               f"not ready: {problem}" if detail else "not ready",
                               {"Retry-After": "5"})
        if not detail:
            return {"status": "ok"}
        # how many documents the index holds is only for a caller that reads them all
        docs = docs if grant is None or grant.collections is None else None
        return {"status": "ok", "profile": self._pipeline.profile.name, "documents": docs,
                "answers_in_flight": self.gate.in_flight,
                "max_in_flight": self.cfg.limits.max_in_flight,
                "systems": self._systems(self._pipeline)}

    def _health_detail(self, request: Request) -> tuple[bool, Grant | None]:
        """Whether /healthz shows its caller the detail, and the caller's grant: a caller
        with a valid token (a wrong one gets 401), or anyone where no auth is configured; a
        caller without credentials gets only ok or not ready."""
        proxy = self.cfg.auth.proxy
        if "authorization" not in request.headers and not (
                proxy is not None and proxy.user_header.lower() in request.headers) \
                and not self.gate._open:
            return False, None
        return True, self.gate.authorize(request)

    async def _kept_health(self) -> tuple[str | None, int]:
        """``_health``, its probe of the deployments reused for ``limits.health_cache_s``;
        one probe runs at a time, and callers meanwhile wait for its result."""
        if not self._warm():
            return self._build_problem or "starting (connecting to the deployments)", 0
        kept = self._health_kept
        if kept is not None and time.monotonic() - kept[0] < self.cfg.limits.health_cache_s:
            return kept[1], kept[2]
        if self._health_probe is None or self._health_probe.done():
            self._health_probe = asyncio.ensure_future(self._probe_and_keep())
        return await asyncio.shield(self._health_probe)

    async def _probe_and_keep(self) -> tuple[str | None, int]:
        problem, docs = await self._health()
        self._health_kept = (time.monotonic(), problem, docs)
        return problem, docs

    async def _health(self) -> tuple[str | None, int]:
        """(what is wrong or None, the documents served). Each deployment must answer a probe
        within ``limits.health_timeout_s``; a generator on one call for longer than an
        answer's deadline, or an answer still running past it, counts as hung."""
        if not self._warm():
            return self._build_problem or "starting (connecting to the deployments)", 0
        h, timeout, deadline = self.handles, self.cfg.limits.health_timeout_s, \
            self.cfg.limits.deadline_s
        probes = {"Retriever": h["retriever"].documents.remote(),
                  "Router": h["router"].stats.remote(),
                  "Embedder": h["embedder"].encode.remote(["ok"]),
                  "Generator": h["generator"].busy_s.remote()}
        for name in ("light", "large"):
            if h[name] is not None:
                probes[f"{name.capitalize()}Reranker"] = h[name].describe.remote()
        names = list(probes)
        results = await asyncio.gather(*(asyncio.wait_for(_awaited(probes[n]), timeout)
                                         for n in names), return_exceptions=True)
        problems = []
        for name, result in zip(names, results):
            if isinstance(result, asyncio.TimeoutError):
                problems.append(f"{name} did not answer within {timeout:g} s")
            elif isinstance(result, BaseException):
                problems.append(f"{name} failed ({incident(result)})")
        busy = results[names.index("Generator")]
        if isinstance(busy, (int, float)) and busy > deadline:
            problems.append(f"Generator has been on one call for {busy:.0f} s, past the "
                            f"answer deadline of {deadline:g} s")
        oldest = self.gate.oldest_start()
        if oldest is not None and time.monotonic() - oldest > deadline + timeout:
            problems.append(f"an answer has run {time.monotonic() - oldest:.0f} s, past the "
                            f"deadline of {deadline:g} s")
        docs = results[0]
        return "; ".join(problems) or None, len(docs) if isinstance(docs, list) else 0

    @router.get("/metrics", summary="Prometheus metrics", response_model=None)
    async def metrics_text(self) -> Response:
        if self._pipeline is not None:  # the generator's engine statistics, when it answers
            try:
                self.metrics.engine(await asyncio.wait_for(
                    _awaited(self.handles["generator"].engine_stats.remote()),
                    self.cfg.limits.health_timeout_s))
            except Exception as exc:  # the metrics page never fails for them
                log.warning("generator engine statistics unavailable: %s", first_line(exc))
        return Response(self.metrics.render(), media_type=CONTENT_TYPE_LATEST)
