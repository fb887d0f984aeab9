"""Offline batch scoring: Ray Data actors and the sequential loop, resumable output."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from finrag.serving.batch import finished_ids, read_questions, run_batch

ROOT = Path(__file__).resolve().parents[2]


def _ids(out: Path) -> list[str]:
    return [json.loads(line)["id"] for line in out.read_text().splitlines() if line.strip()]


def test_read_questions_ids_and_errors(tmp_path):
    f = tmp_path / "q.jsonl"
    f.write_text('{"id": "a", "question": "one?"}\n\n{"financebench_id": "fb1", "question": "two?"}\n'
                 '{"question": "three?"}\n{"id": "a", "question": "again?"}\n')
    rows = read_questions(f)
    assert [r["id"] for r in rows[:2]] == ["a", "fb1"] and len(rows) == 3  # repeated id dropped
    assert len(rows[2]["id"]) == 16
    f.write_text('{"id": "a"}\n')
    with pytest.raises(ValueError, match="q.jsonl:1: each line needs"):
        read_questions(f)


def test_finished_ids_drops_a_line_cut_by_a_kill(tmp_path):
    out = tmp_path / "a.jsonl"
    out.write_text('{"id": "x", "answer": "1"}\n{"id": "y", "ans')
    assert finished_ids(out) == {"x"}
    assert out.read_text() == '{"id": "x", "answer": "1"}\n'


@pytest.mark.slow
def test_ray_batch_resumes_without_duplicates(demo_index, demo_corpus, tmp_path):
    import ray

    out = tmp_path / "answers.jsonl"
    kwargs = dict(profile="tiny")
    try:
        first = run_batch(demo_corpus.questions_path, out, index=demo_index, system="hdrr",
                          generate=False, limit=2, batch_size=2, progress=False,
                          pipeline_kwargs=kwargs)
        assert first["answered"] == 2 and first["errors"] == 0 and first["mode"].startswith("ray")
        with open(out, "a") as f:  # what a kill in the middle of a write leaves
            f.write('{"id": "demo-03", "query": "What')
        second = run_batch(demo_corpus.questions_path, out, index=demo_index, system="hdrr",
                           generate=False, limit=5, batch_size=2, progress=False,
                           pipeline_kwargs=kwargs)
    finally:
        ray.shutdown()
    assert second["already_done"] == 2 and second["answered"] == 3
    ids = _ids(out)
    assert sorted(ids) == [f"demo-0{i}" for i in range(1, 6)]  # each once, none lost
    questions = {json.loads(l)["id"]: json.loads(l) for l in
                 Path(demo_corpus.questions_path).read_text().splitlines()}
    for line in out.read_text().splitlines():
        record = json.loads(line)
        assert record["query"] == questions[record["id"]]["question"]
        assert record["routing"]["doc_ids"] == [questions[record["id"]]["doc_id"]]
        assert record["retrieved"]["context"] and record["timings_ms"]["total"] > 0


@pytest.mark.slow
def test_killed_batch_run_resumes(demo_index, demo_corpus, tmp_path):
    """SIGKILL a real `finrag batch` once it has written answers; the re-run answers only
    the rest, and every question ends up exactly once. Slow: two `finrag batch` subprocesses
    each load the tiny profile, and between them answer all twelve questions (about 37 s on
    two cores)."""
    out = tmp_path / "answers.jsonl"
    cmd = [sys.executable, "-m", "finrag.serving.cli", "batch", str(demo_corpus.questions_path),
           "--out", str(out), "--index", str(demo_index), "--profile", "tiny", "--sequential",
           "--no-generate", "-q"]
    env = dict(os.environ, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        if out.exists() and len(_ids(out)) >= 2:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.2)
    proc.wait(60)
    done_before = len(set(_ids(out)))
    assert 2 <= done_before < 12, "the run was not caught in the middle"
    result = subprocess.run(cmd + ["--json"], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads(result.stdout)
    assert summary["already_done"] >= done_before
    assert summary["already_done"] + summary["answered"] == 12 == summary["questions"]
    ids = _ids(out)
    assert len(ids) == len(set(ids)) == 12
    assert summary["llm_calls"] == 0 and summary["energy"]["source"]


@pytest.mark.slow
def test_answer_many_batches_generation(demo_index, demo_corpus):
    from finrag.retrieval.systems.pipelines import Pipeline

    questions = [json.loads(l)["question"]
                 for l in Path(demo_corpus.questions_path).read_text().splitlines()[:2]]
    from finrag.models.energy import CounterMeter

    pipe = Pipeline.load(demo_index, profile="tiny")
    # no energy counter on a CI machine: a real cumulative counter (the monotonic clock, one
    # unit a second) stands in, so the split of a shared generation is always checked
    pipe.meter = CounterMeter(lambda: {"clock": time.monotonic()}, "clock", "monotonic")
    try:
        answers = pipe.answer_many(questions, "cbr")
    finally:
        pipe.close()
    for a, q in zip(answers, questions):
        assert a.query == q and a.answer.strip()
        assert [c.role for c in a.calls] == ["generator"]
        assert a.timings_ms["generate"] > 0
        assert a.timings_ms["total"] >= a.timings_ms["generate"]
        assert "split by token share" in a.energy["scope"] and a.energy["joules"] > 0
    # one engine batch served both: each answer carries that batch's wall time
    assert answers[0].timings_ms["generate"] == answers[1].timings_ms["generate"]


@pytest.mark.slow
def test_batch_benchmark_runs_a_baseline_profile_first_in_the_same_run(demo_index, demo_corpus,
                                                                        tmp_path):
    from finrag.benchmarks import batch_throughput

    out = tmp_path / "bench"
    assert batch_throughput.main(["--index", str(demo_index), "--profile", "tiny",
                                  "--baseline-profile", "tiny", "--questions",
                                  str(demo_corpus.questions_path), "--limit", "2",
                                  "--workers", "1", "--batch-size", "2", "--no-generate",
                                  "--out", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    assert [r["label"].split(",")[0] for r in res["runs"]] == [
        "sequential loop", "sequential loop", "Ray Data"]
    assert "baseline" in res["runs"][0]["label"]
    assert [r["answered"] for r in res["runs"]] == [2, 2, 2]
    assert set(res["speedup_vs_baseline"]) == {"sequential", "ray"}
    base = res["runs"][0]["questions_per_s"]
    assert res["speedup_vs_baseline"]["sequential"] == pytest.approx(
        res["runs"][1]["questions_per_s"] / base)
    assert sorted(_ids(out / "baseline.jsonl")) == ["demo-01", "demo-02"]
    report = (out / "report.md").read_text()
    assert "**Against the baseline profile `tiny`**" in report
    assert (out / "throughput.png").stat().st_size > 5000


def test_batch_benchmark_takes_one_half_of_the_financebench_questions(tmp_path):
    from finrag.benchmarks.batch_throughput import split_questions
    from finrag.benchmarks.splits import split_ids

    records = [{"financebench_id": f"fb-{i}", "question": f"q{i}?", "question_type": t,
                "pdf_present": True} for i, t in enumerate(["a", "a", "b", "b", "b"])]
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    halves = {}
    for half in ("tune", "test"):
        written = split_questions(path, half, tmp_path)
        assert written.name == f"questions_{half}.jsonl"
        halves[half] = [json.loads(line)["financebench_id"]
                        for line in written.read_text().splitlines()]
        assert set(halves[half]) == split_ids(records)[half]
    assert sorted(halves["tune"] + halves["test"]) == sorted(r["financebench_id"] for r in records)
    assert halves["tune"] and halves["test"]
    path.write_text(json.dumps(records[0]) + "\n")  # one question: it falls on one side
    empty = "test" if split_ids(records[:1])["tune"] else "tune"
    with pytest.raises(ValueError, match=f"no {empty} questions"):
        split_questions(path, empty, tmp_path)


@pytest.mark.slow
def test_a_batch_reads_only_its_collections(two_collections, demo_corpus, tmp_path):
    """`finrag batch --collection alpha` on Ray Data: the demo questions about beta's companies
    get nothing of beta (the scope travels to every actor). Slow: a Ray runtime starts in the
    subprocess and its actor loads the tiny profile before answering the twelve demo questions,
    then a second run starts only to be refused (about 53 s on two cores)."""
    from conftest import ALPHA, BETA, secrets_of

    out = tmp_path / "answers.jsonl"
    result = subprocess.run(
        [sys.executable, "-m", "finrag.serving.cli", "batch", str(demo_corpus.questions_path),
         "--out", str(out), "--index", str(two_collections), "--profile", "tiny",
         "--collection", "alpha", "--workers", "1", "--no-generate", "-q", "--json"],
        cwd=ROOT, env=dict(os.environ, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1"),
        capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-2000:]
    text = out.read_text()
    records = [json.loads(line) for line in text.splitlines()]
    assert len(records) == 12
    about_beta = [r for r in records if any(d.split("_")[0].title() in r["query"]
                                            for d in BETA)]
    assert about_beta  # the batch did ask about beta's companies
    for r in records:
        assert set(r["routing"]["doc_ids"]) <= set(ALPHA)
        assert {c["doc_id"] for c in r["retrieved"]["context"]} <= set(ALPHA)
    assert [s for s in secrets_of(two_collections, BETA, ALPHA) if s in text] == []
    bad = subprocess.run(
        [sys.executable, "-m", "finrag.serving.cli", "batch", str(demo_corpus.questions_path),
         "--out", str(tmp_path / "x.jsonl"), "--index", str(two_collections), "--profile",
         "tiny", "--collection", "nope", "--sequential", "--no-generate", "-q"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0 and "unknown collection(s): nope" in bad.stderr
