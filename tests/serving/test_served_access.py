"""Who may read what, over HTTP: the served app with scoped tokens (`finrag token`) on an index
of two collections. A token for `alpha` probes `beta` through every surface that can show a
filing's content; nothing of `beta` may reach it. Revoked, expired, wrong and malformed tokens
get 401, and a token file that others may read stops the service from starting."""

import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request

import pytest
from conftest import ALPHA, BETA, REPO, secrets_of

from finrag.serving.server import get_json, post_json
from finrag.serving.tokens import TokenStore
from tests.served_app import serve_app

LEGACY = "legacy-token-all-collections"
PROBES = ["What was Lumenfield Software's total revenue in 2024?",
          "What was LMFD's net income in fiscal 2024?",
          "Which risks did the maker of flow-control equipment describe for 2024?"]


@pytest.fixture(scope="module")
def served(two_collections, tmp_path_factory):
    work = tmp_path_factory.mktemp("served-access")
    shutil.copytree(two_collections, work / "index")
    store = TokenStore(work / "tokens.json")
    tokens = {"alpha": store.create("desk-alpha", ["alpha"])[1],
              "beta": store.create("desk-beta", ["beta"])[1],
              "revoked": store.create("gone", ["alpha"])[1],
              "brief": store.create("brief", ["alpha"], expires_in_s=1)[1]}
    store.revoke("gone")
    with serve_app(work, work / "index", token=LEGACY,
                   auth={"tokens_file": str(work / "tokens.json")},
                   limits={"deadline_s": 300}) as app:
        app["tokens"] = tokens
        app["secrets"] = secrets_of(two_collections, BETA, ALPHA)
        yield app


def _raw(url: str, token: str | None, body: dict | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(),
                                 method="GET" if body is None else "POST",
                                 headers={"Content-Type": "application/json"})
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_a_token_reads_nothing_of_another_collection(served):
    url, alpha, secrets = served["url"], served["tokens"]["alpha"], served["secrets"]
    assert len(secrets) > 50
    replies = []
    for question in PROBES:
        for system in ("hdrr", "cbr", "sfr", "agentic"):
            replies.append(_raw(url + "/v1/answer", alpha,
                                {"question": question, "system": system, "generate": False}))
    # streamed, generated, and through the OpenAI surface, streamed or not
    replies.append(_raw(url + "/v1/answer", alpha,
                        {"question": PROBES[0], "system": "hdrr", "stream": True}))
    for stream in (False, True):
        replies.append(_raw(url + "/v1/chat/completions", alpha, {
            "model": "finrag-cbr", "stream": stream,
            "messages": [{"role": "user", "content": PROBES[0]}]}))
    replies.append(_raw(url + "/v1/documents?limit=50", alpha))
    for doc in (BETA[0], "NO_SUCH_2024_10K"):
        replies.append(_raw(url + f"/v1/documents/{doc}/pages/1", alpha))
    assert len(replies) == 18
    # (the page replies name the doc id the caller sent: compared below instead)
    leaks = [(i, s) for i, (_, body) in enumerate(replies[:16]) for s in secrets if s in body]
    assert leaks == []
    assert [status for status, _ in replies[:15]] == [200] * 15
    docs = json.loads(replies[15][1])
    assert docs["count"] == 2 and [d["doc_id"] for d in docs["documents"]] == ALPHA
    # a page of a filing it may not read: the very reply of a filing that does not exist
    (s1, forbidden), (s2, missing) = replies[16], replies[17]
    assert s1 == s2 == 404
    assert forbidden.replace(BETA[0], "X") == missing.replace("NO_SUCH_2024_10K", "X")


def test_each_token_reads_its_own_and_the_single_token_everything(served):
    url = served["url"]
    status, body = get_json(url + "/v1/documents", token=served["tokens"]["beta"])
    assert status == 200 and [d["doc_id"] for d in body["documents"]] == BETA
    status, body = get_json(url + "/v1/documents", token=LEGACY)
    assert status == 200 and body["count"] == 4
    status, answer = post_json(url + "/v1/answer", {"question": PROBES[0], "generate": False},
                               token=served["tokens"]["beta"])
    assert status == 200 and answer["routing"]["doc_ids"] == [BETA[0]]
    status, health = get_json(url + "/healthz")  # open: no count of the documents
    assert status == 200 and health["documents"] is None


def test_revoked_expired_wrong_and_malformed_tokens_get_401(served):
    url, tokens = served["url"], served["tokens"]
    wrong = tokens["alpha"][:-2] + ("AA" if not tokens["alpha"].endswith("AA") else "BB")
    for token in (tokens["revoked"], tokens["brief"], wrong, "frg_nonsense", "x" * 40):
        status, body = _raw(url + "/v1/documents", token)
        assert status == 401, (token[:8], body)
    # a header that is not ASCII, and one with no scheme: 401, never a 500
    for header in ("Bearer t\u00f6ken-t\u00f6ken-t\u00f6ken", "frg_only"):
        req = urllib.request.Request(url + "/v1/documents", headers={
            "Authorization": header.encode("utf-8").decode("latin-1")})
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=60)
        assert err.value.code == 401


def test_a_token_file_others_may_read_stops_the_start(tmp_path):
    store = TokenStore(tmp_path / "tokens.json")
    store.create("a", ["alpha"])
    os.chmod(store.path, 0o640)
    res = subprocess.run([sys.executable, "-m", "finrag.serving.cli", "serve", "--index",
                          str(tmp_path / "missing-index"), "--profile", "tiny"], cwd=REPO,
                         env={**os.environ, "FINRAG_TOKENS_FILE": str(store.path)},
                         capture_output=True, text=True, timeout=300)
    assert res.returncode != 0
    assert f"token file {store.path} has mode 0640" in res.stderr, res.stderr[-2000:]


def test_the_audit_log_names_tokens_scopes_and_filings_never_a_token(served):
    """Runs after the probes above: their requests are in the log beside the token file."""
    log = served["log"].parent / "audit.jsonl"
    text = log.read_text()
    assert not [name for name, t in served["tokens"].items() if t in text] and LEGACY not in text
    lines = [json.loads(x) for x in text.splitlines()]
    alpha = [e for e in lines if e["token"] == "desk-alpha"]
    assert len(alpha) >= 15 and all(e["collections"] == ["alpha"] for e in alpha)
    answered = [e for e in alpha if e["path"] in ("/v1/answer", "/v1/chat/completions")]
    assert len(answered) == 15 and all(set(e["routed"]) | set(e["cited"]) <= set(ALPHA)
                                       for e in answered)
    assert any(e["path"] == "page" and e["status"] == 404 and e["doc"] == BETA[0] for e in alpha)
    assert [e for e in lines if e["token"] == "-" and e["status"] == 401]
    res = subprocess.run([sys.executable, "-m", "finrag.serving.cli", "audit", "--file",
                          str(log), "--token", "desk-beta", "--json"], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    beta = [json.loads(x) for x in res.stdout.splitlines()]
    assert beta and {e["token"] for e in beta} == {"desk-beta"}
    assert any(BETA[0] in e["routed"] for e in beta)
