"""The router-JSON side-by-side (``benchmarks.router_eval --engine`` and ``--compare``): the
same questions through transformers + Outlines (here) and vLLM structured outputs (the vLLM
venv, in a subprocess), on the gpu-tiny profile's random model, then one report of both."""

import json
import os
import subprocess

import pytest

from conftest import REPO, missing

VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"


def _rows(folder):
    return [json.loads(line) for line in (folder / "routes.jsonl").read_text().splitlines()]


def _transformers_run(out, limit):
    from finrag.benchmarks.router_eval import main

    # 8 tokens cannot hold a RouterOutput: every answer is cut off, on either engine
    assert main(["--profile", "gpu-tiny", "--engine", "transformers", "--attempts", "1",
                 "--limit", str(limit), "--max-tokens", "8", "--out", str(out)]) == 0


@pytest.mark.slow
def test_extraction_rows_record_how_json_failed_and_resume(tmp_path):
    out = tmp_path / "transformers"
    _transformers_run(out, 1)
    _transformers_run(out, 2)  # resumes: only the second question is routed
    rows = _rows(out)
    assert [r["engine"] for r in rows] == ["transformers", "transformers"]
    assert len({r["id"] for r in rows}) == 2
    assert all(not r["valid"] and r["failure"] == "truncated" for r in rows)
    assert all(r["usage"]["finish_reason"] == "length" and r["text"] for r in rows)


def test_cross_agreement_compares_fields_as_sets():
    from finrag.benchmarks.router_json_report import cross_agreement

    def row(valid, companies=(), years=(), tickers=(), failure=None):
        route = {"companies": list(companies), "fiscal_years": list(years),
                 "tickers": list(tickers)} if valid else None
        return {"valid": valid, "route": route, "failure": failure,
                "usage": {"prompt_tokens": 10}}

    a = {"q1": row(True, ["3M"], [2018, 2019], ["MMM"]), "q2": row(True, ["Apple"], [2020]),
         "q3": row(False, failure="truncated")}
    b = {"q1": row(True, ["3m"], [2019, 2018], ["MMM"]), "q2": row(True, ["Apple"], [2021]),
         "q3": row(True, ["Intel"], [2022])}
    got = cross_agreement(a, b, ["q1", "q2", "q3"])
    assert (got["both_valid"], got["tickers"], got["fiscal_years"], got["companies"]) == (2, 2, 1, 2)
    assert got["tickers_and_years"] == 1 and got["identical_json"] == 0
    assert got["same_prompt_tokens"] == 3
    # as written, order and case count
    assert got["same_field"] == {"companies": 1, "fiscal_years": 0, "tickers": 2}
    assert {(d["id"], d["what"]) for d in got["differences"]} == {("q2", "fiscal_years"),
                                                                  ("q3", "validity")}


@pytest.mark.slow
def test_side_by_side_report_of_both_engines(tmp_path):
    if os.environ.get("FINRAG_SKIP_VLLM") == "1":
        pytest.skip("FINRAG_SKIP_VLLM=1")
    if not VLLM_PYTHON.exists():
        missing("no vLLM CPU venv (.venv-vllm, `make vllm-venv`): the vLLM side cannot run",
                require_env="FINRAG_REQUIRE_VLLM")
    _transformers_run(tmp_path / "transformers", 2)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run([str(VLLM_PYTHON), "-m", "finrag.benchmarks.router_eval", "--profile",
                           "gpu-tiny", "--engine", "vllm", "--attempts", "1", "--limit", "2",
                           "--max-tokens", "8", "--out", str(tmp_path / "vllm")], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert all(r["engine"] == "vllm" and r["failure"] == "truncated"
               for r in _rows(tmp_path / "vllm"))

    from finrag.benchmarks.router_eval import main

    report = tmp_path / "side_by_side"
    assert main(["--compare", str(tmp_path / "transformers"), str(tmp_path / "vllm"),
                 "--out", str(report)]) == 0
    results = json.loads((report / "results.json").read_text())
    assert set(results["engines"]) == {"transformers", "vllm"}
    for stats in results["engines"].values():
        assert stats["questions"] == 2 and stats["valid"] == 0
        assert stats["failures"]["truncated"] == 2
    # the same chat prompt, tokenized by the same tokenizer, on both engines
    assert results["cross"]["same_prompt_tokens"] == 2
    text = (report / "report.md").read_text()
    assert "| schema-valid | **0/2** | **0/2** |" in text
    assert "| invalid: truncated | 2 | 2 |" in text
    assert (report / "router_json.png").stat().st_size > 0
