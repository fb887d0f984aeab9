"""benchmarks.judge: labelled answers, label mapping, prompts, the judge loop and calibration
(with a scripted engine), and one real judge call with the tiny profile's SmolLM2-135M."""

import json
import warnings

import pytest

from finrag.benchmarks import judge as J
from finrag.models.llm import Completion, StructuredOutputError

from conftest import FINANCEBENCH, need_shared

LABELLED = FINANCEBENCH / "labelled_answers"


# --- labels and the labelled files -----------------------------------------------------------

def test_map_label():
    assert J.map_label("Correct Answer") == "correct"
    assert J.map_label("Incorrect Answer") == "incorrect"
    assert J.map_label("Refusal") == "refusal"
    assert J.map_label(" correct  answer ") == "correct"
    assert J.map_label("incorrect") == "incorrect"  # already mapped: unchanged
    with pytest.raises(ValueError, match="unknown"):
        J.map_label("Partially correct")


def test_load_labelled_real_folder():
    folder = need_shared(LABELLED)
    rows = J.load_labelled(folder)
    files = sorted(folder.glob("*.jsonl"))
    lines = sum(1 for f in files for line in f.read_text().splitlines() if line.strip())
    assert len(rows) == lines  # the published files have no malformed line
    assert {r["configuration"] for r in rows} == {f.stem for f in files}
    assert {r["label"] for r in rows} == set(J.LABELS)
    for r in rows:
        assert isinstance(r["gold_answer"], str) and isinstance(r["model_answer"], str)
        assert r["question"] and r["financebench_id"].startswith("financebench_id_")
        assert J.map_label(r["label_raw"]) == r["label"]
    numeric = next(r for r in rows if r["financebench_id"] == "financebench_id_03029")
    assert numeric["gold_answer"] == "1577"  # a number in the file, text here


