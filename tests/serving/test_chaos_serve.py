"""Chaos: a Serve replica hangs (SIGSTOP), then one is killed (SIGKILL) while clients keep
asking. Every request gets a reply in bounded time, an answer or a clear 503/504 (never a 500,
never a hang), /healthz names the hung deployment within its probe timeout, and the service
recovers by itself. Retrieval-only questions that name their company (no router LLM call) keep
the load small on 2 cores; the deadline is below Serve's own replica health check (30 s), so a
hung replica is seen by the deadline first."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from finrag.serving.server import get_json
from tests.served_app import ask as served_ask, serve_app, start_load

TOKEN = "chaos-token-5e1d0b"
DEADLINE_S = 25
HEALTH_TIMEOUT_S = 5


@pytest.fixture(scope="module")
def served(demo_index, tmp_path_factory):
    work = tmp_path_factory.mktemp("chaos")
    shutil.copytree(demo_index, work / "index")
    with serve_app(work, work / "index", token=TOKEN,
                   # every /healthz probes afresh: a kept result would hide a replica hung
                   # a moment ago for up to health_cache_s
                   limits={"max_in_flight": 2, "deadline_s": DEADLINE_S,
                           "health_timeout_s": HEALTH_TIMEOUT_S, "retry_after_s": 2,
                           "health_cache_s": 0}) as app:
        yield app


@pytest.fixture(scope="module")
def questions(demo_corpus):
    rows = [json.loads(line) for line in Path(demo_corpus.questions_path).read_text().splitlines()]
    return [r["question"] for r in rows[:3]]


def wait_healthy(url: str, within: float = 300) -> None:
    deadline = time.monotonic() + within
    while get_json(url + "/healthz", timeout=30)[0] != 200:
        assert time.monotonic() < deadline, "no recovery"
        time.sleep(2)


def replica_pids(raydir: str, deployment: str) -> list[int]:
    """The worker processes of this app's replicas of ``deployment`` (named by Ray's process
    title, told apart from other apps by the Ray folder in their environment)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            env = (entry / "environ").read_bytes()
        except OSError:
            continue
        if cmd.startswith(f"ray::ServeReplica:finrag:{deployment}") and \
                f"RAY_TMPDIR={raydir}".encode() in env:
            found.append(int(entry.name))
    return found


def ask(url: str, question: str) -> tuple[int | str, dict, float]:
    return served_ask(url, TOKEN, question, timeout=DEADLINE_S + 60)


def test_a_hung_replica_gives_504_and_healthz_names_it(served, questions):
    pids = replica_pids(served["raydir"], "Retriever")
    assert len(pids) == 1, pids
    assert ask(served["url"], questions[0])[0] == 200
    os.kill(pids[0], signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        code, health = get_json(served["url"] + "/healthz", timeout=60, token=TOKEN)
        assert code == 503 and "Retriever did not answer within" in health["error"], health
        assert time.monotonic() - t0 < HEALTH_TIMEOUT_S + 10
        assert "Traceback" not in health["error"]
        status, body, seconds = ask(served["url"], questions[1])
        assert status == 504 and body["kind"] == "deadline", body
        assert DEADLINE_S - 1 < seconds < DEADLINE_S + 15
    finally:
        os.kill(pids[0], signal.SIGCONT)
    wait_healthy(served["url"])
    assert ask(served["url"], questions[2])[0] == 200


def test_killing_a_replica_under_load_loses_no_request(served, questions):
    """Slow: three clients keep asking the served app while a Retriever replica is killed, and
    the test waits for Serve to start a new one, for /healthz to pass and for the new replica
    to answer (about 17 s on two cores)."""
    pids = replica_pids(served["raydir"], "Retriever")
    assert len(pids) == 1, pids
    # the load runs from before the kill until the app is healthy again (at most 300 s)
    results, threads, stop = start_load(lambda q: ask(served["url"], q), questions, 300)
    started = time.monotonic()
    while not any(s == 200 for s, _, _ in results):  # the load is being answered
        assert time.monotonic() - started < 120, results
        time.sleep(0.2)
    answered_before = sum(1 for s, _, _ in results if s == 200)
    os.kill(pids[0], signal.SIGKILL)
    deadline = time.monotonic() + 120  # Serve starts a new replica while clients keep asking
    while not set(replica_pids(served["raydir"], "Retriever")) - set(pids):
        assert time.monotonic() < deadline, "no new replica in 120 s"
        time.sleep(0.5)
    wait_healthy(served["url"])
    answered = len(results)
    while len(results) < answered + 3 and time.monotonic() - started < 300:
        time.sleep(0.2)  # and some requests are answered by it
    stop.set()
    for t in threads:
        t.join(DEADLINE_S + 90)
    assert not any(t.is_alive() for t in threads), "a request hung"

    statuses = [s for s, _, _ in results]
    assert answered_before >= 1 and set(statuses) <= {200, 503, 504}, statuses
    for status, body, seconds in results:
        assert seconds < DEADLINE_S + 30
        if status != 200:
            assert body["error"] and body["kind"] in ("unavailable", "overloaded", "deadline")
            assert "Traceback" not in body["error"] and "/" not in body["error"]

    new = replica_pids(served["raydir"], "Retriever")
    assert new and new != pids
    status, body, _ = ask(served["url"], questions[0])
    assert status == 200 and body["retrieved"], body
