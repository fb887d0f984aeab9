"""The clients people already use, against the served app: the official ``openai`` SDK on the
OpenAI-compatible endpoints, and the web page in a real headless Chromium."""

import json
import os
import shutil
import urllib.request
from pathlib import Path

import pytest

from finrag.serving.server import get_json
from tests.conftest import missing
from tests.served_app import TINY_TOKEN, serve_app

SCREENSHOT = os.environ.get("FINRAG_SCREENSHOT")  # where to save the page's picture, if set
PROFILE = os.environ.get("FINRAG_CLIENTS_PROFILE", "tiny")  # `cpu` for the picture in docs/serving.md
TOKEN = TINY_TOKEN


if PROFILE == "tiny":
    @pytest.fixture(scope="module")
    def served(tiny_app):
        """The shared tiny app (tests/conftest.py)."""
        return tiny_app
else:
    @pytest.fixture(scope="module")
    def served(demo_index, tmp_path_factory):
        """An app of its own on another profile."""
        work = tmp_path_factory.mktemp("clients")
        shutil.copytree(demo_index, work / "index")
        with serve_app(work, work / "index", token=TOKEN, profile=PROFILE,
                       limits={"max_in_flight": 2, "deadline_s": 600}) as app:
            yield app


@pytest.fixture(scope="module")
def question(demo_corpus):
    rows = [json.loads(line) for line in Path(demo_corpus.questions_path).read_text().splitlines()]
    return rows[0]


@pytest.fixture(scope="module")
def client(served):
    openai = pytest.importorskip("openai")
    return openai.OpenAI(base_url=served["url"] + "/v1", api_key=TOKEN, max_retries=0,
                         timeout=600)


def test_models_lists_the_systems(client):
    ids = [m.id for m in client.models.list()]
    assert {"finrag-hdrr", "finrag-cbr", "finrag-sfr", "finrag-agentic"} <= set(ids)
    assert "finrag-cbr-meta" not in ids  # its index variant is not built for this app


def test_plain_chat_completion_carries_the_answer_record(client, question):
    reply = client.chat.completions.create(
        model="finrag-hdrr",
        messages=[{"role": "system", "content": "You are a helpful analyst."},
                  {"role": "user", "content": "hello"},
                  {"role": "assistant", "content": "Ask me about a filing."},
                  {"role": "user", "content": question["question"]}],
        temperature=0.2)
    assert reply.object == "chat.completion" and reply.model == "finrag-hdrr"
    text = reply.choices[0].message.content
    record = reply.model_extra["finrag"]
    assert text.strip() and record["answer"] == text and reply.choices[0].finish_reason == "stop"
    assert record["query"] == question["question"]  # the last user message is the question
    assert record["routing"]["doc_ids"] == [question["doc_id"]]
    assert record["energy"]["source"] in ("nvml", "rapl", "unavailable")
    calls = record["usage"]["calls"]
    assert reply.usage.prompt_tokens == sum(c["prompt_tokens"] for c in calls)
    assert reply.usage.completion_tokens == sum(c["completion_tokens"] for c in calls)
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens
    assert reply.usage.total_tokens == record["usage"]["prompt_tokens"] + \
        record["usage"]["completion_tokens"]


def test_streamed_chat_completion(client, demo_corpus):
    q = json.loads(Path(demo_corpus.questions_path).read_text().splitlines()[2])
    stream = client.chat.completions.create(
        model="finrag-cbr", stream=True, stream_options={"include_usage": True},
        messages=[{"role": "user", "content": [{"type": "text", "text": q["question"]}]}])
    chunks = list(stream)
    pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    finals = [c for c in chunks if c.choices and c.choices[0].finish_reason == "stop"]
    assert len(pieces) >= 2 and len(finals) == 1
    record = finals[0].model_extra["finrag"]
    assert "".join(pieces).strip() == record["answer"].strip() and record["system"] == "cbr"
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens > 0
    assert chunks[-1].usage.prompt_tokens == record["usage"]["prompt_tokens"]
    assert len({c.id for c in chunks}) == 1


