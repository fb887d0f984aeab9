"""The Serve app end to end: `finrag serve` in a subprocess on 127.0.0.1 (real Ray, real tiny
models, the demo index), asked over HTTP. The app is the shared tiny one (tests/conftest.py's
`tiny_app`): after the last test that asks it, it is stopped with SIGTERM and must exit 0 and
leave no Ray process behind (tests/served_app.py: `SharedApp.stop`)."""

import json
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from finrag.serving.server import get_json
from tests.conftest import SHARED, need_shared
from tests.served_app import TINY_RETRY_AFTER_S, TINY_TOKEN

TOKEN = TINY_TOKEN


def _post(url: str, body, token: str | None = TOKEN, raw: bytes | None = None,
          headers: dict | None = None) -> tuple[int, dict, dict]:
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request(url + "/v1/answer", data=data, method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            return r.status, dict(r.headers), json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), json.loads(e.read() or b"{}")


NVDA_FACTS = SHARED / "data" / "sec" / "companyfacts" / "CIK0001045810.json"


@pytest.fixture(scope="module")
def served(tiny_app):
    """The shared tiny app (tests/conftest.py): the demo filings and, when ../shared has
    them, NVIDIA's XBRL facts; one answer at a time."""
    return tiny_app


def test_answers_over_http(served, demo_corpus):
    q = json.loads(Path(demo_corpus.questions_path).read_text().splitlines()[0])
    code, _, a = _post(served["url"], {"question": q["question"], "system": "hdrr"})
    assert code == 200, a
    assert a["answer"].strip() and a["system"] == "hdrr" and a["profile"] == "tiny"
    assert a["routing"]["doc_ids"] == [q["doc_id"]]
    assert {r["doc_id"] for r in a["retrieved"]["context"]} == {q["doc_id"]}
    assert a["citations"] and {c["doc_id"] for c in a["citations"]} == {q["doc_id"]}
    assert a["usage"]["llm_calls"] == 1 and a["usage"]["prompt_tokens"] > 0
    assert a["usage"]["calls"][0]["role"] == "generator"
    for stage in ("route", "embed_query", "search", "rerank_light", "generate", "total"):
        assert a["timings_ms"][stage] >= 0
    assert a["energy"]["source"] in ("nvml", "rapl", "unavailable")
    if a["energy"]["source"] == "unavailable":
        assert a["energy"]["joules"] is None


def test_a_metric_question_is_answered_from_facts_over_http(served):
    need_shared(NVDA_FACTS)
    code, _, a = _post(served["url"], {"question": "What was NVIDIA's revenue in fiscal 2024?"})
    assert code == 200, a
    assert a["route"] == "metric_lookup" and a["usage"]["llm_calls"] == 0
    assert [(f["metric"], f["value"]) for f in a["facts"]] == [("revenue", 60_922_000_000.0)]
    assert a["citations"][0]["url"].startswith("https://www.sec.gov/Archives/edgar/data/1045810/")


def test_auth(served):
    for token in (None, "wrong"):
        code, headers, body = _post(served["url"], {"question": "x"}, token=token)
        assert code == 401 and "bearer" in body["error"].lower()
        assert headers.get("www-authenticate", headers.get("WWW-Authenticate")) == "Bearer"
    assert get_json(served["url"] + "/v1/documents")[0] == 401
    code, docs = get_json(served["url"] + "/v1/documents", token=TOKEN)
    assert code == 200 and docs["count"] == 14 and {"doc_id", "company"} <= set(docs["documents"][0])


@pytest.mark.parametrize("body,raw,status,words", [
    ({"question": "   "}, None, 422, "empty"),
    ({"question": "x" * 2001}, None, 422, "limit of 2000"),
    ({"question": "revenue?", "system": "nope"}, None, 422, "system"),
    ({"system": "hdrr"}, None, 422, "question"),
    ({"question": "revenue?", "colour": "red"}, None, 422, "colour"),
    (None, b"{not json", 422, "json"),
    (None, b'{"question": "' + b"x" * 20000 + b'"}', 413, "limit of 16384 bytes"),
])
def test_bad_input_gets_a_4xx_that_says_why(served, body, raw, status, words):
    code, _, reply = _post(served["url"], body, raw=raw)
    assert code == status, reply
    assert words.lower() in reply["error"].lower()


