import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def finrag(*args, timeout=300):
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, "-m", "finrag.serving.cli", *map(str, args)], env=env,
                          cwd=REPO, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
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


@pytest.mark.slow
def test_bench_is_registered_through_its_entry_point():
    from importlib.metadata import entry_points

    eps = {ep.name: ep.value for ep in entry_points(group="finrag.commands")}
    assert eps.get("bench") == "finrag.benchmarks.cli:add_parser"
    res = finrag("bench", "--help")
    assert res.returncode == 0, res.stderr
    assert "usage: finrag bench" in res.stdout and "warning" not in res.stderr
    for sub in ("quality", "judge-calibration", "perf", "pareto"):
        assert sub in res.stdout


def test_a_broken_command_entry_point_leaves_the_rest_of_the_cli(monkeypatch, capsys):
    import importlib.metadata

    from finrag.serving.cli import build_parser

    broken = importlib.metadata.EntryPoint(name="broken", value="no_such_module:add_parser",
                                           group="finrag.commands")
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [broken])
    args = build_parser().parse_args(["documents", "--json"])
    assert args.command == "documents"
    err = capsys.readouterr().err
    assert err.count("warning:") == 1
    assert "'broken'" in err and "no_such_module" in err


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          env=dict(os.environ, HF_HUB_OFFLINE="1"), timeout=120)


def test_serving_cli_and_benchmarks_do_not_import_each_other():
    res = _python("import sys, finrag.serving.cli\n"
                  "assert 'finrag.serving' in sys.modules\n"
                  "bad = [m for m in sys.modules if m.startswith('finrag.benchmarks')]\n"
                  "assert not bad, bad")
    assert res.returncode == 0, res.stderr
    res = _python("import argparse, sys\n"
                  "from finrag.benchmarks import cli, perf, quality\n"
                  "cli.add_parser(argparse.ArgumentParser().add_subparsers())\n"
                  "assert 'finrag.serving.cli' not in sys.modules")
    assert res.returncode == 0, res.stderr


def test_no_static_import_between_serving_and_benchmarks():
    """Lazy imports inside functions count too: the packages meet only through entry points."""
    import ast

    def imports(folder: str):
        for path in sorted((REPO / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    yield from ((path.name, a.name) for a in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module:
                    yield from ((path.name, f"{node.module}.{a.name}") for a in node.names)

    found = {folder: list(imports(folder)) for folder in ("serving", "benchmarks")}
    assert sum(m.startswith("finrag.") for f, m in found["benchmarks"]) > 50  # it reads them
    assert [(f, m) for f, m in found["serving"] if m.startswith("finrag.benchmarks")] == []
    assert [(f, m) for f, m in found["benchmarks"] if m.startswith("finrag.serving.cli")] == []


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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
