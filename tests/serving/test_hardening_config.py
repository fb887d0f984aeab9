"""Auth by default, without starting Ray: where a token is required, where it comes from (the
environment, a mounted file), what a token must look like, and `finrag serve` refusing to
listen beyond loopback without one."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from starlette.requests import Request

from finrag.retrieval.systems.run import MAX_ROUTED_DOCUMENTS, QuestionError, check_fan_out
from finrag.retrieval.answer import Routing
from finrag.serving.admission import ApiError, Gate, check_auth, model_name, no_paths
from finrag.serving.config import AppConfig, Auth, is_loopback
from finrag.serving.metrics import Metrics

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def no_token(monkeypatch):
    monkeypatch.delenv("FINRAG_API_TOKEN", raising=False)
    monkeypatch.delenv("FINRAG_API_TOKEN_FILE", raising=False)
    monkeypatch.delenv("FINRAG_TOKENS_FILE", raising=False)
    monkeypatch.delenv("FINRAG_AUDIT_FILE", raising=False)


def _request(headers: dict[str, str], client: str | None = "127.0.0.1") -> Request:
    raw = [(k.lower().encode("latin-1"), v.encode("utf-8")) for k, v in headers.items()]
    scope = {"type": "http", "method": "GET", "path": "/v1/documents", "headers": raw,
             "query_string": b""}
    if client is not None:
        scope["client"] = (client, 50123)
    return Request(scope)


@pytest.mark.parametrize("host,loopback", [
    ("127.0.0.1", True), ("127.8.9.1", True), ("::1", True), ("[::1]", True),
    ("localhost", True), (None, True), ("0.0.0.0", False), ("::", False), ("", False),
    ("10.0.0.5", False), ("example.com", False), ("myhost", False),
    ("127.0.0.1.nip.io", False), ("localhost.example.com", False), ("128.0.0.1", False)])
def test_loopback(host, loopback):
    assert is_loopback(host) is loopback


def test_a_token_is_required_beyond_loopback():
    cfg = AppConfig()
    check_auth(cfg, "127.0.0.1")  # no token, loopback: allowed
    for host in ("0.0.0.0", "10.1.2.3", "::"):
        with pytest.raises(ValueError, match=f"refusing to start: listening on {host}"):
            check_auth(cfg, host)
    required = AppConfig(auth=Auth(required=True))
    with pytest.raises(ValueError, match="FINRAG_API_TOKEN"):
        check_auth(required, "127.0.0.1")
    check_auth(AppConfig(auth=Auth(required=False)), "0.0.0.0")  # said so explicitly


def test_behind_a_proxy_a_token_is_required_even_on_loopback(monkeypatch, tmp_path):
    behind = AppConfig(auth=Auth(behind_proxy=True))
    for host in ("127.0.0.1", None):
        with pytest.raises(ValueError, match="refusing to start: auth.behind_proxy says a "
                                             "reverse proxy"):
            check_auth(behind, host)
    with pytest.raises(ValueError, match="auth.behind_proxy"):  # said open, said proxied
        check_auth(AppConfig(auth=Auth(behind_proxy=True, required=False)), "127.0.0.1")
    monkeypatch.setenv("FINRAG_API_TOKEN", "env-token-123456")
    check_auth(behind, "127.0.0.1")


@pytest.mark.parametrize("headers,client", [
    ({"X-Forwarded-For": "203.0.113.9"}, "127.0.0.1"),
    ({"Forwarded": "for=203.0.113.9;proto=https"}, "127.0.0.1"),
    ({"X-Forwarded-Host": "finrag.bank.example"}, "127.0.0.1"),
    ({"X-Real-IP": "203.0.113.9"}, "127.0.0.1"),
    ({}, "10.0.0.7"),  # a proxy on another machine, or a client past a wide listen address
    ({}, "myhost"),
])
def test_without_a_token_a_request_through_a_proxy_gets_401(headers, client):
    gate = Gate(AppConfig(), Metrics())
    assert gate.authorize(_request({}, "127.0.0.1")) is None  # on loopback: open, as before
    assert gate.authorize(_request({})) is None  # (no client address: a local socket)
    with pytest.raises(ApiError) as err:
        gate.authorize(_request(headers, client))
    assert err.value.status == 401
    assert "no token configured and must not be served through a proxy" in err.value.message
    # auth.required: false says open on purpose; a token configured decides by the token
    assert Gate(AppConfig(auth=Auth(required=False)), Metrics()).authorize(
        _request(headers, client)) is None
    gated = Gate(AppConfig(auth=Auth(bearer_token="single-token-0123")), Metrics())
    assert gated.authorize(_request({**headers, "Authorization": "Bearer single-token-0123"},
                                    client)).name == "api-token"


def test_the_bearer_token_follows_its_file(tmp_path):
    """Rotated, emptied or deleted, the file decides within the re-read interval; only a
    file caught half-written keeps the last good token. Emptied never means open."""
    secret = tmp_path / "token"
    secret.write_text("file-token-abcdef\n")
    gate = Gate(AppConfig(auth=Auth(bearer_token_file=str(secret), bearer_token_reread_s=0.05)),
                Metrics())

    def allowed(token: str | None) -> bool:
        time.sleep(0.06)  # past the re-read interval
        try:
            return gate.authorize(_request({} if token is None else
                                           {"Authorization": f"Bearer {token}"})) is not None
        except ApiError as e:
            assert e.status == 401
            return False

    assert allowed("file-token-abcdef")
    secret.write_text("file-token-rotated\n")
    assert not allowed("file-token-abcdef") and allowed("file-token-rotated")
    secret.write_text("file-to")  # caught half-written (too short): the last good one stays
    assert allowed("file-token-rotated")
    secret.write_text("  \n")
    assert not allowed("file-token-rotated") and not allowed(None)
    secret.write_text("file-token-is-back\n")
    assert allowed("file-token-is-back")
    secret.unlink()
    assert not allowed("file-token-is-back") and not allowed(None)
    secret.write_text("file-tok")  # half-written after a deletion: nothing to keep
    assert not allowed("file-token-is-back")


def test_the_token_from_the_environment_and_from_a_file(monkeypatch, tmp_path):
    monkeypatch.setenv("FINRAG_API_TOKEN", "  env-token-123456 \n")
    assert Auth().token() == "env-token-123456"
    check_auth(AppConfig(), "0.0.0.0")
    secret = tmp_path / "token"
    secret.write_text("file-token-abcdef\n")
    monkeypatch.setenv("FINRAG_API_TOKEN_FILE", str(secret))
    assert Auth().token() == "file-token-abcdef"  # a mounted secret wins over the variable
    assert Auth(bearer_token_file=str(secret)).token() == "file-token-abcdef"
    secret.write_text("")
    with pytest.raises(ValueError, match="empty"):
        Auth().token()
    monkeypatch.setenv("FINRAG_API_TOKEN_FILE", str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="cannot read the bearer token file"):
        Auth().token()


@pytest.mark.parametrize("token", ["short", "tökén-with-umlauts", "has a space inside",
                                   "tab\there-123456"])
def test_a_token_that_no_client_could_send_is_refused(monkeypatch, token):
    monkeypatch.setenv("FINRAG_API_TOKEN", token)
    with pytest.raises(ValueError, match="bearer token"):
        Auth().token()


@pytest.mark.slow
def test_finrag_serve_on_all_interfaces_without_a_token_refuses_before_starting():
    env = {k: v for k, v in os.environ.items()
           if k not in ("FINRAG_API_TOKEN", "FINRAG_API_TOKEN_FILE")}
    result = subprocess.run([sys.executable, "-m", "finrag.serving.cli", "serve", "--host", "0.0.0.0",
                             "--port", "1"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 2, result.stderr[-2000:]
    assert "refusing to start: listening on 0.0.0.0" in result.stderr
    assert "Traceback" not in result.stderr


def test_replies_name_no_local_folder_or_path():
    assert model_name("BAAI/bge-m3") == "BAAI/bge-m3"
    assert model_name("/home/alice/models/qwen2.5-0.5b/") == "qwen2.5-0.5b"
    assert model_name("~/weights/minilm") == "minilm"
    text = no_paths("cannot open /srv/finrag/index-meta/catalog.sqlite: build it with "
                     "`finrag ingest PATHS --variant meta` (see ./docs/x.md)")
    assert "/srv" not in text and "./docs" not in text and "--variant meta" in text


def test_a_question_routed_to_too_many_filings_is_refused():
    check_fan_out(Routing("exact", doc_ids=[f"D{i}" for i in range(MAX_ROUTED_DOCUMENTS)]))
    with pytest.raises(QuestionError, match=f"at most {MAX_ROUTED_DOCUMENTS}"):
        check_fan_out(Routing("exact", doc_ids=[f"D{i}" for i in range(MAX_ROUTED_DOCUMENTS + 1)]))
