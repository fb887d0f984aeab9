"""Who may read what, over HTTP: the served app with scoped tokens (`finrag token`) on an index
of two collections. A token for `alpha` probes `beta` through every surface that can show a
filing's content; nothing of `beta` may reach it. Revoked, expired, wrong and malformed tokens
get 401, and a token file that others may read stops the service from starting."""

import base64
import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request

import pytest
from conftest import ALPHA, BETA, REPO, secrets_of

from finrag.benchmarks.access_cases import request
from finrag.benchmarks.access_probes import probe_web_page
from finrag.benchmarks.access_probes_http import probe_http
from finrag.serving.server import get_json, post_json
from finrag.serving.tokens import TokenStore
from tests.served_app import serve_app

LEGACY = "legacy-token-all-collections"
PROBES = ["What was Lumenfield Software's total revenue in 2024?",
          "What was LMFD's net income in fiscal 2024?",
          "Which risks did the maker of flow-control equipment describe for 2024?"]


@pytest.fixture(scope="module")
def served(two_collections, two_collections_variants, tmp_path_factory):
    """The app on a copy of the two-collection index with its V-A and V-B variants beside it
    (the Retriever serves them)."""
    work = tmp_path_factory.mktemp("served-access")
    for name in ("index", "index-meta", "index-llmctx"):
        shutil.copytree(two_collections_variants / name, work / name)
    store = TokenStore(work / "tokens.json")
    tokens = {"alpha": store.create("desk-alpha", ["alpha"])[1],
              "beta": store.create("desk-beta", ["beta"])[1],
              "revoked": store.create("gone", ["alpha"])[1],
              "brief": store.create("brief", ["alpha"], expires_in_s=1)[1],
              "uploader": store.create("up-alpha", ["alpha"], ingest=True)[1]}
    store.revoke("gone")
    with serve_app(work, work / "index", token=LEGACY,
                   auth={"tokens_file": str(work / "tokens.json")},
                   limits={"deadline_s": 300}) as app:
        app["tokens"], app["index"] = tokens, work / "index"
        app["secrets"] = secrets_of(two_collections, BETA, ALPHA)
        yield app


def test_a_token_reads_nothing_of_another_collection(served, demo_corpus):
    """The probe suite over HTTP (benchmarks/access_probes.py): answers by each system,
    streamed and OpenAI replies, the document list, another filing's page, refused tokens,
    and writes the tokens may not make. Slow: nineteen answers over HTTP on the tiny profile,
    sixteen by the four systems without generation and three generated (about 45 s on two
    cores, and about 30 s more for the module's fixture to start the app)."""
    tokens = served["tokens"]
    wrong = tokens["alpha"][:-2] + ("AA" if not tokens["alpha"].endswith("AA") else "BB")
    cases = probe_http(served["url"], {"reader": tokens["alpha"], "uploader": tokens["uploader"],
                                       "revoked": tokens["revoked"], "expired": tokens["brief"],
                                       "wrong": wrong}, served["secrets"], demo_corpus)
    assert len(served["secrets"]) > 50 and len(cases) == 32
    assert [(c.surface, c.what, c.status, c.leaks) for c in cases if not c.ok] == []


def test_the_web_page_shows_nothing_of_another_collection(served):
    """In a real browser, with `alpha`'s token: beta's companies asked about through the page
    (its document list loaded too); nothing of beta anywhere on it."""
    from tests.serving.test_clients import _chrome

    browser = _chrome()
    try:
        cases = probe_web_page(served["url"], served["tokens"]["alpha"], served["secrets"],
                               browser)
    finally:
        browser.quit()
    assert len(cases) == 4 and [(c.what, c.leaks) for c in cases if c.leaks] == []


def test_each_token_reads_its_own_and_the_single_token_everything(served):
    url = served["url"]
    status, body = get_json(url + "/v1/documents", token=served["tokens"]["beta"])
    assert status == 200 and [d["doc_id"] for d in body["documents"]] == BETA
    status, body = get_json(url + "/v1/documents", token=LEGACY)
    assert status == 200 and body["count"] == 4
    status, answer = post_json(url + "/v1/answer", {"question": PROBES[0], "generate": False},
                               token=served["tokens"]["beta"])
    assert status == 200 and answer["routing"]["doc_ids"] == [BETA[0]]
    status, health = get_json(url + "/healthz")  # open: ready or not, nothing more
    assert status == 200 and health == {"status": "ok"}


def test_revoked_expired_wrong_and_malformed_tokens_get_401(served):
    url, tokens = served["url"], served["tokens"]
    wrong = tokens["alpha"][:-2] + ("AA" if not tokens["alpha"].endswith("AA") else "BB")
    for token in (tokens["revoked"], tokens["brief"], wrong, "frg_nonsense", "x" * 40):
        status, body = request(url + "/v1/documents", token)
        assert status == 401, (token[:8], body)
    # a header that is not ASCII, and one with no scheme: 401, never a 500
    for header in ("Bearer t\u00f6ken-t\u00f6ken-t\u00f6ken", "frg_only"):
        req = urllib.request.Request(url + "/v1/documents", headers={
            "Authorization": header.encode("utf-8").decode("latin-1")})
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=60)
        assert err.value.code == 401


