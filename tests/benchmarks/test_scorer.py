"""The deterministic FinanceBench scorer (benchmarks/scorer.py) and the dev-question split."""

import json

import pytest

from finrag.benchmarks import scorer
from conftest import FINANCEBENCH, need_shared

QTY = "What is the FY2018 capital expenditure amount (in USD millions)?"


@pytest.mark.parametrize("gold, answer, question, label", [
    # figures with units, scale words and rounding
    ("$1577.00", "3M spent $1,577 million on capex in FY2018 [3M_2018_10K p.60].", QTY, "correct"),
    ("$1577.00", "Capex was $1.58 billion.", QTY, "correct"),
    ("$59268.00", "Total assets were $59.3 billion.", QTY, "correct"),
    ("30.8%", "Revenue grew 0.308 year over year.", QTY, "correct"),
    ("0.654", "Operating income grew 65.4%.", QTY, "correct"),
    ("0.01", "ROA = 1,248 / 87,583 = 0.0142, or 1.42%.", QTY, "correct"),  # the gold's rounding
    ("-0.02", "The ROA was (0.0153).", QTY, "correct"),
    ("17.98", "The ratio is 18.0.", QTY, "correct"),
    ("AMCOR's Adj. EBITDA was $2,018mn in FY 2023", "Adjusted EBITDA: $2.018 billion.",
     "What was AMCOR's adjusted EBITDA for FY 2023?", "correct"),
    ("$1577.00", "Capital expenditure was $1,411 million.", QTY, "incorrect"),
    ("0.83", "The ratio was 0.8 in FY2017.", QTY, "incorrect"),  # 0.8 is no rounding of 0.83
    ("-0.02", "The ROA was +0.02.", QTY, "incorrect"),  # both signed, opposite signs
    # years, dates and citation tags are not figures
    ("0.66", "As of June 30, 2023 the quick ratio was 0.66 [3M_2023Q2_10Q p.5].", QTY, "correct"),
    ("1577", "In FY2018 capex is in the cash flow statement [3M_2018_10K p.60].", QTY, None),
    # refusals
    ("1577", "The document does not provide the capital expenditure for FY2018.", QTY, "refusal"),
    ("1577", "I'm sorry, but I cannot find that figure.", QTY, "refusal"),
    ("1577", "", QTY, "refusal"),
    ("1577", "You haven't provided the cash flow statement, so I can't compute it.", QTY,
     "refusal"),
    # citation tags alone say nothing, whatever the reference
    ("1577", "[3M_2018_10K p.60] [3M_2018_10K p.1]", QTY, "refusal"),
    ("Yes. It decreased.", " [AMCOR_2023_10K p.12-13]. ", "Did the risk decrease?", "refusal"),
    ("Trillium, Array, and Therachon", "[Pfizer_2023Q2_10Q p.4]", "Which companies?",
     "refusal"),
    # ... and so do bare page references beside them (SFR's AMD answer, which the judge passed)
    ("4.2%", "[3M_2018_10K p.60] [AMD_2015_10K p.1]\n(Another part of the filing gives a "
     "different answer: [DOC_ID p.10] p.10 [AMD_2015_10K p.7])", QTY, "refusal"),
    ("Yes. It decreased.", "Page 12; pp. 40-41.", "Did the risk decrease?", "refusal"),
    ("4.2%", "D&A margin p.10: 4.2%", QTY, "correct"),
    ("Trillium, Array, and Therachon", "Arena [Pfizer_2023Q2_10Q p.4]", "Which companies?",
     None),
    # yes / no
    ("Yes, one customer accounted for 16% of net revenue", "No, there was none.",
     "Did AMD report customer concentration in FY22?", "incorrect"),
    ("Yes. It decreased.", "Yes, VaR decreased.", "Did the risk decrease?", "correct"),
    ("Yes, CVS paid a $0.55 dividend per share every quarter", "Yes, $0.40 a share.",
     "Did CVS pay dividends?", None),  # the same word, other figures: the LLM weighs them
    ("No, margins fell.", "Margins fell from 36.8% to 34.6%.", "Did margins improve?", None),
    # a figure in a reference to a question that asks for no quantity: the LLM decides
    ("87% of the total restructuring liability is related Employee liabilities.",
     "It mostly covers employee severance costs of $81 million.",
     "What is the nature & purpose of AMCOR's restructuring liability?", None),
    ("Trillium, Array, and Therachon", "Pfizer acquired Arena.", "Which companies?", None),
])
def test_score(gold, answer, question, label):
    v = scorer.score(gold, answer, question)
    assert (v.label if v else None) == label
    if v:
        assert {"correct": 10, "incorrect": 2, "refusal": 1}[v.label] == v.score
        assert v.rule.split(":")[0] in ("numeric", "yes_no", "refusal")


def test_figures_units_signs_and_what_is_left_out():
    got = scorer.figures("In FY2022 and 2021 revenue was $1,234.5 million, -3% and (12); "
                         "on March 31, 2023 [X_2023_10K p.4]\n1. first\n2) second 4.2bn")
    assert [f.value for f in got] == [1234.5e6, -3.0, -12.0, 4.2e9]
    assert got[1].percent and got[2].signed and got[0].scaled and not got[1].scaled


