import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def finrag(*args, timeout=300):
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, "-m", "serving.cli", *map(str, args)], env=env,
                          cwd=REPO, capture_output=True, text=True, timeout=timeout)


def test_help_reads_well():
    res = finrag("--help")
    assert res.returncode == 0
    for word in ("ingest", "search", "documents", "demo", "route", "ask", "eval", "bench"):
        assert word in res.stdout
    for sub in ("ingest", "search", "documents", "demo", "route", "ask", "eval"):
        res = finrag(sub, "--help")
        assert res.returncode == 0 and "usage: finrag " + sub in res.stdout
    for sub in ("quality", "judge-calibration", "perf", "pareto"):
        res = finrag("bench", sub, "--help")
        assert res.returncode == 0 and f"usage: finrag bench {sub}" in res.stdout


def test_search_cli_scoped_json(demo_index, demo_corpus):
    docs = [p.stem for p in demo_corpus.pdf_paths]
    res = finrag("search", "total revenue", "--index", demo_index, "--doc", docs[0], "-k", "4",
                 "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["scope"] == [docs[0]] and 1 <= len(out["hits"]) <= 4
    assert {h["doc_id"] for h in out["hits"]} == {docs[0]}
    for h in out["hits"]:
        assert h["first_page"] <= h["last_page"] and h["score"] > 0 and h["text"]

    res = finrag("search", "total revenue", "--index", demo_index, "-k", "3")
    assert res.returncode == 0 and res.stdout.count("score=") == 3 and " p" in res.stdout


def test_search_cli_errors(demo_index, tmp_path):
    res = finrag("search", "   ", "--index", demo_index)
    assert res.returncode == 2 and "empty query" in res.stderr
    res = finrag("search", "revenue", "--index", demo_index, "--doc", "NOPE_2020_10K")
    assert res.returncode == 2 and "unknown document 'NOPE_2020_10K'" in res.stderr
    res = finrag("search", "revenue", "--index", tmp_path / "none")
    assert res.returncode == 2 and "no index at" in res.stderr


def test_documents_cli(demo_index, demo_corpus):
    res = finrag("documents", "--index", demo_index, "--json")
    assert res.returncode == 0
    assert len(json.loads(res.stdout)) == len(demo_corpus.pdf_paths)


def test_ask_and_eval_cli(demo_index, demo_corpus, tmp_path):
    q = "What was Lumenfield's net income in fiscal 2024?"
    res = finrag("ask", q, "--index", demo_index, "--profile", "tiny", "--no-generate", "--json")
    assert res.returncode == 0, res.stderr
    a = json.loads(res.stdout)
    assert a["system"] == "hdrr" and a["routing"]["doc_ids"] == ["LUMENFIELD_2024_10K"]
    assert a["routing"]["llm_called"] is False and a["usage"]["llm_calls"] == 0
    assert {r["doc_id"] for r in a["retrieved"]["context"]} == {"LUMENFIELD_2024_10K"}
    assert a["energy"]["source"] in ("nvml", "rapl", "unavailable")

    res = finrag("ask", "  ", "--index", demo_index)
    assert res.returncode == 2 and "empty question" in res.stderr

    out = tmp_path / "rows.jsonl"
    args = ("eval", "retrieval", "--questions", demo_corpus.questions_path, "--systems",
            "cbr,hdrr", "--limit", "4", "--index", demo_index, "--profile", "tiny",
            "--out", out, "--json", "-q")
    res = finrag(*args)
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)["systems"]
    assert summary["hdrr"]["routing_accuracy"] == 1.0
    assert summary["hdrr"]["wrong_doc_share_when_routed"] == 0.0
    assert summary["cbr"]["routing_accuracy"] is None
    assert len(out.read_text().splitlines()) == 8
    # a second run reuses every row it already has
    res = finrag(*args)
    assert res.returncode == 0 and len(out.read_text().splitlines()) == 8
    assert json.loads(res.stdout)["systems"] == summary

    res = finrag("eval", "retrieval", "--questions", demo_corpus.questions_path, "--systems",
                 "cbr,nope", "--index", demo_index)
    assert res.returncode == 2 and "unknown system" in res.stderr
