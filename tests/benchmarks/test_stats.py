"""benchmarks.stats on hand-made inputs with known answers."""

import math

import numpy as np
import pytest

from finrag.benchmarks import stats


# --- bootstrap -------------------------------------------------------------------------------

def test_bootstrap_ci_contains_the_mean_and_is_reproducible():
    rng = np.random.default_rng(1)
    values = rng.normal(5.0, 2.0, size=200).tolist()
    ci = stats.bootstrap_ci(values)
    assert ci["n"] == 200
    assert ci["estimate"] == pytest.approx(np.mean(values))
    assert ci["low"] < ci["estimate"] < ci["high"]
    # the standard error is 2/sqrt(200) = 0.14: a 95% interval is about 0.55 wide
    assert 0.35 < ci["high"] - ci["low"] < 0.8
    assert stats.bootstrap_ci(values) == ci  # same seed, same interval
    assert stats.bootstrap_ci(values, seed=7) != ci


def test_bootstrap_ci_narrows_with_more_data_and_lower_level():
    rng = np.random.default_rng(2)
    big = rng.normal(0.0, 1.0, size=2000)
    small = big[:50]
    width = lambda ci: ci["high"] - ci["low"]  # noqa: E731
    assert width(stats.bootstrap_ci(big)) < width(stats.bootstrap_ci(small)) / 3
    assert width(stats.bootstrap_ci(small, level=0.5)) < width(stats.bootstrap_ci(small))


def test_bootstrap_ci_edge_cases_and_other_statistics():
    assert stats.bootstrap_ci([]) == {"estimate": None, "low": None, "high": None, "n": 0}
    assert stats.bootstrap_ci([3.0]) == {"estimate": 3.0, "low": 3.0, "high": 3.0, "n": 1}
    assert stats.bootstrap_ci([2, 2, 2, 2]) == {"estimate": 2.0, "low": 2.0, "high": 2.0, "n": 4}
    med = stats.bootstrap_ci([1, 2, 3, 4, 100], stat=np.median)
    assert med["estimate"] == 3.0 and 1 <= med["low"] <= 3 <= med["high"] <= 100
    # a statistic without an ``axis`` argument is applied resample by resample
    top = stats.bootstrap_ci([1, 5, 9], stat=lambda x: float(max(x)), n=300)
    assert top["estimate"] == 9 and 1 <= top["low"] <= 9 and top["high"] == 9
    with pytest.raises(ValueError):
        stats.bootstrap_ci([1, 2], level=1.0)


def test_paired_difference_sign_shared_ids_and_bounds():
    a = {"q1": 8, "q2": 9, "q3": 7, "q4": 10}
    b = {"q1": 5, "q2": 6, "q3": 7, "q5": 1}
    d = stats.paired_difference(a, b)
    assert d["n"] == 3  # q4 and q5 are not shared
    assert d["mean_diff"] == pytest.approx(2.0)  # (3 + 3 + 0) / 3
    assert 0.0 <= d["low"] <= 2.0 <= d["high"] <= 3.0
    r = stats.paired_difference(b, a)
    assert r["mean_diff"] == pytest.approx(-2.0)
    assert r["low"] == pytest.approx(-d["high"]) and r["high"] == pytest.approx(-d["low"])
    # a consistent one-point gain: the interval excludes zero
    c = {f"q{i}": i % 10 + 1.0 for i in range(40)}
    e = {k: v - 1.0 for k, v in c.items()}
    assert stats.paired_difference(c, e) == {"mean_diff": 1.0, "low": 1.0, "high": 1.0, "n": 40}
    assert stats.paired_difference({"x": 1}, {"y": 1})["mean_diff"] is None
    assert stats.paired_difference({"x": 1, "y": None}, {"x": 0, "y": 3})["n"] == 1


# --- agreement -------------------------------------------------------------------------------

def test_accuracy_and_confusion_matrix():
    t = ["a", "a", "b", "b", "c"]
    p = ["a", "b", "b", "b", "a"]
    assert stats.accuracy(t, p) == pytest.approx(3 / 5)
    m = stats.confusion_matrix(t, p, labels=["a", "b", "c"])
    assert m == {"a": {"a": 1, "b": 1, "c": 0}, "b": {"a": 0, "b": 2, "c": 0},
                 "c": {"a": 1, "b": 0, "c": 0}}
    assert list(stats.confusion_matrix(t, p)) == ["a", "b", "c"]  # sorted labels by default
    with pytest.raises(ValueError, match="not in"):
        stats.confusion_matrix(t, p, labels=["a", "b"])
    with pytest.raises(ValueError, match="length"):
        stats.accuracy(["a"], ["a", "b"])
    assert stats.accuracy([], []) is None