@pytest.mark.slow
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
    assert len(alpha) >= 23 and all(e["collections"] == ["alpha"] for e in alpha)
    answered = [e for e in alpha if e["path"] in ("/v1/answer", "/v1/chat/completions")]
    assert len(answered) == 23 and all(set(e["routed"]) | set(e["cited"]) <= set(ALPHA)
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


def test_writes_over_http_need_the_right_and_take_effect_at_once(served, demo_corpus):
    """Runs last: it changes the served index. A token without the ingest right cannot upload
    or remove, nor one without the admin right change collections; the uploader's filing is
    read at once by its collection's readers and by nobody else; taking a filing out of a
    collection takes it out of that collection's reach at once."""
    url, tokens = served["url"], served["tokens"]
    new = "LUMENFIELD_2023_10K"
    asked = {"question": "What was Lumenfield Software's total revenue in fiscal 2023?",
             "generate": False}
    upload = {"filename": f"{new}.pdf", "collections": ["alpha"], "content": base64.b64encode(
        (demo_corpus.out_dir / f"{new}.pdf").read_bytes()).decode()}
    refused = [request(url + "/v1/documents", tokens["alpha"], upload),
               request(url + f"/v1/documents/{ALPHA[0]}", tokens["alpha"], method="DELETE"),
               request(url + f"/v1/documents/{ALPHA[0]}/collections", tokens["uploader"],
                    {"add": ["beta"]}, method="PUT"),
               request(url + "/v1/documents", tokens["uploader"], {**upload, "collections": ["beta"]})]
    assert [s for s, _ in refused] == [403] * 4, refused
    status, body = request(url + "/v1/documents", tokens["uploader"], upload)
    assert status == 201, body
    assert json.loads(body)["doc_id"] == new
    for token, sees in ((tokens["alpha"], True), (tokens["beta"], False)):
        status, body = request(url + "/v1/answer", token, asked)
        assert status == 200 and (new in json.loads(body)["routing"]["doc_ids"]) is sees
        listed = json.loads(request(url + "/v1/documents", token)[1])["documents"]
        assert (new in [d["doc_id"] for d in listed]) is sees
    # another collection's filing, to the uploader: as missing as one that does not exist
    gone = [request(url + f"/v1/documents/{d}", tokens["uploader"], method="DELETE")
            for d in (BETA[0], "NO_SUCH_2024_10K")]
    assert gone[0][0] == gone[1][0] == 404
    assert gone[0][1].replace(BETA[0], "X") == gone[1][1].replace("NO_SUCH_2024_10K", "X")
    status, body = request(url + f"/v1/documents/{new}", tokens["uploader"], method="DELETE")
    assert status == 200 and json.loads(body) == {
        "doc_id": new, "removed": True, "variants": {"meta": "in step", "llmctx": "in step"}}
    status, body = request(url + "/v1/answer", tokens["alpha"], asked)
    assert status == 200 and new not in body
    # the operator moves an alpha filing to beta: alpha's readers lose it at once
    status, body = request(url + f"/v1/documents/{ALPHA[1]}/collections", LEGACY,
                        {"add": ["beta"], "remove": ["alpha"]}, method="PUT")
    assert status == 200 and json.loads(body)["collections"] == ["beta"]
    assert request(url + f"/v1/documents/{ALPHA[1]}/pages/1", tokens["alpha"])[0] == 404
    assert request(url + f"/v1/documents/{ALPHA[1]}/pages/1", tokens["beta"])[0] == 200
    log = [json.loads(x) for x in (served["log"].parent / "audit.jsonl").read_text().splitlines()]
    writes = [(e["token"], e["path"], e["status"]) for e in log
              if e["path"] in ("ingest", "remove", "collections")]
    assert ("up-alpha", "ingest", 201) in writes and ("desk-alpha", "ingest", 403) in writes
    assert ("up-alpha", "remove", 200) in writes and ("api-token", "collections", 200) in writes


def test_a_filing_out_of_a_collection_or_deleted_is_out_of_every_variant(served,
                                                                         two_collections):
    """Runs after the writes above, which moved LEAVER from `alpha` to `beta`. Beta's reader
    reads it through the V-A and V-B variants (the control); the operator moves it back to
    `alpha` over HTTP and beta's reader asks every system about it, then deletes it and
    alpha's reader asks every system: nothing of it in any reply, and the variants on disk
    drop it with the index. Slow: fourteen answers over HTTP by six systems on the tiny
    profile, and a move and a delete that rewrite the index and both variants (about 25 s on
    two cores)."""
    from finrag.benchmarks.access_probes import (LEAVER, LEAVER_QUESTION, VARIANT_SYSTEMS,
                                                 asked_over_http, probe_leaving_http)
    from finrag.retrieval.store.index import Index

    url, tokens = served["url"], served["tokens"]
    ask = asked_over_http(url, tokens["beta"])
    for system in ("cbr_meta", "cbr_llmctx"):
        status, body = ask(LEAVER_QUESTION, system)
        assert status == 200 and LEAVER in body, (system, body[:300])
    secrets = {"beta": secrets_of(two_collections, [LEAVER], BETA),
               "alpha": secrets_of(two_collections, [LEAVER], [ALPHA[0]])}
    cases = probe_leaving_http(url, LEGACY, {"alpha": tokens["alpha"], "beta": tokens["beta"]},
                               secrets, holder="beta", other="alpha")
    assert len(cases) == 2 + 2 * len(VARIANT_SYSTEMS)
    assert [(c.what, c.status, c.leaks) for c in cases if not c.ok] == []
    for variant in ("meta", "llmctx"):
        with Index.open(served["index"].with_name(f"index-{variant}")) as index:
            assert index.catalog.document(LEAVER) is None
