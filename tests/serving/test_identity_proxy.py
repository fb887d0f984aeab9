"""An identity proxy in front (auth.proxy): its headers name the user and groups, groups map to
collections; trusted only when configured and only with the proxy's shared secret; malformed
headers get 401 (the Gate itself, without Ray)."""

import pytest
from starlette.requests import Request

from finrag.serving.admission import ApiError, Gate, check_auth
from finrag.serving.config import AppConfig
from finrag.serving.metrics import Metrics

SECRET = "proxy-shared-secret-0123"


def _request(headers: dict[str, str] | list[tuple[str, str]]) -> Request:
    """A request with these headers; a list of pairs may repeat one."""
    pairs = headers.items() if isinstance(headers, dict) else headers
    raw = [(k.lower().encode("latin-1"), v.encode("utf-8")) for k, v in pairs]
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
    {"X-Forwarded-User": "ana", "X-Forwarded-Groups": '"desk-a', "X-Proxy-Secret": SECRET},
    {"X-Forwarded-User": "\u00e4na", "X-Forwarded-Groups": "desk-a", "X-Proxy-Secret": SECRET},
])
def test_a_malformed_or_unproven_identity_gets_401(monkeypatch, headers):
    gate = _gate(monkeypatch, PROXY)
    with pytest.raises(ApiError) as err:
        gate.authorize(_request(headers))
    assert err.value.status == 401


@pytest.mark.parametrize("pairs", [
    # a proxy that appends its headers after the client's: the client's came first
    [("X-Forwarded-User", "mallory"), ("X-Forwarded-User", "ana"),
     ("X-Forwarded-Groups", "desk-a"), ("X-Proxy-Secret", SECRET)],
    [("X-Forwarded-User", "ana"), ("X-Forwarded-Groups", "ops"),
     ("X-Forwarded-Groups", "desk-a"), ("X-Proxy-Secret", SECRET)],
    [("X-Forwarded-User", "ana"), ("X-Forwarded-Groups", "desk-a"),
     ("X-Proxy-Secret", SECRET), ("x-proxy-secret", SECRET)],
    [("X-Forwarded-User", "ana"), ("x-forwarded-user", "ana"), ("X-Proxy-Secret", SECRET)],
])
def test_a_repeated_identity_header_gets_401(monkeypatch, pairs):
    gate = _gate(monkeypatch, PROXY)
    with pytest.raises(ApiError) as err:
        gate.authorize(_request(pairs))
    assert err.value.status == 401
    # each of them once is a valid identity
    once = dict((k.lower(), v) for k, v in pairs)
    assert gate.authorize(_request(once)).name.startswith("proxy:")


DN_A = "CN=Desk A,OU=Groups,DC=bank,DC=com"
DIRECTORY = {"groups": {DN_A: ["alpha"], "Desk B Readers": ["beta"], 'say "hi"': ["public"],
                        "ops": ["*"]}}


@pytest.mark.parametrize("separator,groups,expected", [
    (None, f'"{DN_A}", Desk B Readers', {"alpha", "beta"}),
    (None, f'"{DN_A}","say \\"hi\\"" , unmapped', {"alpha", "public"}),
    (None, '"Desk B Readers"', {"beta"}),
    (None, "CN=Desk A, OU=Groups", set()),  # a DN not quoted is pieces no group maps
    (";", f"{DN_A}; Desk B Readers;;", {"alpha", "beta"}),
    (";", f'"{DN_A}";"a;b"', {"alpha"}),
    ("|", f"Desk B Readers|{DN_A}", {"alpha", "beta"}),
    ("|", f'"Desk B Readers|x" | {DN_A}', {"alpha"}),
])
def test_directory_groups_are_read_as_the_proxy_sends_them(monkeypatch, separator, groups,
                                                            expected):
    proxy = DIRECTORY if separator is None else {**DIRECTORY, "groups_separator": separator}
    gate = _gate(monkeypatch, proxy)
    grant = gate.authorize(_request({"X-Forwarded-User": "ana@bank.example",
                                     "X-Forwarded-Groups": groups, "X-Proxy-Secret": SECRET}))
    assert grant.collections == frozenset(expected)


@pytest.mark.parametrize("groups", [
    '"CN=Desk A,OU=Groups',  # a quote not closed
    '"desk-a"x, ops',  # text after the closing quote
    'desk"a',  # a quote inside a bare name
    "desk-a,\x01ops",  # a control character
    "desk-a,ops\x7f",
    "x" * 257,  # one absurdly long name
    ",".join(f"g{i}" for i in range(1025)),  # absurdly many
])
def test_malformed_groups_get_401(monkeypatch, groups):
    gate = _gate(monkeypatch, DIRECTORY)
    with pytest.raises(ApiError) as err:
        gate.authorize(_request({"X-Forwarded-User": "ana", "X-Forwarded-Groups": groups,
                                 "X-Proxy-Secret": SECRET}))
    assert err.value.status == 401


@pytest.mark.parametrize("separator", ["", " ", '"', "\\", "\t", "\u00a7"])
def test_a_separator_that_cannot_split_is_refused_in_the_config(separator):
    with pytest.raises(ValueError, match="groups_separator"):
        AppConfig.model_validate({"auth": {"proxy": {**DIRECTORY,
                                                      "groups_separator": separator}}})


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
