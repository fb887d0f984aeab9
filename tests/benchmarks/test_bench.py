"""`finrag bench`: caches that resume, the figures of each report from hand-made records, and
one tiny end-to-end run of quality → perf → pareto → judge-calibration on the generated corpus
with the tiny profile (real index, real packaged weights, real judge)."""

import json
import shutil

import pytest

from finrag.benchmarks import calibration as C
from finrag.benchmarks import judge as J
from finrag.benchmarks import pareto as P
from finrag.benchmarks import perf as PF
from finrag.benchmarks import quality as Q
from finrag.benchmarks import report as R
from conftest import FINANCEBENCH, need_shared
from finrag.models.llm import Completion


# --- caches ----------------------------------------------------------------------------------

def test_jsonl_cache_keeps_finished_records_and_drops_a_cut_line(tmp_path):
    path = tmp_path / "c" / "cache.jsonl"
    cache = R.JsonlCache(path)
    cache.add("a", {"v": 1})
    cache.add("b", {"v": 2})
    with path.open("a") as fh:  # a kill in the middle of writing the third record
        fh.write('{"key": "c", "v"')
    again = R.JsonlCache(path)
    assert "a" in again and again.get("b")["v"] == 2 and "c" not in again
    again.add("c", {"v": 3})  # written on a line of its own after the repair
    third = R.JsonlCache(path)
    assert {k: r["v"] for k, r in third.records.items()} == {"a": 1, "b": 2, "c": 3}


class CountingJudge:
    """A rule-based stand-in for the LLM: scores 10 when the gold answer is in the candidate."""

    model_id = "rule"

    def __init__(self):
        self.rows = 0

    def count_tokens(self, text):
        return len(text.split())

    def generate_json(self, prompts, schema, params=None):
        self.rows += len(prompts)
        out = []
        for messages in prompts:
            user = messages[-1]["content"]
            gold = user.split("Reference answer: ")[1].split("\n")[0]
            good = gold in user.split("Candidate answer: ")[1]
            verdict = schema(score=10 if good else 2, label="correct" if good else "incorrect",
                             reason="rule")
            out.append((verdict, Completion(verdict.model_dump_json(), 50, 9, 0.1)))
        return out


def test_judge_cached_judges_each_row_once(tmp_path):
    rows = [{"question": "Q", "gold_answer": str(i), "model_answer": f"it is {i if i % 2 else 99}"}
            for i in range(5)]
    engine = CountingJudge()
    jhash = R.config_hash(J.judge_config(engine))
    keys = [f"{jhash}|{i}" for i in range(5)]
    cache = R.JsonlCache(tmp_path / "v.jsonl")
    first = J.judge_cached(engine, rows[:3], keys[:3], cache, chunk=2, progress=False,
                           rules=False)
    assert engine.rows == 3 and first.usage["cached"] == 0 and first.usage["calls"] == 2
    run = J.judge_cached(engine, rows, keys, R.JsonlCache(tmp_path / "v.jsonl"), chunk=2,
                         progress=False, rules=False)
    assert engine.rows == 5  # only the two new rows were judged
    assert run.usage["cached"] == 3 and run.usage["rows"] == 5
    assert [r.judgement.score for r in run.results] == [2, 10, 2, 10, 2]
    with pytest.raises(ValueError, match="keys"):
        J.judge_cached(engine, rows, keys[:2], cache, progress=False)
    # with the scorer, bare figures are settled without the LLM (and not cached)
    ruled = J.judge_cached(CountingJudge(), rows, [k + "r" for k in keys], cache,
                           progress=False)
    assert ruled.usage["by_rule"] == 5 and ruled.usage["calls"] == 0
    assert all(r.source == "scorer" for r in ruled.results)
    assert [r.judgement.label for r in ruled.results] == ["incorrect", "correct"] * 2 + \
        ["incorrect"]


def test_config_hash_is_order_free_and_sensitive():
    assert R.config_hash({"a": 1, "b": [1, 2]}) == R.config_hash({"b": [1, 2], "a": 1})
    assert R.config_hash({"a": 1}) != R.config_hash({"a": 2})
    assert len(R.config_hash({})) == 12


# --- figures from hand-made records ----------------------------------------------------------

