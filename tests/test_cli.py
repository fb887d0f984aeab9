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
    for word in ("ingest", "search", "documents", "demo"):
        assert word in res.stdout
    for sub in ("ingest", "search", "documents", "demo"):
        res = finrag(sub, "--help")
        assert res.returncode == 0 and "usage: finrag " + sub in res.stdout


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
