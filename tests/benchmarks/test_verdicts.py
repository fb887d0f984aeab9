"""The yes/no verdict benchmark's rules and report (benchmarks/verdicts.py), on rows as
``measure`` writes them."""

import json

from finrag.benchmarks.verdicts import by_class, said, write_report, yes_no_questions


def _rows():
    base = {"question": "q", "doc_name": "ACME_2023_10K", "routed": ["ACME_2023_10K"],
            "offset": -1.5, "blocks": 3, "seconds": 1.0}
    return [
        # the passages lift Yes above the model's lean to No: only calibration says Yes
        {**base, "id": "a", "split": "tune", "gold": "yes", "raw": -0.5, "bare": -2.0},
        {**base, "id": "b", "split": "tune", "gold": "no", "raw": -3.0, "bare": -1.0},
        {**base, "id": "c", "split": "tune", "gold": "no", "facts": "no"},  # the facts decide
        {**base, "id": "d", "split": "test", "gold": "yes", "raw": 0.7, "bare": 1.2},
        {**base, "id": "e", "split": "test", "gold": "yes", "blocks": 0},  # nothing found
    ]


def test_each_rule_decides_from_its_margin_and_the_facts_come_first():
    rows = _rows()
    assert [said(r, "prior") for r in rows] == ["no", "no", "no", "yes", None]
    assert [said(r, "calibrated") for r in rows] == ["yes", "no", "no", "yes", None]
    assert [said(r, "no-evidence") for r in rows] == ["yes", "no", "no", "no", None]
    tune = by_class([r for r in rows if r["split"] == "tune"], "calibrated")
    assert tune == {"yes": {"n": 1, "yes": 1, "no": 0, "neither": 0},
                    "no": {"n": 2, "yes": 0, "no": 2, "neither": 0}}
    test = by_class([r for r in rows if r["split"] == "test"], "prior")
    assert test["yes"] == {"n": 2, "yes": 1, "no": 0, "neither": 1}


def test_the_report_shows_both_halves_with_the_test_half_seen(tmp_path):
    write_report(_rows(), tmp_path, "python -m finrag.benchmarks.verdicts --split all")
    text = (tmp_path / "report.md").read_text()
    assert "| tune | calibrated | 1 / 0 / 0 | 0 / 2 / 0 | 100.0% | 100.0% |" in text
    assert "| test (seen) | prior | 1 / 0 / 1 |" in text
    assert (tmp_path / "margins.png").stat().st_size > 1000
    assert len(json.loads((tmp_path / "results.json").read_text())) == 5


def test_only_yes_no_references_are_taken_with_their_gold_and_half(tmp_path):
    path = tmp_path / "q.jsonl"
    records = [{"financebench_id": f"id{i}", "question": f"Q{i}?", "answer": a, "doc_name": "X",
                "question_type": "novel-generated"}
               for i, a in enumerate(["Yes, it did.", "No. It fell.", "$1,577 million"])]
    path.write_text("\n".join(json.dumps(r) for r in records))
    got = yes_no_questions(path)
    assert [(q["id"], q["gold"]) for q in got] == [("id0", "yes"), ("id1", "no")]
    assert {q["split"] for q in got} <= {"tune", "test"}


def test_the_latency_section_compares_p50_on_the_questions_with_a_verdict_step(tmp_path):
    from finrag.benchmarks.verdicts import latency_lines

    timed = [{"id": f"q{i}", "split": "tune", "repeat": 0, "verdict_on": on, "generated": True,
              "total_ms": (10_000 + 100 * i) * (1.1 if on else 1.0),
              "verdict_ms": 900.0 if on else 0.0, "answer": "Yes."}
             for i in range(31) for on in (True, False)]
    # a question the facts judge: generated, no verdict step on either side
    timed += [{**timed[0], "id": "facts", "verdict_on": on, "total_ms": 20_000.0,
               "verdict_ms": 0.0} for on in (True, False)]
    timed.append({**timed[0], "id": "alone", "generated": False, "total_ms": 5.0})
    text = "\n".join(latency_lines(timed))
    assert "| with a verdict step | verdict off | 31 | 11.50 |" in text
    assert "| with a verdict step | verdict on | 31 | 12.65 |" in text
    assert "| every generated answer | verdict off | 32 | 11.55 |" in text
    assert "p50 on / off, questions with a verdict step: **1.100** (goal ≤ 1.30)" in text
    write_report(_rows(), tmp_path, "cmd", timed,
                 verdicts_from="python -m finrag.benchmarks.verdicts --split all")
    assert (tmp_path / "latency_cdf.png").stat().st_size > 1000
    assert ("The verdicts below are those of `python -m finrag.benchmarks.verdicts --split all`"
            in (tmp_path / "report.md").read_text())
    assert "What the verdict step costs" in (tmp_path / "report.md").read_text()
