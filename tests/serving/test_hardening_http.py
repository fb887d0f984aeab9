"""The served app under hostile requests: malformed bodies, auth variants, unicode, FTS
operators, path-like questions, streams closed early, bursts, slow bodies. No request may get a
500, no reply may carry a traceback, a path or the token, and the service answers afterwards.

Retrieval-only questions (``generate: false``) keep the load on 2 cores small."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
import urllib.request

import pytest

from finrag.serving.server import get_json
from tests.served_app import (TINY_BODY_TIMEOUT_S, TINY_RETRY_AFTER_S, TINY_TOKEN,
                              TINY_UPLOAD_TIMEOUT_S)

TOKEN = TINY_TOKEN
BODY_TIMEOUT_S = TINY_BODY_TIMEOUT_S
UPLOAD_TIMEOUT_S = TINY_UPLOAD_TIMEOUT_S
RETRY_AFTER_S = TINY_RETRY_AFTER_S


@pytest.fixture(scope="module")
def served(tiny_app):
    """The shared tiny app (tests/conftest.py): its limits are this module's, and a scoped
    token that reads everything and may not write is ``served["reader"]``."""
    return tiny_app


def raw_request(addr, head: bytes, body: bytes = b"", *, read: bool = True,
                timeout: float = 300) -> tuple[int, dict, bytes]:
    """One HTTP/1.1 request written byte for byte: (status, headers, body)."""
    with socket.create_connection(addr, timeout=timeout) as s:
        s.sendall(head + b"\r\n" + body)
        data = b""
        while read:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head_part, _, rest = data.partition(b"\r\n\r\n")
    lines = head_part.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
    return status, headers, rest


def post(addr, body: bytes, *, auth: bytes | None = b"Bearer " + TOKEN.encode(),
         content_type: bytes = b"application/json", extra: bytes = b"") -> tuple[int, dict, bytes]:
    head = (b"POST /v1/answer HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            b"Content-Type: " + content_type + b"\r\n"
            + (b"Authorization: " + auth + b"\r\n" if auth is not None else b"")
            + b"Content-Length: " + str(len(body)).encode() + b"\r\n" + extra)
    return raw_request(addr, head, body)


LEAKS = re.compile(r"Traceback|File \"|/work/|/home/|/tmp/|site-packages|Error:|Exception|"
                   + re.escape(TOKEN))


def assert_clean_4xx(status: int, body: bytes) -> dict:
    assert 400 <= status < 500, (status, body[:500])
    text = body.decode("utf-8")  # always valid UTF-8
    assert not LEAKS.search(text), text[:500]
    reply = json.loads(text)
    assert reply.get("error") or reply.get("detail"), reply
    return reply


MALFORMED = [
    b"", b"null", b"[]", b"42", b'"question"', b"{", b"{not json", b'{"question": 5}',
    b'{"question": null}', b'{"question": ["a"]}', b'{"question": {"$ne": 1}}',
    b'{"question": "revenue?", "system": null}', b'{"question": "revenue?", "generate": "maybe"}',
    b'{"question": "revenue?", "stream": 2}', b'{"question": "\xff\xfe bytes"}',
    b'{"question": "\\ud800"}', b'{"question": "a\\udfffb"}', b'{"question": "\\u0000"}',
    b'{"\\ud800": 1, "question": "x"}', b'{"question": "x", "question": "y", "k\\udc80": 1}',
    b'{"question": NaN}', b'{"question": 1e999}', b"[" * 50_000 + b"]" * 50_000,
    b'{"question": ' + b"[" * 5_000 + b"]" * 5_000 + b"}",
    b"\x00" * 64,
]


@pytest.mark.parametrize("body", MALFORMED, ids=range(len(MALFORMED)))
def test_a_malformed_body_gets_a_clean_4xx(served, body):
    status, _, reply = post(served["addr"], body)
    assert_clean_4xx(status, reply)


def test_content_type_length_and_method_abuse(served):
    addr = served["addr"]
    assert_clean_4xx(*post(addr, b'{"question": "x"}', content_type=b"text/plain")[::2])
    assert_clean_4xx(*post(addr, b"question=x", content_type=b"application/x-www-form-urlencoded"
                           )[::2])
    auth = b"Authorization: Bearer " + TOKEN.encode() + b"\r\n"
    base = b"POST /v1/answer HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + auth
    for head, body in [
        (base + b"Content-Length: -1\r\n", b""),
        (base + b"Content-Length: 1e3\r\n", b""),
        (base + b"Content-Length: 99999999999999999999\r\n", b""),
        (base + b"Transfer-Encoding: chunked\r\n", b"5\r\nhello\r\n0\r\n\r\n"),
    ]:
        status, _, reply = raw_request(addr, head, body)
        assert 400 <= status < 500, (head, status, reply[:300])
    for method in (b"PUT", b"DELETE", b"PATCH", b"OPTIONS"):
        status, _, _ = raw_request(addr, method + b" /v1/answer HTTP/1.1\r\nHost: x\r\n"
                                   b"Connection: close\r\n" + auth + b"Content-Length: 0\r\n")
        assert 400 <= status < 500, method


AUTH = [None, b"", b"Bearer", b"Bearer ", b"Basic " + TOKEN.encode(), b"Token " + TOKEN.encode(),
        b"Bearer wrong", b"Bearer " + TOKEN.encode()[:-1], b"Bearer " + TOKEN.encode() + b"x",
        "Bearer tökén".encode("latin-1"), b"Bearer \xff\xfe\xfd", "Bearer ∂".encode(),
        b"Bearer " + b"A" * 8000]


@pytest.mark.parametrize("auth", AUTH, ids=range(len(AUTH)))
def test_every_wrong_bearer_gets_401(served, auth):
    status, headers, reply = post(served["addr"], b'{"question": "revenue?"}', auth=auth)
    assert status == 401, reply[:300]
    assert headers.get("www-authenticate") == "Bearer"
    assert_clean_4xx(status, reply)


def test_auth_comes_before_the_body(served):
    """A stranger announcing a body and never sending it is refused at once: it cannot hold
    one of the Ingress's slots."""
    t0 = time.monotonic()
    status, _, _ = raw_request(served["addr"], b"POST /v1/answer HTTP/1.1\r\nHost: x\r\n"
                               b"Connection: close\r\nContent-Type: application/json\r\n"
                               b"Content-Length: 1000\r\n", b'{"question": "')
    assert status == 401 and time.monotonic() - t0 < BODY_TIMEOUT_S