def test_errors_come_in_openai_shape(served, client):
    openai = pytest.importorskip("openai")
    with pytest.raises(openai.NotFoundError) as err:
        client.chat.completions.create(model="finrag-nope",
                                       messages=[{"role": "user", "content": "revenue?"}])
    assert "does not exist" in err.value.message and err.value.code == "not_found"
    with pytest.raises(openai.BadRequestError) as err:
        client.chat.completions.create(model="finrag-hdrr",
                                       messages=[{"role": "system", "content": "no question"}])
    assert "empty" in err.value.message and err.value.type == "invalid_request_error"
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="finrag-hdrr", messages=[])
    wrong = openai.OpenAI(base_url=served["url"] + "/v1", api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as err:
        wrong.chat.completions.create(model="finrag-hdrr",
                                      messages=[{"role": "user", "content": "revenue?"}])
    assert "bearer" in err.value.message.lower()
    # the same metrics as /v1/answer
    text = urllib.request.urlopen(served["url"] + "/metrics").read().decode()
    assert 'finrag_requests_total{code="400",endpoint="/v1/chat/completions"}' in text
    assert 'finrag_requests_total{code="404",endpoint="/v1/chat/completions"}' in text


def test_page_endpoint_highlights_the_passage(served, question):
    code, body = get_json(served["url"] + f"/v1/documents/{question['doc_id']}/pages/"
                          f"{question['evidence_page']}", token=TOKEN)
    assert code == 200 and body["image"].startswith("data:image/png;base64,")
    assert body["page"] == question["evidence_page"] and body["highlighted"] == []
    assert get_json(served["url"] + f"/v1/documents/{question['doc_id']}/pages/999",
                    token=TOKEN)[0] == 404
    assert get_json(served["url"] + "/v1/documents/NOPE_2020_10K/pages/1", token=TOKEN)[0] == 404
    assert get_json(served["url"] + f"/v1/documents/{question['doc_id']}/pages/1")[0] == 401


def _chrome():
    from finrag.benchmarks.browser import NoBrowser, chrome

    try:
        return chrome()
    except NoBrowser as exc:
        missing(f"no browser: {exc}")


def test_web_page_answers_and_opens_the_cited_page(served, question):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    browser = _chrome()
    try:
        browser.get(served["url"] + "/")
        # the page re-renders lists while it loads: an element found a moment ago may be gone
        wait = WebDriverWait(browser, 600, ignored_exceptions=(StaleElementReferenceException,))
        browser.find_element(By.ID, "token").send_keys(TOKEN, Keys.TAB)  # change → systems
        # read in one script: the options are replaced as /v1/models answers
        wait.until(lambda b: "hdrr" in b.execute_script(
            "return [...document.querySelectorAll('#system option')].map(o => o.value)"))
        browser.find_element(By.ID, "question").send_keys(question["question"])
        browser.find_element(By.ID, "ask").click()
        wait.until(EC.text_to_be_present_in_element((By.ID, "status"), "done"))
        assert browser.find_element(By.ID, "answer").text.strip()
        assert question["doc_id"] in browser.find_element(By.ID, "routing").text
        assert "source:" in browser.find_element(By.ID, "cost").text
        evidence = {f"{question['doc_id']} p.{p}" for p in question["evidence_pages"]}
        cited = [c for c in browser.find_elements(By.CSS_SELECTOR, "button.citation")
                 if c.text.split(" ")[0] + " " + c.text.split(" ")[1] in evidence]
        assert cited, [c.text for c in browser.find_elements(By.CSS_SELECTOR, "button.citation")]
        cited[0].click()
        wait.until(lambda b: b.execute_script(
            "const i = document.getElementById('page-image');"
            "return i.style.display === 'block' && i.complete && i.naturalWidth > 0;"))
        highlighted = browser.find_element(By.ID, "page-highlighted").text
        assert question["answer"].split()[0].lstrip("$") in highlighted, highlighted
        if SCREENSHOT:
            browser.save_screenshot(SCREENSHOT)
        browser.find_element(By.ID, "tab-documents").click()
        wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#documents tr")) == 15)
        browser.find_element(By.ID, "documents-filter").send_keys("lumenfield")

        def filtered(b):  # the rows' texts read in one script: the filter re-renders them
            texts = b.execute_script(
                "return [...document.querySelectorAll('#documents tr')].map(r => r.innerText)")
            return texts if 1 < len(texts) < 15 else None

        rows = wait.until(filtered)
        assert all("LUMENFIELD" in r.upper() for r in rows[1:]), rows
    finally:
        browser.quit()
