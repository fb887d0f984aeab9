"""Who may ask, and how many answers run at once: the bearer token, the checks a request passes
before a handler runs, admission of answers to the worker pool under a deadline, and the
mapping of every failure to a reply a client can act on (never a trace, a path or an
exception's class).

The Ingress (``serving.app``) holds one ``Gate``; the middleware and every endpoint go through
it, so the HTTP API and the OpenAI surface share the same auth, limits and errors.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import math
import re
import statistics
import time
import uuid
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from fastapi import Request
from ray.exceptions import RayActorError
from ray.serve.exceptions import (BackPressureError, DeploymentUnavailableError,
                                  ReplicaUnavailableError)
from starlette.requests import ClientDisconnect

from finrag.retrieval.systems.run import QuestionError, check_question
from finrag.serving.audit import AuditLog
from finrag.serving.config import AppConfig, NoTokenFile, is_loopback
from finrag.serving.metrics import Metrics
from finrag.serving.remote import Budget, CallCancelled, DeadlineExceeded
from finrag.serving.tokens import Grant, TokenError, TokenStore, check_file_mode

log = logging.getLogger("finrag.serve")

# a replica died, is restarting, or is full: a fault of the service the client may retry
_UNAVAILABLE = (RayActorError, BackPressureError, DeploymentUnavailableError,
                ReplicaUnavailableError)


class ApiError(Exception):
    """A reply that is not the answer: HTTP status, a kind clients can switch on, a message."""

    def __init__(self, status: int, kind: str, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status, self.kind, self.message, self.headers = status, kind, message, headers


def incident(exc: BaseException) -> str:
    """Log a failure of the service with a short id; the client gets only the id."""
    number = uuid.uuid4().hex[:12]
    log.error("incident %s: %s", number, type(exc).__name__, exc_info=exc)
    return f"internal error (incident {number}); the service log has the details"


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[-1] if text else ""


_PATH = re.compile(r"(?<![\w.:])(?:~|\.{1,2})?/[^\s'\"`,;)]*")


def no_paths(text: str) -> str:
    """A message without file-system paths (a client has no business knowing them)."""
    return _PATH.sub("<path>", text)


def model_name(model: str) -> str:
    """A model id as a client may see it: a hub id as is, a local folder by its name only."""
    if model.startswith(("/", "~", "./", "../")) or "\\" in model:
        return Path(model.rstrip("/\\")).name or "local-model"
    return model


def public(answer):
    """The Answer without local model folders (model ids of weights loaded from disk)."""
    answer.model_ids = {role: model_name(m) for role, m in answer.model_ids.items()}
    for call in answer.calls:
        call.model_id = model_name(call.model_id)
    return answer


def check_auth(cfg: AppConfig, host: str | None) -> None:
    """Refuse a service others can reach without a bearer token (``auth.required``; by
    default whenever ``host`` is not loopback; always with ``auth.behind_proxy``)."""
    required = cfg.auth.required if cfg.auth.required is not None else not is_loopback(host)
    if cfg.auth.proxy is not None:
        cfg.auth.proxy.secret()  # refuses to start without it
    tokens = cfg.auth.tokens_path()
    if tokens is not None:
        try:
            check_file_mode(tokens)  # a file others may read is refused, naming it
        except TokenError as e:
            raise ValueError(f"refusing to start: {e}") from None
        return
    if cfg.auth.behind_proxy and cfg.auth.proxy is None and cfg.auth.token() is None:
        raise ValueError(
            f"refusing to start: auth.behind_proxy says a reverse proxy forwards to this service, "
            f"and no bearer token, token file or identity proxy is set, so everyone the proxy "
            f"lets in would read every collection. Put a token (12+ characters) in "
            f"${cfg.auth.bearer_token_env or 'FINRAG_API_TOKEN'} or in a file named by "
            f"$FINRAG_API_TOKEN_FILE, or set auth.tokens_file (`finrag token create`)")
    if required and cfg.auth.token() is None:
        where = (f"listening on {host}, " if host and not is_loopback(host) else "")
        raise ValueError(
            f"refusing to start: {where}the service needs a bearer token and none is set. "
            f"Put one (12+ characters) in ${cfg.auth.bearer_token_env or 'FINRAG_API_TOKEN'}, "
            f"or in a file named by $FINRAG_API_TOKEN_FILE (auth.bearer_token_file), or listen "
            f"on 127.0.0.1 only")


# a user or group name an identity proxy may send (its users are e-mail addresses or DNs too)
_PROXY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@=+-]{0,127}$")
# a group as a directory names it: a DN, spaces, punctuation; no control characters
_PROXY_GROUP = re.compile(r"^[\x20-\x7e]{1,256}$")
_PROXY_MAX_GROUPS = 1024
# headers a reverse proxy adds (de facto and RFC 7239); where they are, a proxy is in front
_FORWARDING_HEADERS = ("forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto",
                       "x-real-ip", "via")
_NO_TOKEN_BEHIND_PROXY = (
    "this service has no token configured and must not be served through a proxy without one "
    "(its operator sets $FINRAG_API_TOKEN, $FINRAG_API_TOKEN_FILE, auth.tokens_file or auth.proxy)")


def split_groups(value: str, sep: str) -> list[str] | None:
    """The group names of an identity proxy's groups header as the proxy sends them: split on
    ``sep`` and stripped of spaces, except that a name in double quotes is taken whole,
    separators included (``\\"`` and ``\\\\`` in it stand for ``"`` and ``\\``). None when the
    header is malformed: an unclosed quote, text after a closing quote, a quote in a bare name."""
    names: list[str] = []
    i, n = 0, len(value)
    while True:
        while i < n and value[i] in " \t":
            i += 1
        if i < n and value[i] == '"':
            chars, i = [], i + 1
            while i < n and value[i] != '"':
                if value[i] == "\\" and i + 1 < n:
                    i += 1
                chars.append(value[i])
                i += 1
            if i >= n:
                return None
            name, i = "".join(chars), i + 1
            while i < n and value[i] in " \t":
                i += 1
            if i < n and not value.startswith(sep, i):
                return None
        else:
            end = value.find(sep, i)
            end = n if end < 0 else end
            name, i = value[i:end].strip(" \t"), end
            if '"' in name:
                return None
        if name:
            names.append(name)
        if i >= n:
            return names
        i += len(sep)


def _through_proxy(request: Request) -> bool:
    """Whether a request came through a reverse proxy, as far as it shows: forwarding headers,
    or a client address beyond loopback."""
    client = request.client
    return any(h in request.headers for h in _FORWARDING_HEADERS) or (
        client is not None and not is_loopback(client.host))


# the single bearer token of `auth.bearer_token*`: every collection, as before scoped tokens
ALL_COLLECTIONS = Grant("api-token", None, ingest=True, admin=True)


class Gate:
    """One Ingress's door: the bearer token (re-read as a mounted secret rotates), the request
    checks, and at most ``limits.max_in_flight`` answers at once, each in a worker thread
    under ``limits.deadline_s``. One more gets 503 with Retry-After at once, so a client never
    waits on a hidden queue; an admitted answer always gets a reply."""

    def __init__(self, cfg: AppConfig, metrics: Metrics):
        self.cfg, self.metrics = cfg, metrics
        self.pool = ThreadPoolExecutor(cfg.limits.max_in_flight + 1, thread_name_prefix="answer")
        self.in_flight = 0
        self.recent: deque[float] = deque(maxlen=32)  # seconds of recent answers
        self.running: dict[asyncio.Future, tuple[float, Budget]] = {}  # start, budget
        self._token, self._token_read = cfg.auth.token(), time.monotonic()
        path = cfg.auth.tokens_path()
        self.tokens = TokenStore(path) if path is not None else None
        # decided once: a token file emptied or deleted later refuses its token, never opens
        self._open = self._token is None and self.tokens is None and cfg.auth.proxy is None
        audit = cfg.auth.audit_path()
        self.audit = AuditLog(audit) if audit is not None else None

    def record(self, grant: Grant | None, path: str, status: int, **what) -> None:
        """One audit line (when the audit log is on)."""
        if self.audit is not None:
            self.audit.record(token=None if grant is None else grant.name,
                              collections=None if grant is None or grant.collections is None
                              else sorted(grant.collections), path=path, status=status, **what)

    # who may ask ----------------------------------------------------------------------
    def _bearer(self) -> str | None:
        # re-read now and then: a mounted secret is rotated in place, or emptied or deleted
        # to revoke it
        if time.monotonic() - self._token_read > self.cfg.auth.bearer_token_reread_s:
            try:
                self._token = self.cfg.auth.token()
            except NoTokenFile as exc:
                if self._token is not None:
                    log.warning("the bearer token is refused from now on: %s", exc)
                self._token = None
            except ValueError as exc:  # a half-written secret: keep the last good token
                log.warning("bearer token file not used (the last good token stays): %s", exc)
            self._token_read = time.monotonic()
        return self._token

    def authorize(self, request: Request) -> Grant | None:
        """The caller's grant: what it may read. None when no token is configured (a service
        on loopback only): then everything, as before tokens. The single bearer token reads
        every collection; a scoped token (`finrag token`) the collections it names. An
        unknown, wrong, revoked or expired token gets the same 401. Without any token, a
        request that came through a reverse proxy gets 401 too (unless ``auth.required`` is
        false): loopback-only is what made the open service safe."""
        proxy = self.cfg.auth.proxy
        if proxy is not None and proxy.user_header.lower() in request.headers:
            return self._proxy_grant(request, proxy)
        if self._open:
            if self.cfg.auth.required is not False and _through_proxy(request):
                self._refuse(request, _NO_TOKEN_BEHIND_PROXY)
            return None
        token = self._bearer()
        given = request.headers.get("authorization", "")
        scheme, _, value = given.partition(" ")
        value = value.strip()
        if scheme.lower() == "bearer" and value:
            # as bytes: compare_digest raises on a str with non-ASCII characters
            if token is not None and hmac.compare_digest(
                    value.encode("utf-8", "surrogateescape"), token.encode()):
                return ALL_COLLECTIONS
            if self.tokens is not None and value.isascii():
                try:
                    grant = self.tokens.verify(value)
                except TokenError as exc:  # the file turned unreadable or open: nobody gets in
                    log.error("scoped tokens refused: %s", exc)
                    grant = None
                if grant is not None:
                    return grant
        self._refuse(request)

    def _refuse(self, request: Request, message: str | None = None):
        if self.audit is not None:
            self.audit.record(token="-", collections=[], path=request.url.path, status=401)
        raise ApiError(401, "unauthorized", message or "a valid bearer token is required "
                                                       "(Authorization: Bearer <token>)",
                       {"WWW-Authenticate": "Bearer"})

    def _proxy_grant(self, request: Request, proxy) -> Grant:
        """The grant of the user an identity proxy names: its groups' collections (none of its
        groups mapped: it reads nothing). A repeated identity header is refused: a proxy that
        appends its own after a client's leaves both, and which one is the proxy's cannot be
        told."""
        headers = request.headers
        if any(len(headers.getlist(name)) > 1
               for name in (proxy.user_header, proxy.groups_header, proxy.secret_header)):
            self._refuse(request)
        secret = headers.get(proxy.secret_header.lower(), "")
        user = headers.get(proxy.user_header.lower(), "").strip()
        groups = split_groups(headers.get(proxy.groups_header.lower(), ""),
                              proxy.groups_separator)
        if not hmac.compare_digest(secret.encode("utf-8", "surrogateescape"),
                                   proxy.secret().encode()) \
                or not _PROXY_NAME.match(user) or groups is None \
                or len(groups) > _PROXY_MAX_GROUPS or not all(map(_PROXY_GROUP.match, groups)):
            self._refuse(request)
        collections: set[str] = set()
        for group in groups:
            collections.update(proxy.groups.get(group, []))
        return Grant(f"proxy:{user}", None if "*" in collections else frozenset(collections))

    async def check_request(self, request: Request,
                            before_body: Callable[[Grant | None], None] | None = None
                            ) -> Grant | None:
        """The checks every request passes before a handler runs, cheapest first, all but the
        last on its headers alone (so a caller cannot hold a slot with a slow body): the bearer
        token of /v1/*, the right a write needs (ingest to upload or remove a filing, admin to
        change its collections: 403, unread), ``before_body(grant)`` (the caller's own checks,
        e.g. the route), the body's declared size, then the body itself within
        ``limits.body_timeout_s`` (an upload: ``upload_timeout_s``). Returns the caller's grant
        (None outside /v1 or with no auth configured); raises the ApiError that refuses it."""
        limits = self.cfg.limits
        path, method = request.url.path, request.method
        grant = self.authorize(request) if path.startswith("/v1/") else None
        parts = path.split("/")  # "", "v1", "documents", doc id, "collections"
        right = None
        if parts[1:3] == ["v1", "documents"] and all(parts[3:]):
            right = {("POST", 3): "ingest", ("DELETE", 4): "ingest"}.get((method, len(parts)))
            if method == "PUT" and len(parts) == 5 and parts[4] == "collections":
                right = "admin"
        if right is not None and (grant is None or not getattr(grant, right)):
            action = {"POST": "ingest", "DELETE": "remove", "PUT": "collections"}[method]
            self.record(grant, action, 403, **({"doc": parts[3]} if len(parts) > 3 else {}))
            flag = "--ingest" if right == "ingest" else "--admin"
            raise ApiError(403, "forbidden", f"this needs a token with the {right} right "
                                             f"(`finrag token create NAME --collection C {flag}`)")
        if before_body is not None:
            before_body(grant)
        if method not in ("POST", "PUT", "PATCH"):
            return grant
        length = request.headers.get("content-length")
        if length is None:
            raise ApiError(411, "bad_request", "a Content-Length header is required")
        if not (length.isascii() and length.isdigit()):
            raise ApiError(400, "bad_request", "Content-Length must be a number of bytes")
        upload = request.method == "POST" and request.url.path == "/v1/documents"
        # an upload is a file in base64 inside JSON
        most = limits.max_upload_bytes * 4 // 3 + 65536 if upload else limits.max_body_bytes
        timeout = limits.upload_timeout_s if upload else limits.body_timeout_s
        if int(length) > most:
            raise ApiError(413, "too_large", f"request body of {int(length)} bytes is over the "
                                             f"limit of {most} bytes")
        try:  # read here and cached: the handler gets the same bytes
            body = await asyncio.wait_for(request.body(), timeout)
        except asyncio.TimeoutError:
            raise ApiError(408, "slow_body", f"the request body did not arrive within "
                                             f"{timeout:g} s") from None
        except ClientDisconnect:
            raise ApiError(400, "bad_request", "the client closed the request early") from None
        except Exception as exc:  # Serve's proxy lost the request while its body was coming
            # (a client gone before the replica read it): the body never arrived, logged
            raise ApiError(400, "bad_request", f"the request body could not be read "
                                               f"({incident(exc)})") from None
        if len(body) != int(length):
            raise ApiError(400, "bad_request", "the body is not as long as its Content-Length")
        return grant

    def check_question(self, question: str) -> None:
        limit = self.cfg.limits.max_question_chars
        if not question.strip():
            raise ApiError(422, "bad_request", "question: empty; ask a question in plain words")
        if len(question) > limit:
            raise ApiError(422, "bad_request", f"question: {len(question)} characters is "
                                               f"over the limit of {limit}")
        try:
            check_question(question)
        except QuestionError as e:
            raise ApiError(422, "bad_request", f"question: {e}") from None

    # how many at once -------------------------------------------------------------------
    def retry_after(self) -> int:
        if self.cfg.limits.retry_after_s:
            return self.cfg.limits.retry_after_s
        return max(1, math.ceil(statistics.median(self.recent))) if self.recent else 5

    def admit(self, answer: Callable[[], Any]) -> asyncio.Future:
        """Run ``answer()`` in a worker thread under the deadline, or raise 503 when the
        limit is reached."""
        limit = self.cfg.limits.max_in_flight
        if self.in_flight >= limit:
            wait = self.retry_after()
            raise ApiError(503, "overloaded", f"overloaded: {self.in_flight} answers in "
                           f"progress (limit {limit}); retry after {wait} s",
                           {"Retry-After": str(wait)})
        self.in_flight += 1  # the event loop is single-threaded: no race with the check
        self.metrics.in_flight.set(self.in_flight)
        budget = Budget(self.cfg.limits.deadline_s)

        def work():
            with budget:  # every deployment call waits at most until the deadline
                result = answer()
            if hasattr(result, "deployment_calls"):
                result.deployment_calls = budget.calls
            return result

        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self.pool, work)
        self.running[future] = (time.monotonic(), budget)
        loop.call_later(self.cfg.limits.deadline_s, budget.cancel)
        future.add_done_callback(self._finished)
        return future

    def give_up(self, future: asyncio.Future) -> None:
        """The client left or the deadline passed: cancel the answer's calls in flight."""
        running = self.running.get(future)
        if running is not None and not future.done():
            running[1].cancel()

    async def result(self, future: asyncio.Future):
        """An admitted answer, or the ApiError that says why not (504 past the deadline)."""
        try:
            return await asyncio.wait_for(asyncio.shield(future), self.cfg.limits.deadline_s)
        except asyncio.TimeoutError:
            self.give_up(future)
            raise ApiError(504, "deadline", f"no answer within the deadline of "
                                            f"{self.cfg.limits.deadline_s:g} s") from None
        except asyncio.CancelledError:  # the client went away
            self.give_up(future)
            raise
        except Exception as exc:
            raise self.failure(exc) from None

    def _finished(self, future: asyncio.Future) -> None:
        self.running.pop(future, None)
        self.in_flight -= 1
        self.metrics.in_flight.set(self.in_flight)
        if future.cancelled() or future.exception() is not None:
            return
        answer = future.result()
        # stages ran in other processes: this process's CPU time would undercount
        answer.energy["cpu_seconds"] = None
        self.recent.append(answer.timings_ms.get("total", 0.0) / 1000)
        self.metrics.answered(answer)

    def oldest_start(self) -> float | None:
        """When the longest-running admitted answer started (monotonic), or None."""
        return min((start for start, _ in self.running.values()), default=None)

    # what went wrong, as a reply --------------------------------------------------------
    def failure(self, exc: BaseException) -> ApiError:
        """The reply for an answer that failed: what the client can act on."""
        if isinstance(exc, QuestionError):
            return ApiError(422, "bad_request", f"question: {no_paths(first_line(exc))}")
        if isinstance(exc, FileNotFoundError):  # a system whose index variant is not served
            return ApiError(400, "bad_request", no_paths(first_line(exc)) or
                            "a needed index is not served")
        if isinstance(exc, (DeadlineExceeded, CallCancelled)):
            return ApiError(504, "deadline", "no answer within the deadline of "
                                             f"{self.cfg.limits.deadline_s:g} s")
        if isinstance(exc, _UNAVAILABLE):  # a replica died or is full: Serve brings it back
            wait = self.retry_after()
            return ApiError(503, "unavailable", f"a part of the service is restarting or "
                                                f"busy; retry after {wait} s",
                            {"Retry-After": str(wait)})
        return ApiError(500, "internal", incident(exc))