def record(qid, system, score, label, *, tokens=100, total_ms=1000.0, hit=True):
    answer = {"answer": "x", "usage": {"prompt_tokens": tokens, "completion_tokens": 10,
                                       "llm_calls": 1, "calls": []},
              "timings_ms": {"retrieve": total_ms / 2, "generate": total_ms / 2,
                             "total": total_ms},
              "energy": {"joules": None, "source": "unavailable", "cpu_seconds": 0.5}}
    row = {"id": qid, "system": system, "pdf_present": True, "routing_status": None,
           "routed_exact": None, "llm_routed": None, "hit5": hit, "hit10": hit,
           "wrong_doc_share": 0.0, "context_tokens": tokens, "llm_calls": 1,
           "prompt_tokens": tokens, "completion_tokens": 10, "timings_ms": answer["timings_ms"],
           "error": None}
    verdict = {"judgement": {"score": score, "label": label, "reason": "r"}}
    return {"id": qid, "system": system, "answer": answer, "row": row, "verdict": verdict}


def test_quality_summary_rates_bands_and_paired_differences():
    records = []
    for i, (a, b) in enumerate([(10, 1), (9, 1), (8, 5), (3, 3)]):
        records.append(record(f"q{i}", "hdrr", a, "correct" if a >= 8 else "incorrect"))
        records.append(record(f"q{i}", "cbr", b, "refusal" if b == 1 else "incorrect",
                              tokens=300, total_ms=3000.0))
    failed = record("q4", "cbr", 1, "refusal")
    failed["answer"], failed["verdict"] = None, None  # the system raised on this question
    records.append(failed)
    s = Q.summarize(records, ["hdrr", "cbr"], "hdrr")
    h, c = s["systems"]["hdrr"], s["systems"]["cbr"]
    assert h["average"] == pytest.approx(7.5) and h["correctness"] == pytest.approx(0.75)
    assert h["perfect_rate"] == pytest.approx(0.25) and h["failure_rate"] == 0
    assert h["bands"] == {"1 (failure)": 0, "2–4": 1, "5–7": 0, "8–9": 2, "10 (perfect)": 1}
    assert c["errors"] == 1 and c["judged"] == 4 and c["failure_rate"] == pytest.approx(0.5)
    assert c["labels"] == {"correct": 0.0, "incorrect": 0.5, "refusal": 0.5}
    assert c["tokens_per_query"] == pytest.approx(310) and h["latency_s"]["p50"] == 1.0
    assert h["cpu_seconds_per_query"] == 0.5 and h["joules_per_query"] is None
    d = s["paired"]["cbr"]["score"]
    assert d["n"] == 4 and d["mean_diff"] == pytest.approx((9 + 8 + 3 + 0) / 4)
    assert d["low"] <= d["mean_diff"] <= d["high"]
    assert s["paired"]["cbr"]["correct"]["mean_diff"] == pytest.approx(0.75)
    ci = h["average_ci"]
    assert ci["low"] <= 7.5 <= ci["high"] and ci["n"] == 4


def test_judge_passes_against_the_reference_figures_are_counted_and_struck():
    def judged(qid, system, answer, label, source, gold="Revenue was $1.5 billion."):
        rec = record(qid, system, 9 if label == "correct" else 2, label)
        rec["answer"]["answer"], rec["gold"] = answer, gold
        rec["verdict"]["source"] = source
        return rec

    records = [judged("q0", "hdrr", "Revenue was $1.5 billion.", "correct", "llm"),
               judged("q0", "cbr", "Revenue was $2.0 billion.", "correct", "llm"),
               judged("q1", "hdrr", "It rose on pricing.", "correct", "llm"),
               judged("q1", "cbr", "Revenue was $2.0 billion.", "correct", "scorer"),
               judged("q2", "hdrr", "Revenue was $2.0 billion.", "incorrect", "llm"),
               judged("q2", "cbr", "Revenue was $7 billion.", "correct", "llm")]
    assert [Q.other_figures(r) for r in records] == [False, True, False, False, False, True]
    s = Q.summarize(records, ["hdrr", "cbr"], "hdrr")
    h, c = s["systems"]["hdrr"], s["systems"]["cbr"]
    assert (h["judge_correct"], h["other_figures"]) == (2, 0)
    assert (c["judge_correct"], c["other_figures"]) == (2, 2)
    assert h["strict_correct_ci"]["estimate"] == pytest.approx(2 / 3)
    assert c["strict_correct_ci"]["estimate"] == pytest.approx(1 / 3)
    assert s["paired"]["cbr"]["strict_correct"]["mean_diff"] == pytest.approx(1 / 3)
    assert s["paired"]["cbr"]["correct"]["mean_diff"] == pytest.approx(-1 / 3)