QUESTIONS = ['revenue" OR "*', "NEAR(revenue profit, 2)", "revenue AND NOT profit*",
             "^revenue", "../../../../etc/passwd", "C:\\Windows\\system32\\config",
             "file:///etc/shadow what revenue", "SELECT * FROM documents; --",
             "'; DROP TABLE chunks; --", "{{7*7}} ${jndi:ldap://x}", "‮revenue‬ 💰🧾",
             "收入是多少？", "ﷺ" * 200, "a" * 2000, "\t\n revenue \n"]


@pytest.mark.parametrize("question", QUESTIONS, ids=range(len(QUESTIONS)))
def test_odd_questions_are_searched_as_plain_words(served, question):
    body = json.dumps({"question": question, "generate": False}).encode()
    status, _, reply = post(served["addr"], body)
    assert status == 200, reply[:500]
    answer = json.loads(reply)
    assert answer["system"] == "hdrr" and answer["query"] == question.strip()
    assert answer["model_ids"] and not any(m.startswith(("/", "~", "."))
                                           for m in answer["model_ids"].values())


def test_control_characters_and_surrogates_get_422(served):
    for question in ("revenue\x00?", "revenue\x1b[31m", "a\ud800"):
        body = json.dumps({"question": question}).encode()  # ASCII escapes: valid JSON
        status, _, reply = post(served["addr"], body)
        assert status == 422, reply[:300]
        assert "not text" in assert_clean_4xx(status, reply)["error"]


def test_a_question_naming_no_company_searches_the_whole_corpus(served):
    body = json.dumps({"question": "Which company wrote down the most inventory?",
                       "generate": False}).encode()
    status, _, reply = post(served["addr"], body)
    assert status == 200, reply[:300]
    answer = json.loads(reply)
    assert answer["routing"]["status"].startswith("fallback")
    assert len({hit["doc_id"] for hit in answer["retrieved"]["fused"]}) > 1


