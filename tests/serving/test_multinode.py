"""finrag on a real multi-node Ray cluster on this machine (a head and a worker raylet, each
with a resource of its own): the ingest's work placed on both nodes, `finrag batch` losing a
worker node mid-run, and the Serve app with the Retriever and the Generator on different
nodes, answering over HTTP while the Generator's node is lost and comes back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from finrag.serving.server import get_json
from finrag.benchmarks.ray_cluster import HEAD, WORKER, LocalCluster
from tests.conftest import need_weights
from tests.served_app import ask, serve_app, start_load

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "multinode-token-4b1c2e"
DEADLINE_S = 25


@pytest.fixture(scope="module")
def cluster():
    need_weights("tiny")  # the ingest and the served app below run the tiny profile
    c = LocalCluster()
    try:
        yield c
    finally:
        c.shutdown()


def _cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, "-m", "finrag.serving.cli", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=timeout)


def test_ingest_runs_its_workers_on_both_nodes(cluster, demo_corpus, tmp_path):
    pdfs = sorted(Path(demo_corpus.out_dir).glob("*.pdf"))[:4]
    done = _cli("ingest", *map(str, pdfs), "--metadata", str(demo_corpus.metadata_path),
                "--index", str(tmp_path / "index"), "--profile", "tiny", "--ray",
                "--address", cluster.address, "--workers", "2", "--json", "-q")
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    assert summary["added"] == 4 and summary["failed"] == 0
    assert summary["mode"].startswith("ray-data: 2 parse task(s)")
    # one CPU a node, one CPU a worker: a worker on each node, each with documents
    assert len(summary["ray_nodes"]) == 2 and min(summary["ray_nodes"].values()) >= 1, summary


def _answered(out: Path) -> list[str]:
    if not out.exists():
        return []
    return [json.loads(line)["id"] for line in out.read_text().splitlines()
            if line.strip().endswith("}")]


def test_batch_loses_a_worker_node_and_no_answer_is_lost_or_doubled(
        cluster, demo_index, demo_corpus, tmp_path):
    """Slow: `finrag batch` runs in a subprocess on the two-node cluster, its two workers
    generating answers to ten questions on the tiny profile while a worker node is lost and
    added back, and a second run resumes it if the loss ended the first (about 40 s on two
    cores)."""
    out = tmp_path / "answers.jsonl"
    args = ("batch", str(demo_corpus.questions_path), "--out", str(out), "--index",
            str(demo_index), "--profile", "tiny", "--workers", "2", "--batch-size", "1",
            "--limit", "10", "--address", cluster.address, "--json", "-q")
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    proc = subprocess.Popen([sys.executable, "-m", "finrag.serving.cli", *args], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 400
        while len(_answered(out)) < 2:
            assert proc.poll() is None, proc.stderr.read()[-3000:]
            assert time.monotonic() < deadline, "no answers in 400 s"
            time.sleep(0.5)
        before = len(_answered(out))
        cluster.lose_worker()
        time.sleep(5)
        cluster.add_worker()
        proc.wait(600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert before < 10, "the run ended before the node was lost"
    if proc.returncode != 0:  # the run gave up: run again, it resumes
        again = _cli(*args)
        assert again.returncode == 0, again.stderr[-3000:]
    ids = _answered(out)
    assert len(ids) == 10 and len(set(ids)) == 10, ids  # each question once, none lost


def _replica_nodes(cluster, deployment: str) -> list[str]:
    """The nodes whose raylet started a process of ``deployment``'s replicas."""
    raylets = {name: node.all_processes["raylet"][0].process.pid
               for name, node in (("head", cluster.cluster.head_node),
                                  ("worker", cluster.worker))}
    found = []
    for p in psutil.process_iter(["cmdline"]):
        if " ".join(p.info["cmdline"] or []).startswith(f"ray::ServeReplica:finrag:{deployment}"):
            parents = {q.pid for q in p.parents()}
            found += [name for name, pid in raylets.items() if pid in parents]
    return found


def _replica_node(cluster, deployment: str) -> str:
    """Which node's raylet started the process of ``deployment``'s one replica."""
    found = _replica_nodes(cluster, deployment)
    assert len(found) == 1, (deployment, found)
    return found[0]


def _ask(url: str, question: str) -> tuple[int, dict, float]:
    return ask(url, TOKEN, question, generate=True, timeout=DEADLINE_S + 60)


def test_serve_across_nodes_answers_and_survives_losing_a_node(
        cluster, demo_index, demo_corpus, tmp_path):
    """Slow: the Serve app starts on a two-node Ray cluster, three clients keep asking it for
    generated answers, and the test waits for the lost node to come back and the Generator's
    replica to restart on it and answer again (about 70 s on two cores; two runs of
    the module took about 445 s here, the cause not found)."""
    import shutil

    questions = [json.loads(line)["question"] for line in
                 Path(demo_corpus.questions_path).read_text().splitlines()][:3]
    shutil.copytree(demo_index, tmp_path / "index")
    on = lambda resource: {"num_replicas": 1, "ray_actor_options": {  # noqa: E731
        "num_cpus": 0, "resources": {resource: 0.01}}}
    with serve_app(tmp_path, tmp_path / "index", token=TOKEN, address=cluster.address,
                   limits={"deadline_s": DEADLINE_S, "max_in_flight": 4, "retry_after_s": 2},
                   deployments={"Retriever": on(HEAD), "Generator": on(WORKER)}) as app:
        url = app["url"]
        assert _replica_node(cluster, "Retriever") == "head"
        assert _replica_node(cluster, "Generator") == "worker"
        status, body, _ = _ask(url, questions[0])
        assert status == 200 and body["answer"].strip() and body["retrieved"], body

        # the load runs from before the loss until the node is back and answering (at most
        # 400 s), not for a fixed time
        results, threads, stop = start_load(lambda q: _ask(url, q), questions, 400)
        started = time.monotonic()
        while not any(s == 200 for s, _, _ in results):  # the load is being answered
            assert time.monotonic() - started < 90, results
            time.sleep(0.5)
        answered_before = sum(1 for s, _, _ in results if s == 200)
        cluster.lose_worker()
        lost, seen = time.monotonic(), len(results)
        # the node stays lost until requests have met the loss: a reply that is not a 200, or
        # at most 25 s
        while time.monotonic() - lost < 25 and all(s == 200 for s, _, _ in results[seen:]):
            time.sleep(0.5)
        cluster.add_worker()
        deadline = time.monotonic() + 300  # the Generator's replica starts on the new node
        while _replica_nodes(cluster, "Generator") != ["worker"] or \
                get_json(url + "/healthz", timeout=30)[0] != 200:
            assert time.monotonic() < deadline, "no recovery after the node came back"
            time.sleep(2)
        answered = len(results)
        while len(results) < answered + 2 and time.monotonic() - started < 400:
            time.sleep(0.5)  # the load is answered again
        stop.set()
        for t in threads:
            t.join(DEADLINE_S + 90)
        assert not any(t.is_alive() for t in threads), "a request hung"
        statuses = [s for s, _, _ in results]
        assert answered_before >= 1 and set(statuses) <= {200, 503, 504}, statuses
        assert max(seconds for _, _, seconds in results) < DEADLINE_S + 30
        for status, body, _ in results:
            if status != 200:
                assert body["kind"] in ("unavailable", "overloaded", "deadline"), body

        assert _replica_node(cluster, "Generator") == "worker"
        status, body, _ = _ask(url, questions[1])
        assert status == 200 and body["answer"].strip(), body