def test_yes_no_answers_by_gold_class_and_scorer_only_accuracy():
    def yn(qid, system, gold, said, label, source="scorer"):
        rec = record(qid, system, 10 if label == "correct" else 2, label)
        rec["answer"]["answer"], rec["gold"] = said, gold
        rec["verdict"]["source"] = source
        return rec

    golds = ["Yes, it grew.", "Yes.", "No, it fell.", "No.", "Yes, by 5%."]
    records = []
    for i, gold in enumerate(golds):
        records.append(yn(f"q{i}", "hdrr", gold, "No: it declined.",
                          "correct" if gold.startswith("No") else "incorrect"))
        said = gold.split(",")[0].rstrip(".") + ": from the figures."
        records.append(yn(f"q{i}", "cbr", gold, said if i != 4 else "It grew 5%.",
                          "correct", "scorer" if i != 4 else "llm"))
    records.append(yn("q5", "hdrr", "Revenue was $5 million.", "$5 million", "correct"))
    records.append(yn("q5", "cbr", "Revenue was $5 million.", "$6 million", "incorrect"))
    s = Q.summarize(records, ["hdrr", "cbr"], "hdrr")
    h, c = s["systems"]["hdrr"]["yes_no"], s["systems"]["cbr"]["yes_no"]
    # a constant "No" shows in one column
    assert h["yes"] == {"n": 3, "says_yes": 0, "says_no": 3, "says_neither": 0, "accuracy": 0.0}
    assert h["no"] == {"n": 2, "says_yes": 0, "says_no": 2, "says_neither": 0, "accuracy": 1.0}
    assert c["yes"] == {"n": 3, "says_yes": 2, "says_no": 0, "says_neither": 1, "accuracy": 1.0}
    # the scorer's verdicts alone: cbr's judged answer is left out of that figure
    assert s["systems"]["hdrr"]["scorer_correct_ci"]["estimate"] == pytest.approx(3 / 6)
    assert s["systems"]["cbr"]["scorer_correct_ci"]["n"] == 5
    assert s["systems"]["cbr"]["scorer_correct_ci"]["estimate"] == pytest.approx(4 / 5)


def test_bottleneck_is_the_largest_mean_stage():
    level = {"stage_ms": {s: {"p50": m, "p95": m, "p99": m, "mean": m} for s, m in
                          (("route", 10.0), ("rerank_light", 290.0), ("generate", 700.0))}}
    b = PF.bottleneck(level)
    assert b["stage"] == "generate" and b["share"] == pytest.approx(0.7)
    assert PF.bottleneck({"stage_ms": {}}) is None
    assert PF.stage_table(level)[2].startswith("| route |")


def test_kappa_bands_and_trust_statement():
    assert [C.kappa_band(k) for k in (None, -0.1, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0)] == \
        ["undefined", "poor", "slight", "fair", "moderate", "substantial", "almost perfect",
         "almost perfect"]
    result = {"accuracy": 0.8, "kappa": 0.65, "n": 10,
              "confusion": {"correct": {"correct": 5, "incorrect": 1, "refusal": 0},
                            "incorrect": {"correct": 1, "incorrect": 3, "refusal": 0},
                            "refusal": {"correct": 0, "incorrect": 0, "refusal": 0}}}
    text = " ".join(C.trust_statement(result))
    assert "substantial" in text and "83.3%" in text  # 5 of the 6 "correct" verdicts
    assert "absolute label rates" in text