def test_kinds():
    assert scorer.kind("Yes, it is.", "") == "yes_no"
    assert scorer.kind("$1577.00", "") == "numeric"
    assert scorer.kind("Its net income was $3725 million.", "Which segment earned most?") == "open"
    assert scorer.kind("Its net income was $3725 million.", "How much did it earn?") == "numeric"
    assert scorer.kind("Data Center", "Which segment?") == "open"


def test_split_is_fixed_stratified_and_disjoint():
    from finrag.benchmarks.splits import split_ids, split_of

    path = need_shared(FINANCEBENCH / "questions.dev.jsonl")
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    halves = split_ids(records)
    assert halves["tune"].isdisjoint(halves["test"])
    assert halves["tune"] | halves["test"] == {r["financebench_id"] for r in records}
    assert (len(halves["tune"]), len(halves["test"])) == (48, 47)
    for qtype in {r["question_type"] for r in records}:
        n = [sum(r["question_type"] == qtype and r["financebench_id"] in halves[h]
                 for r in records) for h in ("tune", "test")]
        assert abs(n[0] - n[1]) <= 1, (qtype, n)
    # independent of file order
    assert split_of(reversed(records)) == split_of(records)
    assert split_of(records)["financebench_id_03029"] == "test"


def test_no_thousandfold_rescaling_of_bare_ratios():
    # 11.2% is not 0.0112 ~ 0.01; bare numbers on both sides are compared as written
    assert scorer.score("0.01", "The ROA is 11.2%.", QTY).label == "incorrect"
    assert scorer.score("0.01", "The ROA is 11.2.", QTY).label == "incorrect"
    assert scorer.score("1577", "Capex was 1,577,000.", QTY).label == "incorrect"


def test_scorer_calibration_on_labelled_answers(tmp_path):
    from finrag.serving.cli import main

    labelled = need_shared(FINANCEBENCH / "labelled_answers")
    out = tmp_path / "cal"
    assert main(["bench", "judge-calibration", "--scorer-only", "--split", "test",
                 "--labelled", str(labelled), "--out", str(out), "--quiet"]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["split"] == "test" and res["questions"] == 47 and not res["results"]
    sc = res["scorer"]
    assert 0 < sc["coverage"] < 1 and sc["n"] == round(sc["coverage"] * res["rows"])
    # kappa recomputed here from the confusion it reports (rows people, columns scorer)
    conf = sc["confusion"]
    labels = sorted(set(conf) | {j for row in conf.values() for j in row})
    cell = {(h, j): conf.get(h, {}).get(j, 0) for h in labels for j in labels}
    n = sum(cell.values())
    observed = sum(cell[x, x] for x in labels) / n
    chance = sum(sum(cell[x, j] for j in labels) * sum(cell[h, x] for h in labels)
                 for x in labels) / n**2
    assert n == sc["n"] and sc["accuracy"] == pytest.approx(observed)
    assert sc["kappa"] == pytest.approx((observed - chance) / (1 - chance))
    assert sc["ci"]["kappa"]["low"] <= sc["kappa"] <= sc["ci"]["kappa"]["high"]
    assert sc["ci"]["kappa"]["high"] - sc["ci"]["kappa"]["low"] > 0.01  # resampled, not echoed
    assert set(sc["by_rule"]) <= {"numeric", "yes_no", "refusal"}
    report = (out / "report.md").read_text()
    assert "held out" in report and "No LLM judge was run" in report
    assert (out / "scorer.png").stat().st_size > 5000
    assert res["labelled"].startswith("..")  # shown relative to the repository
    assert f"from `{res['labelled']}`" in report


def test_sfr_answers_of_citation_tags_alone_are_refusals():
    # what SFR's former per-part JSON path wrote when the generator put only the tag in each
    # part's answer (answers made by it are still in the committed caches)
    old = ("[3M_2018_10K p.60] [3M_2018_10K p.1]\n(Another part of the filing gives a different "
           "answer: [3M_2018_10K p.21] p.21)")
    assert scorer.says_nothing(old)
    v = scorer.score("$1577.00", old, QTY)
    assert (v.label, v.score) == ("refusal", 1) and "says nothing" in v.rule
    stated = ("Capex was $1,577 million [3M_2018_10K p.60]\n(Another part of the filing gives a "
              "different answer: [3M_2018_10K p.21])")
    assert not scorer.says_nothing(stated)
    assert scorer.score("$1577.00", stated, QTY).label == "correct"


def test_sfr_map_step_and_the_scorer_agree_on_what_says_nothing():
    # a part answer the scorer would call a refusal never reaches SFR's reduce call
    from finrag.retrieval.systems.context import states_nothing

    for answer in ("[3M_2018_10K p.60]", "[DOC_ID p.10] p.10", "[3M_2018_10K p.60] pp. 40-41",
                   "Not found in the provided filings.",
                   "The passages do not contain the capital expenditure for FY2018."):
        assert states_nothing(answer) and scorer.refuses(answer), answer
    assert not states_nothing("Capex was $1,577 million [3M_2018_10K p.60].")