def test_load_labelled_skips_malformed_lines(tmp_path):
    good = {"financebench_id": "financebench_id_1", "model_name": "m", "eval_mode": "oracle",
            "question": "Q?", "gold_answer": 8.7, "model_answer": "8.738", "label": "Refusal"}
    lines = [json.dumps(good), "{not json", json.dumps({**good, "label": "maybe"}),
             json.dumps({k: v for k, v in good.items() if k != "question"}), "", "[1, 2]"]
    (tmp_path / "m_oracle.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "ignored.txt").write_text("not read")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = J.load_labelled(tmp_path)
    assert len(rows) == 1 and len(caught) == 4
    assert all("skipped" in str(w.message) for w in caught)
    assert rows[0]["gold_answer"] == "8.7" and rows[0]["label"] == "refusal"
    assert rows[0]["configuration"] == "m_oracle" and rows[0]["source"] == "m_oracle.jsonl"
    with pytest.raises(FileNotFoundError):
        J.load_labelled(tmp_path / "missing")


# --- prompts ---------------------------------------------------------------------------------

ROW = {"question": "What is the FY2018 capital expenditure amount (in USD millions) for 3M?",
       "gold_answer": 1577, "model_answer": "3M spent $1,577 million on capital expenditure."}


def words(text: str) -> int:
    return len(text.split())


def test_judge_prompts_contain_question_gold_and_answer():
    [p] = J.judge_prompts([ROW])
    assert p.messages[0]["role"] == "system" and "1 to 10" in p.messages[0]["content"]
    user = p.messages[1]["content"]
    assert ROW["question"] in user and "1577" in user and ROW["model_answer"] in user
    assert not p.truncated and p.answer_tokens is None
    [empty] = J.judge_prompts([{**ROW, "model_answer": None}])
    assert "(no answer)" in empty.messages[1]["content"]


def test_judge_prompts_truncate_long_answers():
    long = {**ROW, "model_answer": " ".join(f"word{i}" for i in range(500))}
    short, cut = J.judge_prompts([ROW, long], count_tokens=words, answer_tokens=50)
    assert not short.truncated and ROW["model_answer"] in short.messages[1]["content"]
    assert cut.truncated and cut.answer_tokens <= 50
    user = cut.messages[1]["content"]
    assert "word0 " in user and "word499" not in user and J.TRUNCATION_MARK in user
    # per-row budgets
    a, b = J.judge_prompts([long, long], count_tokens=words, answer_tokens=[600, 20])
    assert not a.truncated and b.truncated and b.answer_tokens <= 20


# --- the judge loop with a scripted engine ---------------------------------------------------

class ScriptedEngine:
    """Judges by looking for the gold answer in the candidate; fails on 'BAD'."""

    model_id = "scripted"
    max_input_tokens = 600

    def __init__(self):
        self.calls = []

    def count_tokens(self, text):
        return words(text)

    def generate_json(self, prompts, schema, params=None):
        self.calls.append(len(prompts))
        out = []
        for messages in prompts:
            user = messages[-1]["content"]
            assert words(user) + words(messages[0]["content"]) <= self.max_input_tokens
            if "BAD" in user:
                raise StructuredOutputError("no valid JSON")
            gold = user.split("Reference answer: ")[1].split("\n")[0]
            answer = user.split("Candidate answer: ")[1].split("\n")[0]
            if "not found" in answer.lower():
                verdict = schema(score=1, label="refusal", reason="declined")
            elif gold in answer:
                verdict = schema(score=10, label="correct", reason="matches")
            else:
                verdict = schema(score=3, label="incorrect", reason="differs")
            out.append((verdict, Completion(verdict.model_dump_json(), words(user), 12, 0.5)))
        return out


def labelled(gold, answer, label, config="m_oracle"):
    return {"question": "Q?", "gold_answer": gold, "model_answer": answer, "label": label,
            "configuration": config}


def test_judge_usage_failures_and_truncation():
    engine = ScriptedEngine()
    rows = [labelled("42", "It is 42.", "correct"), labelled("7", "BAD output", "incorrect"),
            labelled("9", "Not found in the filings.", "refusal"),
            labelled("5", "x " * 2000 + "5", "correct")]
    run = J.judge(engine, rows, batch_size=3, progress=False, rules=False)
    assert [r.judgement.label if r.judgement else None for r in run.results] == \
        ["correct", None, "refusal", "incorrect"]  # the long answer lost its "5" to the cut
    assert run.failures == 1 and "StructuredOutputError" in run.results[1].error
    assert engine.calls == [3, 1, 1, 1, 1]  # the failing batch was retried row by row
    assert run.truncated == 1 and run.results[3].truncated
    assert run.input_limit == 600 and run.answer_token_budget <= J.DEFAULT_ANSWER_TOKENS
    assert run.usage["completion_tokens"] == 3 * 12 and run.usage["calls"] == 5
    assert run.usage["prompt_tokens"] > 0 and run.usage["latency_s"] == pytest.approx(1.5)
    assert "cut" in run.summary()["note"]


def test_calibrate_with_scripted_engine():
    rows = [labelled("42", "It is 42.", "Correct Answer", "a_oracle"),
            labelled("42", "It is 41.", "Incorrect Answer", "a_oracle"),
            labelled("9", "Not found.", "Refusal", "b_closedBook"),
            labelled("9", "It is 9.", "Incorrect Answer", "b_closedBook"),  # judge disagrees
            labelled("3", "BAD", "Correct Answer", "b_closedBook")]  # judge fails: left out
    out = J.calibrate(ScriptedEngine(), rows, progress=False, rules=False)
    assert out["n"] == 4 and out["accuracy"] == pytest.approx(0.75)
    # human (c, i, r, i) vs judge (c, i, r, c): p_o = 3/4, p_e = (1*2 + 2*1 + 1*1)/16 = 5/16
    assert out["kappa"] == pytest.approx((0.75 - 5 / 16) / (1 - 5 / 16))
    assert out["confusion"]["incorrect"] == {"correct": 1, "incorrect": 1, "refusal": 0}
    assert out["per_configuration"]["a_oracle"] == {"accuracy": 1.0, "kappa": 1.0, "n": 2}
    assert out["per_configuration"]["b_closedBook"]["n"] == 2
    assert out["mean_score_by_label"] == {"correct": 10.0, "incorrect": 6.5, "refusal": 1.0}
    assert out["score_rates"]["n"] == 4 and out["judge"]["failures"] == 1


def test_judge_role_falls_back_to_generator():
    from finrag.models.profiles import load_config

    profile = load_config(env={}).active("tiny")
    assert J.judge_role(profile) == ("judge" if "judge" in profile.roles else "generator")
    with_judge = profile.model_copy(update={"roles": {**profile.roles,
                                                      "judge": profile.roles["generator"]}})
    assert J.judge_role(with_judge) == "judge"


# --- one real judge call ---------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.integration
def test_tiny_judge_end_to_end():
    from finrag.models.profiles import load_config, load_llm, resolve_role

    rows = J.load_labelled(need_shared(LABELLED))
    picked = [next(r for r in rows if r["label"] == label) for label in J.LABELS]
    profile = load_config(env={}).active("tiny-smollm2")
    resolve_role(profile, "generator", prepare=True)  # the packaged GGUF, converted once
    engine = load_llm(profile, "generator")
    budget = 60
    run = J.judge(engine, picked, batch_size=3, progress=False, answer_tokens=budget,
                  rules=False)
    assert len(run.results) == 3 and run.failures == 0
    for row, result in zip(picked, run.results):
        assert isinstance(result.judgement, J.Judgement)
        assert 1 <= result.judgement.score <= 10 and result.judgement.label in J.LABELS
        assert len(result.judgement.reason) <= J.REASON_CHARS
        assert result.prompt_tokens > 0 and 0 < result.completion_tokens <= 320
        assert result.truncated == (engine.count_tokens(row["model_answer"]) > budget)
    assert run.truncated == sum(r.truncated for r in run.results)
    assert run.usage["prompt_tokens"] == sum(r.prompt_tokens for r in run.results)
    assert run.usage["completion_tokens"] == sum(r.completion_tokens for r in run.results)
    assert run.usage["wall_s"] > 0 and run.model_id == "HuggingFaceTB/SmolLM2-135M-Instruct"