def test_select_rows_limits_per_configuration_and_names_unknown_ones():
    rows = [{"configuration": c, "i": i} for c in ("a", "b") for i in range(3)]
    assert [(r["configuration"], r["i"]) for r in C.select_rows(rows, ["b"], 2)] == \
        [("b", 0), ("b", 1)]
    assert len(C.select_rows(rows, None, None)) == 6
    with pytest.raises(ValueError, match="unknown configuration.*have: a, b"):
        C.select_rows(rows, ["zzz"], None)


def test_select_rows_samples_by_seeded_hash_and_grows_by_adding():
    rows = [{"configuration": c, "financebench_id": f"q{i}"} for c in "abcd" for i in range(10)]
    small, large = C.select_rows(rows, None, None, 5), C.select_rows(rows, None, None, 12)
    assert len(small) == 5 and len(large) == 12
    assert all(r in large for r in small)  # a larger sample adds rows
    assert small == [r for r in rows if r in small]  # kept in file order
    assert C.select_rows(list(reversed(rows)), None, None, 5) == list(reversed(small))
    assert len({(r["configuration"], r["financebench_id"]) for r in large}) == 12
    only_a = C.select_rows(rows, ["a"], None, 3)
    assert len(only_a) == 3 and {r["configuration"] for r in only_a} == {"a"}
    with pytest.raises(ValueError, match="--sample"):
        C.select_rows(rows, None, None, 0)


def test_pareto_configurations_and_sla_parsing():
    def system(correct, average, tokens, p50, joules=None):
        return {"labels": {"correct": correct}, "average": average, "tokens_per_query": tokens,
                "latency_s": {"p50": p50}, "joules_per_query": joules, "judged": 30}

    quality = {"systems": {"cbr": system(0.30, 5.0, 900.0, 10.0),
                           "hdrr": system(0.45, 7.0, 1000.0, 12.0),
                           "sfr": system(0.40, 6.0, 90000.0, 300.0)}}
    rows = P.configurations(quality, quality_key="accuracy", cost_key="tokens")
    assert [r["name"] for r in rows] == ["cbr", "hdrr", "sfr"]
    # quality, cost and latency of a point all come from the one quality run
    assert (rows[1]["quality"], rows[1]["cost"], rows[1]["latency"]) == (0.45, 1000.0, 12.0)
    assert P.configurations(quality, quality_key="average", cost_key="tokens")[1]["quality"] == 7.0
    perf = {"meta": {"system": "hdrr", "mode": "in-process"},
            "levels": [{"concurrency": 2, "prompt_tokens": 900, "completion_tokens": 100, "ok": 30,
                        "energy": {"joules_per_answer": None},
                        "latency_ms": {"p50": 20000, "p95": 31000}, "answers_per_s": 0.1}]}
    before, after = perf | {"folder": "perf_before"}, perf | {"folder": "perf_after"}
    levels = P.perf_levels([before, after])
    assert [lv["name"] for lv in levels] == ["hdrr in-process C=2 (perf_before)",
                                             "hdrr in-process C=2 (perf_after)"]
    assert levels[0]["tokens"] == 1000 and levels[0]["p95_s"] == 31.0  # from 30 answers
    assert P.perf_levels([perf | {"levels": [perf["levels"][0] | {"ok": 4}]}])[0]["p95_s"] is None
    from finrag.benchmarks import stats

    front = stats.pareto_front(rows, maximize=("quality",), minimize=("cost", "latency"))
    assert [r["name"] for r in front] == ["cbr", "hdrr"]
    name, sla = P.parse_sla("fast:latency_max=15,cost_max=2000,quality_min=0.4,w_latency=3")
    assert name == "fast" and sla["weights"] == {"latency": 3.0}
    assert stats.facet_choice(rows, sla)["best"]["name"] == "hdrr"
    assert "energy_max" not in P.without_energy(P.SLAS["interactive"])
    for bad in ("nocolon", "x:latency_max=abc", "x:speed=3", "x:latency_max=0,cost_max=1,"
                "quality_min=1"):
        with pytest.raises(ValueError):
            P.parse_sla(bad)


def test_system_limits_parse():
    assert Q._limits("sfr=10, agentic=3") == {"sfr": 10, "agentic": 3}