def test_cohen_kappa_against_hand_computed_values():
    # two labels: [[4, 1], [2, 3]] -> p_o = 0.7, p_e = 0.5*0.6 + 0.5*0.4 = 0.5, kappa = 0.4
    t = ["a"] * 5 + ["b"] * 5
    p = ["a", "a", "a", "a", "b", "a", "a", "b", "b", "b"]
    assert stats.cohen_kappa(t, p) == pytest.approx(0.4)
    # three labels: rows (true) c=[3,1,0], i=[1,2,1], r=[0,0,2]
    # p_o = 7/10; marginals true (4,4,2), pred (4,3,3); p_e = (16+12+6)/100 = 0.34
    # kappa = (0.7 - 0.34) / 0.66 = 6/11
    t = ["c"] * 4 + ["i"] * 4 + ["r"] * 2
    p = ["c", "c", "c", "i", "c", "i", "i", "r", "r", "r"]
    assert stats.cohen_kappa(t, p) == pytest.approx(6 / 11)
    assert stats.cohen_kappa(t, p, labels=["c", "i", "r", "unused"]) == pytest.approx(6 / 11)
    assert stats.cohen_kappa(t, t) == pytest.approx(1.0)
    assert stats.cohen_kappa(["a", "b"], ["b", "a"]) == pytest.approx(-1.0)


def test_cohen_kappa_degenerate_cases():
    assert stats.cohen_kappa([], []) is None
    # both raters used one and the same label: p_e = 1, defined as 1.0 (perfect agreement)
    assert stats.cohen_kappa(["x"] * 4, ["x"] * 4) == 1.0
    # each rater constant but different: p_o = 0, p_e = 0 -> 0
    assert stats.cohen_kappa(["x"] * 4, ["y"] * 4) == 0.0


# --- score rates -----------------------------------------------------------------------------

def test_score_rates():
    r = stats.score_rates([1, 8, 10, 5])
    assert r == {"average": 6.0, "failure_rate": 0.25, "correctness": 0.5,
                 "perfect_rate": 0.25, "n": 4}
    assert stats.score_rates([9, None, 1])["n"] == 2  # a failed judgement is not a score of 1
    assert stats.score_rates([9, None, 1])["failure_rate"] == 0.5
    empty = stats.score_rates([])
    assert empty["n"] == 0 and empty["average"] is None and empty["correctness"] is None


# --- Pareto ----------------------------------------------------------------------------------

TABLE = [
    {"name": "A", "quality": 0.8, "cost": 10, "latency": 1.0},
    {"name": "B", "quality": 0.7, "cost": 5, "latency": 1.0},
    {"name": "C", "quality": 0.6, "cost": 6, "latency": 2.0},  # dominated by B
    {"name": "D", "quality": 0.8, "cost": 10, "latency": 1.0},  # duplicate of A: kept
    {"name": "E", "quality": 0.9, "cost": 20, "latency": 3.0},  # best quality: kept
    {"name": "F", "quality": 0.8, "cost": 10, "latency": 1.5},  # ties A but slower: dominated
    {"name": "G", "quality": None, "cost": 1, "latency": 0.1},  # not comparable: left out
    {"name": "H", "quality": float("nan"), "cost": 1, "latency": 0.1},
]


def test_pareto_front_small_table():
    front = stats.pareto_front(TABLE)
    assert [r["name"] for r in front] == ["A", "B", "D", "E"]
    assert front[0] is TABLE[0]  # the rows themselves, in input order


def test_pareto_front_other_objectives_and_edges():
    assert stats.pareto_front([]) == []
    # quality alone: only the best quality survives
    assert [r["name"] for r in stats.pareto_front(TABLE, minimize=())] == ["E"]
    # cost alone
    assert [r["name"] for r in stats.pareto_front(TABLE, maximize=(), minimize=("cost",))] \
        == ["G", "H"]
    one = [{"quality": 1, "cost": 1, "latency": 1}]
    assert stats.pareto_front(one) == one
    with pytest.raises(ValueError):
        stats.pareto_front(TABLE, maximize=(), minimize=())


# --- FACET -----------------------------------------------------------------------------------

SLA = {"latency_max": 2.0, "cost_max": 100.0, "quality_min": 0.5,
       "weights": {"latency": 1, "cost": 1, "quality": 2}}


def test_facet_ratios_and_weighted_geometric_mean():
    row = {"latency": 1.0, "cost": 50.0, "quality": 0.75}
    assert stats.facet_ratios(row, SLA) == pytest.approx({"latency": 2.0, "cost": 2.0,
                                                          "quality": 1.5})
    # (2^1 * 2^1 * 1.5^2) ^ (1/4) = 9^(1/4) = sqrt(3)
    assert stats.facet_score(row, SLA) == pytest.approx(math.sqrt(3))
    # equal weights by default: (2 * 2 * 1.5) ^ (1/3)
    plain = {k: v for k, v in SLA.items() if k != "weights"}
    assert stats.facet_score(row, plain) == pytest.approx(6 ** (1 / 3))
    # a row exactly on every bound scores 1
    assert stats.facet_score({"latency": 2.0, "cost": 100.0, "quality": 0.5}, SLA) \
        == pytest.approx(1.0)