def test_openapi_and_health(served):
    code, spec = get_json(served["url"] + "/openapi.json")
    assert code == 200 and "/v1/answer" in spec["paths"] and "/healthz" in spec["paths"]
    code, health = get_json(served["url"] + "/healthz", token=TOKEN)
    assert code == 200 and health["documents"] == 14 and health["max_in_flight"] == 1


def test_stream_sends_text_then_the_answer(served, demo_corpus):
    q = json.loads(Path(demo_corpus.questions_path).read_text().splitlines()[2])
    req = urllib.request.Request(served["url"] + "/v1/answer", method="POST",
                                 data=json.dumps({"question": q["question"], "system": "hdrr",
                                                  "stream": True}).encode(),
                                 headers={"Content-Type": "application/json",
                                          "Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(req, timeout=600) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        text = r.read().decode()
    events = [(block.split("\n")[0].removeprefix("event: "),
               json.loads(block.split("\n")[1].removeprefix("data: ")))
              for block in text.strip().split("\n\n")]
    kinds = [k for k, _ in events]
    assert kinds[-1] == "answer" and kinds.count("text") >= 2, kinds
    streamed = "".join(d["text"] for k, d in events if k == "text")
    assert streamed.strip() == events[-1][1]["answer"]


def test_overload_gets_503_with_retry_after_and_nothing_is_lost(served, demo_corpus):
    questions = [json.loads(line)["question"]
                 for line in Path(demo_corpus.questions_path).read_text().splitlines()[:4]]
    replies: list = [None] * len(questions)
    start = threading.Barrier(len(questions))

    def ask(i):
        start.wait()
        replies[i] = _post(served["url"], {"question": questions[i], "system": "cbr"})

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(questions))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    codes = sorted(r[0] for r in replies)  # every request got a reply
    assert set(codes) <= {200, 503} and codes.count(200) >= 1 and codes.count(503) >= 1, codes
    for code, headers, body in replies:
        if code == 503:
            assert headers.get("retry-after", headers.get("Retry-After")) == str(TINY_RETRY_AFTER_S)
            assert "overloaded" in body["error"]
        else:
            assert body["answer"]


def _metric_samples(url: str) -> dict[str, float]:
    text = urllib.request.urlopen(url + "/metrics", timeout=30).read().decode()
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    return samples


def test_metrics_count_requests_stages_and_tokens(served, demo_corpus):
    """Counted from this test's own requests (before/after), whatever ran before it."""
    before = _metric_samples(served["url"])
    q = json.loads(Path(demo_corpus.questions_path).read_text().splitlines()[1])
    code, _, a = _post(served["url"], {"question": q["question"], "system": "hdrr"})
    assert code == 200, a
    for token in (None, "wrong"):
        assert _post(served["url"], {"question": "x"}, token=token)[0] == 401
    after = _metric_samples(served["url"])

    def grew(prefix):
        total = lambda samples: sum(v for k, v in samples.items() if k.startswith(prefix))  # noqa: E731
        return total(after) - total(before)

    assert grew('finrag_requests_total{code="200",endpoint="/v1/answer"}') == 1
    assert grew('finrag_requests_total{code="401"') == 2
    assert grew('finrag_errors_total{kind="unauthorized"}') == 2
    assert grew('finrag_llm_calls_total{role="generator"}') == a["usage"]["llm_calls"] >= 1
    assert grew('finrag_prompt_tokens_total{role="generator"}') == a["usage"]["prompt_tokens"]
    assert grew('finrag_stage_latency_seconds_count{stage="route"}') == 1
    assert grew('finrag_routing_total{status="') == 1


def test_an_engine_shared_by_serve_threads_takes_one_call_at_a_time():
    """The Router deployment's own engine (router model != generator model) is called from
    Serve's threads: the wrapper lets one call in at a time and passes attributes through."""
    import threading
    import time as _time

    from finrag.serving.deployments import OneCallAtATime

    class Engine:
        model_id = "m"

        def __init__(self):
            self.inside, self.most = 0, 0

        def generate_json(self, prompts, schema=None):
            self.inside += 1
            self.most = max(self.most, self.inside)
            _time.sleep(0.02)
            self.inside -= 1
            return [len(p) for p in prompts]

    engine = Engine()
    shared = OneCallAtATime(engine)
    out = []
    threads = [threading.Thread(target=lambda: out.append(shared.generate_json(["ab", "c"])))
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert out == [[2, 1]] * 8
    assert engine.most == 1
    assert shared.model_id == "m"
