"""An identity proxy in front (auth.proxy): its headers name the user and groups, groups map to
collections; trusted only when configured and only with the proxy's shared secret; malformed
headers get 401 (the Gate itself, without Ray)."""

import pytest
from starlette.requests import Request

from finrag.serving.admission import ApiError, Gate, check_auth
from finrag.serving.config import AppConfig
from finrag.serving.metrics import Metrics

SECRET = "proxy-shared-secret-0123"


def _request(headers: dict[str, str]) -> Request:
    raw = [(k.lower().encode("latin-1"), v.encode("utf-8")) for k, v in headers.items()]
    return Request({"type": "http", "method": "GET", "path": "/v1/documents", "headers": raw,
                    "query_string": b""})


def _gate(monkeypatch, proxy: dict | None, token: str | None = "single-token-0123") -> Gate:
    monkeypatch.setenv("FINRAG_PROXY_SECRET", SECRET)
    monkeypatch.delenv("FINRAG_TOKENS_FILE", raising=False)
    monkeypatch.delenv("FINRAG_AUDIT_FILE", raising=False)
    auth = {"bearer_token": token, **({"proxy": proxy} if proxy else {})}
    return Gate(AppConfig.model_validate({"index": "unused", "auth": auth}), Metrics())


PROXY = {"groups": {"desk-a": ["alpha"], "desk-b": ["beta", "public"], "ops": ["*"]}}


def test_the_proxys_groups_become_collections(monkeypatch):
    gate = _gate(monkeypatch, PROXY)
    grant = gate.authorize(_request({"X-Forwarded-User": "ana@bank.example",
                                     "X-Forwarded-Groups": "desk-a, desk-b, unmapped",
                                     "X-Proxy-Secret": SECRET}))
    assert grant.name == "proxy:ana@bank.example"
    assert grant.collections == frozenset({"alpha", "beta", "public"})
    ops = gate.authorize(_request({"X-Forwarded-User": "op", "X-Forwarded-Groups": "ops",
                                   "X-Proxy-Secret": SECRET}))
    assert ops.collections is None
    nobody = gate.authorize(_request({"X-Forwarded-User": "guest", "X-Proxy-Secret": SECRET}))
    assert nobody.collections == frozenset()  # no mapped group: reads nothing
    # without the proxy's headers the bearer token still works
    assert gate.authorize(_request({"Authorization": "Bearer single-token-0123"})).name \
        == "api-token"


@pytest.mark.parametrize("headers", [
    {"X-Forwarded-User": "ana", "X-Forwarded-Groups": "desk-a"},  # no secret
    {"X-Forwarded-User": "ana", "X-Forwarded-Groups": "desk-a", "X-Proxy-Secret": "wrong"},
    {"X-Forwarded-User": "", "X-Forwarded-Groups": "desk-a", "X-Proxy-Secret": SECRET},
    {"X-Forwarded-User": "ana bob", "X-Forwarded-Groups": "desk-a", "X-Proxy-Secret": SECRET},
    {"X-Forwarded-User": "ana", "X-Forwarded-Groups": "desk-a;drop", "X-Proxy-Secret": SECRET},
    {"X-Forwarded-User": "\u00e4na", "X-Forwarded-Groups": "desk-a", "X-Proxy-Secret": SECRET},
])
def test_a_malformed_or_unproven_identity_gets_401(monkeypatch, headers):
    gate = _gate(monkeypatch, PROXY)
    with pytest.raises(ApiError) as err:
        gate.authorize(_request(headers))
    assert err.value.status == 401


def test_without_the_configuration_the_headers_are_ignored(monkeypatch):
    gate = _gate(monkeypatch, None)
    with pytest.raises(ApiError) as err:  # only the bearer token counts
        gate.authorize(_request({"X-Forwarded-User": "ana", "X-Forwarded-Groups": "ops",
                                 "X-Proxy-Secret": SECRET}))
    assert err.value.status == 401


def test_the_proxy_needs_its_secret_to_start(monkeypatch):
    monkeypatch.setenv("FINRAG_PROXY_SECRET", "short")
    cfg = AppConfig.model_validate({"index": "unused", "auth": {"proxy": PROXY}})
    with pytest.raises(ValueError, match="FINRAG_PROXY_SECRET must hold"):
        check_auth(cfg, "127.0.0.1")