def test_facet_caps_zero_and_weights():
    fast = {"latency": 0.001, "cost": 0.0, "quality": 0.4}
    r = stats.facet_ratios(fast, SLA)
    assert r["latency"] == 2.0 and r["cost"] == 2.0  # 2000x and "free" both capped at 2
    assert r["quality"] == pytest.approx(0.8)
    # the cap bounds what speed and price can buy: (2 * 2 * 0.8^2)^(1/4)
    assert stats.facet_score(fast, SLA) == pytest.approx(2.56 ** 0.25)
    assert stats.facet_ratios(fast, {**SLA, "cap": 4.0})["latency"] == 4.0
    assert stats.facet_score({"latency": 1, "cost": 1, "quality": 0.0}, SLA) == 0.0
    # a zero weight leaves that dimension out
    no_q = {**SLA, "weights": {"latency": 1, "cost": 1, "quality": 0}}
    assert stats.facet_score({"latency": 1, "cost": 50, "quality": 0.0}, no_q) \
        == pytest.approx(2.0)
    for bad in ({**SLA, "quality_min": 0}, {**SLA, "latency_max": -1},
                {**SLA, "weights": {"latency": 0, "cost": 0, "quality": 0}},
                {**SLA, "weights": {"latency": -1}}):
        with pytest.raises(ValueError):
            stats.facet_score({"latency": 1, "cost": 1, "quality": 1}, bad)
    with pytest.raises(ValueError, match="quality"):
        stats.facet_score({"latency": 1, "cost": 1}, SLA)


def test_facet_choice_only_among_rows_meeting_the_sla():
    rows = [
        {"name": "cheap-but-weak", "latency": 0.01, "cost": 1.0, "quality": 0.4},  # 1.26, fails
        {"name": "good", "latency": 1.0, "cost": 50.0, "quality": 0.75},  # sqrt(3)
        {"name": "on-the-bounds", "latency": 2.0, "cost": 100.0, "quality": 1.0},  # sqrt(2)
        {"name": "too-slow", "latency": 2.5, "cost": 10.0, "quality": 1.0},
    ]
    out = stats.facet_choice(rows, SLA)
    assert out["best"] is rows[1]
    assert [s["meets_sla"] for s in out["scored"]] == [False, True, True, False]
    assert [s["row"] for s in out["scored"]] == rows
    assert out["scored"][2]["score"] == pytest.approx(math.sqrt(2))
    # with equal weights the weak row outscores an eligible one, and is still not chosen:
    # (2 * 2 * 0.8)^(1/3) = 1.47 against (1 * 1 * 2)^(1/3) = 1.26
    plain = {k: v for k, v in SLA.items() if k != "weights"}
    out = stats.facet_choice([rows[0], rows[2], rows[3]], plain)
    assert out["scored"][0]["score"] == pytest.approx(3.2 ** (1 / 3))
    assert out["scored"][1]["score"] == pytest.approx(2 ** (1 / 3))
    assert out["best"] is rows[2]
    # a tie goes to the first row
    twin = stats.facet_choice([rows[1], dict(rows[1])], SLA)
    assert twin["best"] is rows[1]


def test_facet_choice_when_no_row_meets_the_sla():
    rows = [{"latency": 1.0, "cost": 10.0, "quality": 0.6},
            {"latency": 3.0, "cost": 10.0, "quality": 0.99}]
    out = stats.facet_choice(rows, {**SLA, "quality_min": 0.95})
    assert out["best"] is None
    assert len(out["scored"]) == 2 and not any(s["meets_sla"] for s in out["scored"])
    assert all(s["score"] > 0 for s in out["scored"])
    assert stats.facet_choice([], SLA) == {"best": None, "scored": []}


def test_facet_energy_axis_only_when_the_sla_sets_it():
    sla = {**SLA, "energy_max": 100.0, "weights": {**SLA.get("weights", {}), "energy": 1.0}}
    row = {"latency": 5.0, "cost": 50.0, "quality": 0.9, "energy": 200.0}
    ratios = stats.facet_ratios(row, sla)
    assert ratios["energy"] == pytest.approx(0.5)
    assert not stats.meets_sla(row, sla)  # twice the energy ceiling
    assert stats.meets_sla({**row, "energy": 50.0}, sla) == stats.meets_sla(row, SLA)
    assert "energy" not in stats.facet_ratios(row, SLA)
    with pytest.raises(ValueError, match="no measured energy"):
        stats.facet_score({**row, "energy": None}, sla)


def test_agreement_ci_resamples_clusters():
    human = ["correct", "incorrect", "refusal", "correct"] * 10
    judged = ["correct", "incorrect", "refusal", "incorrect"] * 10
    clusters = [i // 4 for i in range(40)]  # ten questions of four answers
    out = stats.agreement_ci(human, judged, clusters, labels=("correct", "incorrect", "refusal"))
    assert out["accuracy"]["estimate"] == pytest.approx(0.75)
    # every question has the same mix, so resampling questions cannot move the estimate
    assert out["accuracy"]["low"] == pytest.approx(0.75) == out["accuracy"]["high"]
    assert out["kappa"]["n"] == 40 and out["kappa"]["low"] <= out["kappa"]["high"]
    mixed = stats.agreement_ci(human, human[:20] + judged[20:], clusters)
    assert mixed["accuracy"]["low"] < mixed["accuracy"]["estimate"] < mixed["accuracy"]["high"]
