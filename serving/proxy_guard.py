"""A guard in front of Serve's HTTP proxy, for the headers the proxy reads before the app.

Serve's proxy reads a few request headers as its own hints: ``x-request-timeout-seconds``
(a per-request timeout, where 0 turns the timeout off), ``x-request-disconnect-disabled``,
``x-request-id``, and its multiplexing and session ids. It decodes them as UTF-8 before any
app code runs, so ``x-request-timeout-seconds: \\xff`` was a plain 500 that the app never saw,
and a well-formed value let any client lift the server's backstop timeout.

The guard is an ASGI middleware the proxy itself runs first, named to Ray by
``RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH`` (``PROXY_CALLBACK``), which ``finrag serve``
sets before it starts Ray and the deploy files set on every Ray node. It drops:

- the timeout and disconnect hints, malformed or not: the service's own deadline
  (``limits.deadline_s``) decides how long an answer may take, never the client;
- the multiplexing and session ids, which finrag does not use;
- an ``x-request-id`` that is not short printable ASCII (the proxy then makes one);
- any header whose name is not ASCII.
"""

from __future__ import annotations

import re

PROXY_CALLBACK = "finrag.serving.proxy_guard:middlewares"
CALLBACK_ENV = "RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH"

# names compared lower-case with "-" read as "_", as the proxy compares some of them
DROPPED = {b"x_request_timeout_seconds", b"x_request_disconnect_disabled",
           b"serve_multiplexed_model_id", b"x_session_id"}
REQUEST_ID = b"x_request_id"
_REQUEST_ID_OK = re.compile(rb"[\x21-\x7e]{1,128}")


def clean_headers(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """The request's headers without the ones the guard drops (see the module's doc)."""
    kept = []
    for name, value in headers:
        if not name.isascii():
            continue
        lower = name.lower().replace(b"-", b"_")
        if lower in DROPPED:
            continue
        if lower == REQUEST_ID and not _REQUEST_ID_OK.fullmatch(value):
            continue
        kept.append((name, value))
    return kept


class HeaderGuard:
    """ASGI middleware: HTTP and websocket requests pass on with ``clean_headers``."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope.get("type") in ("http", "websocket"):
            scope = dict(scope, headers=clean_headers(list(scope.get("headers") or [])))
        await self.app(scope, receive, send)


def middlewares() -> list:
    """What Serve's proxy calls (by ``PROXY_CALLBACK``) for the middlewares it runs first."""
    from starlette.middleware import Middleware

    return [Middleware(HeaderGuard)]