def test_system_sample_is_fixed_nested_and_routed_only():
    from finrag.retrieval.systems.evaluation import Question

    qs = [Question(f"q{i}", "?", f"DOC{i}" if i % 3 else None, [1], pdf_present=i % 4 != 0)
          for i in range(40)]
    five, ten = Q.sample_ids(qs, 5), Q.sample_ids(qs, 10)
    assert len(five) == 5 and len(ten) == 10 and five < ten  # a larger sample adds questions
    by_id = {q.id: q for q in qs}
    assert all(by_id[i].pdf_present and by_id[i].doc_name for i in ten)
    assert Q.sample_ids(list(reversed(qs)), 10) == ten
    with pytest.raises(ValueError, match="SYSTEM=N"):
        Q._limits("sfr")


def test_run_order_is_seeded_not_file_order():
    from finrag.retrieval.systems.evaluation import Question

    qs = [Question(f"q{i:02d}", "?", "DOC", [1]) for i in range(40)]
    ids = [qs[i].id for i in Q.run_order(qs)]
    assert sorted(ids) == [q.id for q in qs] and ids != [q.id for q in qs]
    backwards = list(reversed(qs))
    assert [backwards[i].id for i in Q.run_order(backwards)] == ids
    # the first quarter a stopped run finished is spread over the file, not its head
    assert max(int(i[1:]) for i in ids[:10]) >= 20


# --- end to end, tiny profile ----------------------------------------------------------------

def _cli(*args):
    from finrag.serving.cli import main

    return main([str(a) for a in args])