def test_a_system_whose_index_variant_is_not_served_gets_400_without_a_path(served):
    body = json.dumps({"question": "What was the revenue?", "system": "cbr_meta",
                       "generate": False}).encode()
    status, _, reply = post(served["addr"], body)
    assert status == 400 and "'meta' index variant" in assert_clean_4xx(status, reply)["error"]


def test_documents_are_paginated_without_paths_or_hashes(served):
    url = served["url"] + "/v1/documents"
    code, page = get_json(url + "?limit=5", token=TOKEN)
    assert code == 200 and page["count"] == 14 and len(page["documents"]) == 5
    assert page["next_offset"] == 5
    assert not {"source_path", "sha256"} & set(page["documents"][0])
    code, rest = get_json(url + "?offset=10&limit=100", token=TOKEN)
    assert code == 200 and len(rest["documents"]) == 4 and rest["next_offset"] is None
    for bad in ("?limit=0", "?offset=-1", "?limit=abc", "?limit=" + "9" * 40):
        code, reply = get_json(url + bad, token=TOKEN)
        assert code == 422, (bad, reply)


def test_slow_bodies_get_408_and_do_not_starve_the_service(served):
    """More unfinished bodies than the Ingress has slots: each gets 408 within the body
    timeout, and the service answers normally afterwards."""
    head = (b"POST /v1/answer HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            b"Authorization: Bearer " + TOKEN.encode() + b"\r\n"
            b"Content-Type: application/json\r\nContent-Length: 100\r\n")
    results: list = []

    def slow():
        t0 = time.monotonic()
        try:
            status, _, _ = raw_request(served["addr"], head, b'{"question": "re',
                                       timeout=BODY_TIMEOUT_S + 60)
        except OSError as e:  # Serve's own bounded queue may close a connection: not a 5xx
            status = type(e).__name__
        results.append((status, time.monotonic() - t0))

    threads = [threading.Thread(target=slow) for _ in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(results) == 24
    statuses = [s for s, _ in results]
    assert statuses.count(408) >= 10, statuses
    assert all(s in (408, 503) or isinstance(s, str) for s in statuses), statuses
    assert max(t for _, t in results) < BODY_TIMEOUT_S + 45
    assert get_json(served["url"] + "/healthz", timeout=30)[0] == 200


def test_a_stream_closed_early_frees_its_slot(served):
    body = json.dumps({"question": "What was the revenue?", "stream": True}).encode()
    with socket.create_connection(served["addr"], timeout=60) as s:
        s.sendall(b"POST /v1/answer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Authorization: Bearer " + TOKEN.encode() + b"\r\n"
                  b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        assert s.recv(64).startswith(b"HTTP/1.1 200")
    deadline = time.monotonic() + 150  # the answer is given up or ends; the slot comes back
    while True:
        code, health = get_json(served["url"] + "/healthz", timeout=30, token=TOKEN)
        if code == 200 and health["answers_in_flight"] == 0:
            break
        assert time.monotonic() < deadline, health
        time.sleep(1)
    status, _, reply = post(served["addr"], json.dumps({"question": "revenue?",
                                                        "generate": False}).encode())
    assert status == 200, reply[:300]
    # the stream cut short left one audit line saying so, the answer after it one of its own
    answers = [e for e in audit_lines(served) if e["path"] == "/v1/answer"]
    assert [(e["status"], e.get("ended")) for e in answers[-2:]] == [(499, "client_closed"),
                                                                    (200, None)], answers[-3:]


def test_a_burst_gets_503_with_retry_after_and_every_request_a_reply(served):
    body = json.dumps({"question": "What was the revenue?", "generate": False}).encode()
    replies: list = []
    start = threading.Barrier(8)

    def ask():
        start.wait()
        replies.append(post(served["addr"], body))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert len(replies) == 8
    codes = sorted(r[0] for r in replies)
    assert set(codes) <= {200, 503} and 200 in codes and 503 in codes, codes
    for status, headers, reply in replies:
        if status == 503:
            assert headers["retry-after"] == str(RETRY_AFTER_S)
            assert not LEAKS.search(reply.decode())


def test_the_proxy_guard_drops_serve_hints_and_bad_ids():
    from finrag.serving.proxy_guard import clean_headers

    given = [(b"host", b"x"), (b"x-request-timeout-seconds", b"\xff"),
             (b"X-Request-Timeout-Seconds", b"5"), (b"x_request_disconnect_disabled", b"?1"),
             (b"serve-multiplexed-model-id", b"m"), (b"x-session-id", b"s"),
             (b"x-request-id", b"\xff"), (b"x-request-id", b"ok-1"), (b"\xffname", b"v"),
             (b"authorization", b"Bearer \xff")]
    assert clean_headers(given) == [(b"host", b"x"), (b"x-request-id", b"ok-1"),
                                    (b"authorization", b"Bearer \xff")]


# headers Serve's proxy reads before the app (serving/proxy_guard.py drops them in front)
PROXY_HEADERS = [b"X-Request-Timeout-Seconds: \xff", b"x-request-timeout-seconds: 0",
                 b"x-request-timeout-seconds: 0.001", b"x-request-timeout-seconds: nan",
                 b"X-Request-Disconnect-Disabled: \xff\xfe", b"x-request-id: \xff",
                 b"serve_multiplexed_model_id: \xc3\x28", b"serve-multiplexed-model-id: \xff",
                 b"x-session-id: \xff", b"x_session_id: \xff"]


@pytest.mark.parametrize("header", PROXY_HEADERS, ids=range(len(PROXY_HEADERS)))
def test_serve_proxy_headers_never_get_a_500(served, header):
    head = (b"GET /v1/documents HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            b"Authorization: Bearer " + TOKEN.encode() + b"\r\n" + header + b"\r\n")
    status, headers, body = raw_request(served["addr"], head)
    assert status == 200, (status, body[:300])  # the hint is ignored, the request answered
    assert json.loads(body)["documents"]
    if header.startswith(b"x-request-id"):  # a bad id is replaced by one the proxy makes
        assert headers["x-request-id"].isascii() and headers["x-request-id"] != "\xff"
    # the same on the slow path: a timeout hint cannot cut an answer short
    if header == b"x-request-timeout-seconds: 0.001":
        status, _, body = post(served["addr"], json.dumps(
            {"question": "What was Lumenfield Software's total revenue in fiscal 2023?",
             "generate": False}).encode(), extra=header + b"\r\n")
        assert status == 200 and json.loads(body)["routing"]["doc_ids"], body[:300]


def test_every_catalog_stage_runs_over_the_served_stand_ins(served):
    status, _, body = post(served["addr"], json.dumps(
        {"question": "What does Lumenfield Software's FY2023 income statement show for "
                     "operating expenses?", "generate": False}).encode())
    assert status == 200, body[:500]
    a = json.loads(body)
    assert a["routing"]["doc_ids"] == ["LUMENFIELD_2023_10K"] and a["retrieved"]["context"]
    # both page leads ran over the served catalog (its pages and their chunks)
    assert "statements" in a["timings_ms"] and "sections" in a["timings_ms"]
    assert a["retrieved"]["kept"][0]["doc_id"] == "LUMENFIELD_2023_10K"


def test_a_good_request_id_is_kept(served):
    head = (b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            b"x-request-id: trace-42.abc\r\n")
    status, headers, _ = raw_request(served["addr"], head)
    assert status == 200 and headers["x-request-id"] == "trace-42.abc"


def audit_lines(served) -> list[dict]:
    return [json.loads(line) for line in served["audit"].read_text().splitlines()]


def new_audit_lines(served, before: int, path: str, wait_s: float = 10) -> list[dict]:
    """The audit lines of ``path`` written since there were ``before`` lines in all (the line
    of a request may land just after its reply; a second line would show after that)."""
    deadline = time.monotonic() + wait_s
    while len(audit_lines(served)) <= before and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(0.5)
    return [e for e in audit_lines(served)[before:] if e["path"] == path]


def test_every_answer_request_gets_one_audit_line_whatever_its_end(served):
    question = json.dumps({"question": "What was the revenue?", "generate": False}).encode()
    cases = [(question, 200), (json.dumps({"question": "revenue\x00?"}).encode(), 422),
             (b'{"question": 5}', 422), (b'{"question": "' + b"x" * 20_000 + b'"}', 413)]
    for body, expected in cases:
        before = len(audit_lines(served))
        status, _, reply = post(served["addr"], body)
        assert status == expected, reply[:300]
        lines = new_audit_lines(served, before, "/v1/answer")
        assert [(e["status"], e["token"]) for e in lines] == [(expected, "api-token")], lines
    assert lines[0]["collections"] is None
    before = len(audit_lines(served))
    chat = {"model": "finrag-nope", "messages": [{"role": "user", "content": "revenue?"}]}
    status, _, _ = raw_request(served["addr"], (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        b"Authorization: Bearer " + served["reader"].encode() + b"\r\n"
        b"Content-Type: application/json\r\nContent-Length: "
        + str(len(json.dumps(chat))).encode() + b"\r\n"), json.dumps(chat).encode())
    lines = new_audit_lines(served, before, "/v1/chat/completions")
    assert status == 404 and [(e["status"], e["token"]) for e in lines] == [(404, "reader")]


def write_head(method: bytes, path: bytes, token: str, length: int) -> bytes:
    return (method + b" " + path + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            b"Authorization: Bearer " + token.encode() + b"\r\n"
            b"Content-Type: application/json\r\nContent-Length: " + str(length).encode()
            + b"\r\n")


def test_a_write_without_the_right_is_refused_before_its_body(served):
    """A read-only token announcing an 80 MB upload and sending next to nothing gets 403 at
    once: the upload's body size and time are for tokens that may write."""
    for method, path in [(b"POST", b"/v1/documents"), (b"DELETE", b"/v1/documents/DOC_X"),
                         (b"PUT", b"/v1/documents/DOC_X/collections")]:
        t0 = time.monotonic()
        status, _, reply = raw_request(served["addr"], write_head(
            method, path, served["reader"], 80 * 2**20), b'{"filename": "', timeout=60)
        assert status == 403, (method, status, reply[:300])
        assert "right" in assert_clean_4xx(status, reply)["error"]
        assert time.monotonic() - t0 < BODY_TIMEOUT_S, method


def test_writes_at_once_are_bounded(served):
    """max_writes is 1: an upload whose body is still coming holds the one slot, so another
    write gets 503 with Retry-After at once; the slot comes back when that client goes."""
    slow = socket.create_connection(served["addr"], timeout=60)
    try:
        slow.sendall(write_head(b"POST", b"/v1/documents", TOKEN, 10_000) + b"\r\n{")
        time.sleep(1.0)  # the Ingress has the head and waits for the body
        t0 = time.monotonic()
        status, headers, reply = raw_request(served["addr"], write_head(
            b"DELETE", b"/v1/documents/NO_SUCH_FILING", TOKEN, 0))
        assert status == 503 and headers["retry-after"] == str(RETRY_AFTER_S), reply[:300]
        assert time.monotonic() - t0 < BODY_TIMEOUT_S
    finally:
        slow.close()
    deadline = time.monotonic() + UPLOAD_TIMEOUT_S + 10
    while True:
        status, _, reply = raw_request(served["addr"], write_head(
            b"DELETE", b"/v1/documents/NO_SUCH_FILING", TOKEN, 0))
        if status != 503:
            break
        assert time.monotonic() < deadline, "the write slot never came back"
        time.sleep(0.5)
    assert status == 404, reply[:300]


def test_out_of_range_numbers_get_422(served):
    url = served["url"] + "/v1/documents/LUMENFIELD_2023_10K/pages/"
    for tail in ("1?chunk=99999999999999999999", "1?chunk=-1", "0", "99999999999999999999",
                 "1?chunk=9223372036854775808"):
        code, reply = get_json(url + tail, token=TOKEN, timeout=60)
        assert code == 422 and reply["kind"] == "bad_request", (tail, code, reply)
    code, reply = get_json(url + "1?chunk=9223372036854775807", token=TOKEN, timeout=60)
    assert code == 404, reply  # in range: no such passage


def test_bodies_outside_v1_are_refused_unread(served):
    """30 POSTs to /metrics announcing a body they never send each get 405 at once (not the
    body timeout's 408), and /v1/answer answers meanwhile."""
    head = (b"POST /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            b"Content-Type: application/json\r\nContent-Length: 1000000\r\n")
    results: list = []

    def slow():
        t0 = time.monotonic()
        status, headers, _ = raw_request(served["addr"], head, b"{", timeout=60)
        results.append((status, headers.get("allow"), time.monotonic() - t0))

    threads = [threading.Thread(target=slow) for _ in range(30)]
    for t in threads:
        t.start()
    status, _, reply = post(served["addr"], json.dumps({"question": "revenue?",
                                                        "generate": False}).encode())
    for t in threads:
        t.join(60)
    assert status == 200, reply[:300]
    assert len(results) == 30 and {(s, a) for s, a, _ in results} == {(405, "GET")}, results
    assert max(t for _, _, t in results) < BODY_TIMEOUT_S, results
    for head, expected in [(b"PUT /healthz", 405), (b"POST /nowhere", 404), (b"POST /", 405)]:
        t0 = time.monotonic()
        status, _, _ = raw_request(served["addr"], head + b" HTTP/1.1\r\nHost: x\r\n"
                                   b"Connection: close\r\nContent-Length: 5000\r\n", b"{")
        assert status == expected and time.monotonic() - t0 < BODY_TIMEOUT_S, head


def test_health_is_shallow_without_a_token(served):
    code, health = get_json(served["url"] + "/healthz", timeout=30)
    assert code == 200 and health == {"status": "ok"}
    for token in (TOKEN, served["reader"]):  # both read every collection
        code, health = get_json(served["url"] + "/healthz", timeout=30, token=token)
        assert code == 200 and health["documents"] == 14 and "hdrr" in health["systems"]
        assert health["max_in_flight"] == 1
    code, _ = get_json(served["url"] + "/healthz", timeout=30, token="wrong-token-1234567")
    assert code == 401


def test_every_reply_sets_a_content_security_policy_and_no_framing(served):
    import base64
    import hashlib

    page = urllib.request.urlopen(served["url"] + "/", timeout=30)
    text = page.read().decode()
    script = re.search(r"<script>(.*?)</script>", text, re.DOTALL)[1]
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    policy = page.headers["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert f"script-src 'sha256-{digest}';" in policy and "unsafe-inline" not in policy
    assert not re.search(r"<script[^>]*\ssrc=", text)
    for url in ("/", "/healthz", "/v1/documents"):  # the last one a 401
        status, headers, _ = raw_request(served["addr"], b"GET " + url.encode()
                                         + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n")
        assert status == (401 if url.startswith("/v1") else 200)
        assert headers["content-security-policy"] == policy
        assert (headers["x-frame-options"], headers["x-content-type-options"],
                headers["referrer-policy"]) == ("DENY", "nosniff", "no-referrer"), url


def test_the_api_docs_load_nothing_from_elsewhere(served):
    page = urllib.request.urlopen(served["url"] + "/docs", timeout=30)
    text = page.read().decode()
    assert page.headers["Content-Type"].startswith("text/html")
    assert "/v1/answer" in text and "/openapi.json" in text
    assert not re.search(r"<script|<link|https?://", text), text[:500]
    status, _, _ = raw_request(served["addr"], b"GET /redoc HTTP/1.1\r\nHost: x\r\n"
                                               b"Connection: close\r\n")
    assert status == 404


def test_health_is_clean_and_no_request_got_a_500(served):
    code, health = get_json(served["url"] + "/healthz", timeout=30)
    assert code == 200 and health["status"] == "ok"
    text = urllib.request.urlopen(served["url"] + "/metrics", timeout=30).read().decode()
    counts = {}
    for line in text.splitlines():
        m = re.match(r'finrag_requests_total\{code="(\d+)",endpoint="([^"]+)"\} (\S+)', line)
        if m:
            counts[(m[1], m[2])] = counts.get((m[1], m[2]), 0) + float(m[3])
    assert sum(v for (c, _), v in counts.items() if c.startswith("4")) >= 10, counts
    fives = {k: v for k, v in counts.items() if k[0].startswith("5") and k[0] != "503"}
    assert not fives, fives
    log = served["log"].read_text()
    assert TOKEN not in log