@pytest.mark.slow
@pytest.mark.integration
def test_bench_end_to_end_tiny(tmp_path, demo_index, demo_corpus):
    """Slow: ten `finrag bench` commands run in process: seven quality runs over one question
    by two systems (the first answers and judges it with the tiny profile's LLM), a perf run
    of four generated answers and two pareto runs, each writing its report and charts (about
    20 s on two cores)."""
    questions = demo_corpus.out_dir / "questions.jsonl"
    qout, pout, xout = tmp_path / "quality", tmp_path / "perf", tmp_path / "pareto"
    common = ["--index", demo_index, "--profile", "tiny", "--questions", questions]
    assert _cli("bench", "quality", *common, "--systems", "cbr,hdrr", "--limit", "1",
                "--out", qout, "--quiet") == 0
    report = (qout / "report.md").read_text()
    lines = report.splitlines()
    assert lines[2].startswith("Command: `finrag bench quality --index")
    assert lines[4].startswith("Config hash: `")
    for png in ("score_distribution.png", "paired_differences.png", "quality_vs_cost.png",
                "latency_cdf.png"):
        assert (qout / png).stat().st_size > 5000, png
    res = json.loads((qout / "results.json").read_text())
    for system in ("cbr", "hdrr"):
        s = res["systems"][system]
        assert s["answered"] == 1 and s["judged"] == 1 and 1 <= s["average"] <= 10
        assert s["retrieval"]["llm_calls"] >= 1 and s["tokens_per_query"] > 0
    assert res["systems"]["hdrr"]["retrieval"]["routing_accuracy"] == 1.0
    assert res["paired"]["cbr"]["score"]["n"] == 1
    per_q = [json.loads(x) for x in (qout / "per_question.jsonl").read_text().splitlines()]
    assert {(r["id"], r["system"]) for r in per_q} == {("demo-01", "cbr"), ("demo-01", "hdrr")}

    # resume: a finished run answers and judges nothing again; a record cut by a kill is redone
    answers = qout / "cache" / "answers.jsonl"
    verdicts = qout / "cache" / "verdicts.jsonl"
    before_v = verdicts.read_text() if verdicts.exists() else None  # the scorer may decide all
    assert _cli("bench", "quality", *common, "--systems", "cbr,hdrr", "--limit", "1",
                "--out", qout, "--quiet") == 0
    assert (verdicts.read_text() if verdicts.exists() else None) == before_v
    assert len(answers.read_text().splitlines()) == 2
    kept = answers.read_text().splitlines()
    answers.write_text(kept[0] + "\n" + kept[1][: len(kept[1]) // 2])
    assert _cli("bench", "quality", *common, "--systems", "cbr,hdrr", "--limit", "1",
                "--out", qout, "--quiet") == 0
    assert len(R.JsonlCache(answers).records) == 2
    assert json.loads((qout / "results.json").read_text())["systems"]["hdrr"]["judged"] == 1
    # a report of what the caches hold, for a run still going: nothing new is answered
    assert _cli("bench", "quality", *common, "--systems", "cbr,hdrr", "--limit", "2",
                "--cached-only", "--out", qout, "--quiet") == 0
    assert len(R.JsonlCache(answers).records) == 2
    assert "**Partial run**: answered so far cbr 1 of 2, hdrr 1 of 2" in \
        (qout / "report.md").read_text()
    # a report in another folder (another split of the same questions) can read this cache
    other = tmp_path / "other"
    assert _cli("bench", "quality", *common, "--systems", "cbr,hdrr", "--limit", "1",
                "--cache", qout / "cache", "--cached-only", "--out", other, "--quiet") == 0
    shared = json.loads((other / "results.json").read_text())
    assert shared["systems"]["hdrr"]["judged"] == 1 and not (other / "cache").exists()
    assert "answers and verdicts cached in `" in (other / "report.md").read_text()
    # other settings make the cached answers stale: shown as such, in no figure
    sout = tmp_path / "stale"
    shutil.copytree(qout / "cache", sout / "cache")
    assert _cli("bench", "quality", *common, "--systems", "cbr,hdrr", "--limit", "1",
                "--large-rerank", "--cached-only", "--out", sout, "--quiet") == 0
    stale = json.loads((sout / "results.json").read_text())
    assert stale["stale"] == {"cbr": 1, "hdrr": 1} and stale["systems"]["hdrr"]["judged"] == 0
    assert "**Stale answers left out**: cbr 1, hdrr 1" in (sout / "report.md").read_text()
    rows = [json.loads(x) for x in (sout / "per_question.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(r["stale"] for r in rows)
    assert len(R.JsonlCache(sout / "cache" / "answers.jsonl").records) == 2  # nothing answered
    # the scorer alone, on the cached answers: no LLM verdict is asked for
    assert _cli("bench", "quality", *common, "--systems", "cbr,hdrr", "--limit", "1",
                "--scorer-only", "--cached-only", "--out", sout, "--quiet") == 0
    alone = json.loads((sout / "results.json").read_text())
    assert alone["judge"]["model_id"] is None and not alone["stale"]["hdrr"]
    assert "no LLM judge ran" in (sout / "report.md").read_text()

    assert _cli("bench", "perf", "--in-process", *common, "--concurrency", "1,2",
                "--requests", "2", "--warmup", "0", "--out", pout, "--quiet") == 0
    perf = json.loads((pout / "results.json").read_text())
    assert [lv["concurrency"] for lv in perf["levels"]] == [1, 2]
    for lv in perf["levels"]:
        assert lv["ok"] == 2 and lv["lost"] == 0 and lv["answers_per_s"] > 0
        assert lv["bottleneck"]["stage"] in lv["stage_ms"]
        assert lv["stage_ms"]["generate"]["p50"] > 0
        assert lv["stage_ms"]["generate"]["p99"] is None  # 2 answers: no tail percentile
        assert lv["cpu_seconds"] > 0 and lv["energy"]["source"]
    text = (pout / "report.md").read_text()
    assert "## Bottleneck" in text and "Running this on a GPU server" in text
    assert (pout / "stages.png").is_file() and (pout / "throughput.png").is_file()

    assert _cli("bench", "pareto", "--quality-results", qout, "--perf-results", pout,
                "--out", xout) == 0  # one judged question: below the default minimum
    pareto = json.loads((xout / "results.json").read_text())
    assert not pareto["front"] and len(pareto["too_few_questions"]) == 2
    assert [lv["name"] for lv in pareto["perf_levels"]] == ["hdrr in-process C=1",
                                                            "hdrr in-process C=2"]
    assert not pareto["energy_axis"]  # no energy measured here: FACET on three axes
    assert _cli("bench", "pareto", "--quality-results", qout, "--perf-results", pout,
                "--min-questions", "1", "--out", xout) == 0
    pareto = json.loads((xout / "results.json").read_text())
    assert pareto["front"] and set(pareto["choices"]) == set(P.SLAS)
    assert len(pareto["rows"]) == 2 and (xout / "pareto.png").is_file()
    assert all("energy" not in c["sla"]["weights"] for c in pareto["choices"].values())


@pytest.mark.slow
@pytest.mark.integration
def test_judge_calibration_tiny(tmp_path):
    labelled = need_shared(FINANCEBENCH / "labelled_answers")
    out = tmp_path / "cal"
    args = ["bench", "judge-calibration", "--profiles", "tiny", "--labelled", labelled,
            "--configurations", "gpt-4_oracle,gpt-4_closedBook", "--limit", "1", "--out", out,
            "--quiet"]
    assert _cli(*args, "--llm-only") == 0  # the LLM judges both answers; verdicts cached
    assert "`--llm-only`: every answer" in (out / "report.md").read_text()
    before = (out / "verdicts.jsonl").read_text()
    assert len(before.splitlines()) == 2
    assert _cli(*args) == 0  # the scorer first, the LLM's verdicts from the cache
    res = json.loads((out / "results.json").read_text())
    assert res["split"] == "test" and res["rows"] == 2
    tiny = res["results"]["tiny"]
    assert tiny["n"] == 2 and set(tiny["per_configuration"]) == {"gpt-4_oracle",
                                                                 "gpt-4_closedBook"}
    assert sum(sum(v.values()) for v in tiny["confusion"].values()) == 2
    assert tiny["ci"]["kappa"]["n"] == 2
    report = (out / "report.md").read_text()
    assert "The deterministic scorer" in report and "Confusion" in report
    assert "held out" in report
    assert (out / "agreement.png").is_file() and (out / "scores_by_label.png").is_file()
    assert (out / "verdicts.jsonl").read_text() == before  # no new LLM verdict


def test_code_version_follows_the_source(tmp_path, monkeypatch):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "a.py").write_text("PROMPT = 'one'\n")
    (tmp_path / "pkg" / "sub" / "b.py").write_text("x = 1\n")
    monkeypatch.setattr(R, "REPO", tmp_path)
    first = R.code_version("pkg")
    assert R.code_version("pkg") == first
    (tmp_path / "pkg" / "a.py").write_text("PROMPT = 'two'\n")  # a prompt edit
    assert R.code_version("pkg") != first
    second = R.code_version("pkg", exclude=("pkg/sub",))
    (tmp_path / "pkg" / "sub" / "b.py").write_text("x = 2\n")
    assert R.code_version("pkg", exclude=("pkg/sub",)) == second
    assert R.code_version("pkg") != R.code_version("pkg", exclude=("pkg/sub",))


@pytest.mark.parametrize("xs, labels", [
    ([2115, 3206, 5062], ["3,000", "4,000", "5,000"]),  # within a decade: 1..9 × 10^k
    ([24.4, 48.7, 622.5], ["50", "100", "200", "500"]),  # a few decades: 1, 2, 5 × 10^k
    ([0.002, 1600], ["0.01", "0.1", "1", "10", "100", "1,000"]),  # many: 10^k
    ([], ["0.9", *map(str, range(1, 11))]),  # nothing drawn: matplotlib's default limits
])
def test_log_axis_ticks_are_plain_numbers_that_do_not_collide(xs, labels):
    from finrag.benchmarks import report as R

    plt = R.pyplot()
    fig, ax = plt.subplots()
    ax.scatter(xs, [1] * len(xs))
    ax.set_xscale("log")
    R.plain_log_ticks(ax)
    fig.canvas.draw()
    low, high = ax.get_xlim()
    shown = [t.get_text() for t in ax.get_xticklabels() if low <= t.get_position()[0] <= high]
    assert shown == labels
    assert {t.get_text() for t in ax.xaxis.get_minorticklabels()} <= {""}
    plt.close(fig)


def test_calibration_is_the_one_of_the_same_judge_on_the_same_engine(tmp_path, monkeypatch):
    import json

    from finrag.benchmarks import quality
    from finrag.benchmarks import report as R
    from finrag.benchmarks.scorer import VERSION

    def calibration(folder: str, engine: str, accuracy: float) -> None:
        path = tmp_path / folder
        path.mkdir()
        result = {"n": 100, "accuracy": accuracy, "kappa": 0.6, "llm_part": {}}
        path.joinpath("results.json").write_text(json.dumps({
            "split": "test", "scorer": {}, "scorer_version": VERSION,
            "judges": {"big": {"model_id": "judge/1.5B", "engine": engine, "scorer": VERSION}},
            "results": {"big": result}}))

    monkeypatch.setattr(R, "RESULTS", tmp_path)
    monkeypatch.setattr(R, "REPO", tmp_path.parent)
    calibration("judge_calibration_big", "TransformersEngine", 0.81)
    calibration("judge_calibration_big_llamacpp", "LlamaCppEngine", 0.77)
    on_llama = quality._calibration("big", "judge/1.5B", "LlamaCppEngine")
    on_torch = quality._calibration("big", "judge/1.5B", "TransformersEngine")
    assert on_llama["accuracy"] == 0.77 and "big_llamacpp" in on_llama["report"]
    assert on_torch["accuracy"] == 0.81 and on_torch["report"].endswith(
        "judge_calibration_big/report.md")
    assert quality._calibration("big", "judge/1.5B", "VLLMEngine") is None
    assert quality._calibration("big", "judge/other", "LlamaCppEngine") is None


def _quality_run(folder, profile, labels, judge=None, latencies=(1.0, 2.0, 3.0)):
    folder.mkdir(parents=True)
    rows = [{"id": f"q{i}", "system": "hdrr", "question_type": "metrics" if i < 2 else "novel",
             "label": label, "llm_calls": 1 if i else 0, "prompt_tokens": 1000 * (i + 1),
             "context_tokens": 900 * (i + 1)} for i, label in enumerate(labels)]
    rows.append({**rows[0], "system": "cbr", "label": "correct"})
    (folder / "per_question.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    p50 = sorted(latencies)[len(latencies) // 2]
    (folder / "results.json").write_text(json.dumps({
        "profile": profile, "split": "tune", "command": f"finrag bench quality --profile {profile}",
        "judge": judge or {"model_id": "judge-model", "engine": "LlamaCppEngine"},
        "systems": {"hdrr": {"latency_s": {"p50": p50, "p95": max(latencies)}}}}))
    return folder


def test_quality_compare_pairs_questions_and_refuses_unlike_runs(tmp_path):
    from finrag.benchmarks import quality_compare as QC

    a = _quality_run(tmp_path / "a", "cpu", ["correct", "incorrect", "correct"])
    b = _quality_run(tmp_path / "b", "cpu-large", ["correct", "correct", "refusal"],
                     latencies=(2.0, 4.0, 6.0))
    assert QC.main([str(a), str(b), "--system", "hdrr", "--out", str(tmp_path / "out")]) == 0
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    first, second = res["runs"]
    assert first["accuracy"]["estimate"] == pytest.approx(2 / 3)
    assert second["paired_vs_first"]["mean_diff"] == pytest.approx(0.0)
    assert second["paired_vs_first"]["n"] == 3 and second["changed_vs_first"] == ["q1", "q2"]
    assert first["generated"] == 2 and first["prompt_tokens_generated"] == pytest.approx(2500)
    assert second["by_type"] == {"metrics": 1.0, "novel": 0.0}
    text = (tmp_path / "out" / "report.md").read_text()
    assert "| `cpu-large` | 66.7% [" in text and "+0.0 pp [" in text
    assert "| 4.00 | 6.00 |" in text and (tmp_path / "out" / "accuracy_latency.png").is_file()
    other_questions = _quality_run(tmp_path / "c", "cpu-x", ["correct", "correct"])
    with pytest.raises(ValueError, match="answered other questions"):
        QC.compare([QC.load_run(a, "hdrr"), QC.load_run(other_questions, "hdrr")])
    other_judge = _quality_run(tmp_path / "d", "cpu-y", ["correct"] * 3,
                               judge={"model_id": "another", "engine": "LlamaCppEngine"})
    with pytest.raises(ValueError, match="judged otherwise"):
        QC.compare([QC.load_run(a, "hdrr"), QC.load_run(other_judge, "hdrr")])
    with pytest.raises(ValueError, match="no answers of system 'sfr'"):
        QC.load_run(a, "sfr")
