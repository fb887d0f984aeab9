"""The local LLM judge of answer quality, and its calibration against people's labels.

A judge reads a financial question, the gold (reference) answer and a model's answer, and
returns a ``Judgement``: a score on the HDRR paper's 1..10 rubric, a FinanceBench-style label
(correct / incorrect / refusal) and a short reason. It runs on any engine of the contract in
``models.llm`` through ``generate_json``, so the output is always schema-valid JSON.

Which model judges: a profile's ``judge`` role when the profile has one, else its
``generator`` role (``judge_role``). ``load_judge(profile)`` builds that engine.

Long answers: a model answer is cut to a token budget (the engine's own tokenizer) so the
prompt fits the engine's input limit; the cut answer ends with a marker the judge is told
about, and the result says how many answers were cut and to what budget.

Calibration: ``calibrate`` judges the human-labelled FinanceBench answers
(``load_labelled``) and reports agreement of the judge's label with the people's label —
accuracy, Cohen's kappa, confusion matrix — overall and per labelled configuration
(``<model_name>_<eval_mode>``), using ``benchmarks.stats``.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from finrag.benchmarks import stats
from finrag.models.llm import SamplingParams, StructuredOutputError

LABELS = ("correct", "incorrect", "refusal")
Label = Literal["correct", "incorrect", "refusal"]
Score = Literal[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]  # an enum: the JSON grammar enforces the range

REASON_CHARS = 80  # the reason comes after score and label, so it only costs time
DEFAULT_ANSWER_TOKENS = 1024  # a model answer longer than this is cut
DEFAULT_GOLD_TOKENS = 512
TRUNCATION_MARK = " [... answer cut here for length]"
_TEMPLATE_SLACK = 48  # chat-template tokens not seen by count_tokens on the message contents


class Judgement(BaseModel):
    """One verdict. Field order is generation order."""

    model_config = ConfigDict(extra="forbid")
    score: Score = Field(description="1 (wrong or no answer) .. 10 (fully correct)")
    label: Label
    reason: str = Field(max_length=REASON_CHARS, description="one short sentence")


# --- the rubric ------------------------------------------------------------------------------

JUDGE_SYSTEM = f"""You grade answers to questions about companies' financial statements and \
filings. You get a question, the reference answer, which is taken to be right, and a candidate \
answer. Decide how well the candidate answer agrees with the reference answer. Judge only \
agreement with the reference: do not use your own knowledge, and ignore style and length.

Score from 1 to 10:
10 = fully correct: same conclusion and every figure matches the reference. Rounding \
(8.738 billion vs 8.7 billion) and other units or number formats ($1,577 million = $1.577 \
billion = 1577) are not errors.
8-9 = correct in substance, with minor omissions or imprecision that do not change the answer.
4-7 = partly correct: some key facts or figures are right, others are missing or wrong.
2-3 = mostly wrong: on topic, but the main figure or conclusion is wrong.
1 = wrong, contradicts the reference, or gives no answer.

Label:
"refusal" if the candidate declines to answer, says the information is not available or not \
found, or asks for more documents instead of answering (score 1);
"correct" if it gives the reference answer (score 8 to 10);
"incorrect" otherwise.

If the candidate answer ends with "{TRUNCATION_MARK.strip()}", it was shortened for length; \
judge the part you see.
Reply with JSON only: {{"score": <1-10>, "label": "correct" | "incorrect" | "refusal", \
"reason": "<one short sentence, at most {REASON_CHARS} characters>"}}"""


@dataclass
class JudgePrompt:
    """A judge prompt (chat messages) and whether its model answer was cut to fit."""

    messages: list[dict]
    truncated: bool = False
    answer_tokens: int | None = None  # tokens of the model answer as sent (None: not counted)


def _field(row: Any, name: str, default: Any = "") -> Any:
    if isinstance(row, Mapping):
        return row.get(name, default)
    return getattr(row, name, default)


def _text(value: Any) -> str:
    """Gold answers are sometimes numbers in FinanceBench; None is no answer."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def _cut(text: str, budget: int, count: Callable[[str], int] | None) -> tuple[str, bool, int | None]:
    """``text`` within ``budget`` tokens (a prefix cut at a space) plus the marker, whether it
    was cut, and its token count as sent."""
    if count is None:
        return text, False, None
    n = count(text)
    if n <= budget:
        return text, False, n
    from finrag.retrieval.systems.context import truncate_to_tokens

    room = max(0, budget - count(TRUNCATION_MARK))
    cut = truncate_to_tokens(text, room, count).rstrip() + TRUNCATION_MARK
    return cut, True, count(cut)


def judge_prompts(rows: Iterable[Any], *, count_tokens: Callable[[str], int] | None = None,
                  answer_tokens: int | Sequence[int] = DEFAULT_ANSWER_TOKENS,
                  gold_tokens: int = DEFAULT_GOLD_TOKENS) -> list[JudgePrompt]:
    """Judge prompts for rows with ``question``, ``gold_answer`` and ``model_answer`` (dicts
    or objects). With ``count_tokens`` (an engine's), each model answer is cut to
    ``answer_tokens`` (one budget, or one per row) and the gold answer to ``gold_tokens``;
    without it nothing is cut."""
    rows = list(rows)
    budgets = ([answer_tokens] * len(rows) if isinstance(answer_tokens, int)
               else list(answer_tokens))
    if len(budgets) != len(rows):
        raise ValueError(f"{len(budgets)} answer budgets for {len(rows)} rows")
    prompts = []
    for row, budget in zip(rows, budgets):
        question = _text(_field(row, "question"))
        gold, _, _ = _cut(_text(_field(row, "gold_answer")), gold_tokens, count_tokens)
        answer = _text(_field(row, "model_answer"))
        answer, truncated, n = _cut(answer, budget, count_tokens)
        user = (f"Question: {question}\n\nReference answer: {gold or '(none)'}\n\n"
                f"Candidate answer: {answer or '(no answer)'}\n\n"
                "Grade the candidate answer. Reply with the JSON only.")
        prompts.append(JudgePrompt([{"role": "system", "content": JUDGE_SYSTEM},
                                    {"role": "user", "content": user}], truncated, n))
    return prompts


# --- engines ---------------------------------------------------------------------------------

def judge_role(profile) -> str:
    """The role that judges on a profile: ``judge`` if the profile defines it, else
    ``generator``."""
    return "judge" if "judge" in profile.roles else "generator"


def load_judge(profile: str | None = None, role: str | None = None, **engine_kwargs):
    """The judge engine of a profile (the configured default profile when None)."""
    from finrag.models.profiles import load_config, load_llm

    prof = load_config().active(profile)
    return load_llm(prof, role or judge_role(prof), **engine_kwargs)


def engine_input_limit(engine) -> int | None:
    """The most prompt tokens the engine takes, where it says so: a transformers engine's
    ``max_input_tokens`` (and the model's position limit), a vLLM engine's ``max_model_len``;
    None when unknown."""
    limits = []
    for attr in ("max_input_tokens", "max_model_len"):
        value = getattr(engine, attr, None)
        if isinstance(value, int) and value > 0:
            limits.append(value)
    model = getattr(engine, "model", None)
    positions = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        limits.append(positions)
    try:  # vLLM keeps it on its engine's model config
        value = engine._llm.llm_engine.model_config.max_model_len
        if isinstance(value, int) and value > 0:
            limits.append(value)
    except AttributeError:
        pass
    return min(limits) if limits else None


# --- judging ---------------------------------------------------------------------------------

@dataclass
class JudgeResult:
    judgement: Judgement | None  # None: the engine gave no valid verdict (see error)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    truncated: bool = False
    error: str | None = None
    source: str = "llm"  # "scorer": settled by benchmarks.scorer, no LLM call


@dataclass
class JudgeRun:
    """Per-row results (input order) and what judging cost."""

    results: list[JudgeResult]
    model_id: str
    usage: dict[str, float | int] = field(default_factory=dict)
    truncated: int = 0  # model answers cut to fit
    answer_token_budget: int | None = None  # the largest budget a model answer had
    input_limit: int | None = None
    failures: int = 0

    @property
    def judgements(self) -> list[Judgement | None]:
        return [r.judgement for r in self.results]

    def summary(self) -> dict[str, Any]:
        """Everything but the per-row results, for a report."""
        return {"model_id": self.model_id, "usage": self.usage, "truncated": self.truncated,
                "answer_token_budget": self.answer_token_budget,
                "input_limit": self.input_limit, "failures": self.failures,
                "note": (f"{self.truncated} model answer(s) were cut to at most "
                         f"{self.answer_token_budget} tokens to fit the judge's input")
                if self.truncated else "no model answer was cut"}


def _budgets(rows: list, count: Callable[[str], int], limit: int | None, answer_tokens: int,
             max_tokens: int) -> list[int]:
    """Per row, the answer budget that keeps the whole prompt (and, for engines that count
    the output in their window, the verdict) under ``limit``."""
    if limit is None:
        return [answer_tokens] * len(rows)
    empty = [{**r, "model_answer": ""} if isinstance(r, Mapping) else
             {"question": _field(r, "question"), "gold_answer": _field(r, "gold_answer"),
              "model_answer": ""} for r in rows]
    out = []
    for p in judge_prompts(empty, count_tokens=count):
        fixed = sum(count(m["content"]) for m in p.messages) + _TEMPLATE_SLACK
        out.append(max(16, min(answer_tokens, limit - fixed - max_tokens)))
    return out


def rule_results(rows: Sequence[Any]) -> dict[int, JudgeResult]:
    """The rows the deterministic scorer (``benchmarks.scorer``) settles, by index, as results
    (no LLM call)."""
    from finrag.benchmarks.scorer import score

    out = {}
    for i, row in enumerate(rows):
        v = score(_text(_field(row, "gold_answer")), _text(_field(row, "model_answer")),
                  _text(_field(row, "question")))
        if v is not None:
            out[i] = JudgeResult(Judgement(score=v.score, label=v.label,
                                           reason=v.rule[:REASON_CHARS]), source="scorer")
    return out


def judge(engine, rows: Sequence[Any], batch_size: int = 8, progress: bool = True, *,
          answer_tokens: int = DEFAULT_ANSWER_TOKENS, input_limit: int | None = None,
          params: SamplingParams | None = None, rules: bool = True) -> JudgeRun:
    """Judge each row (``question``, ``gold_answer``, ``model_answer``) with ``engine``.

    With ``rules`` (the default), the deterministic scorer (``benchmarks.scorer``) settles the
    answers it can first (``source="scorer"``, no LLM call); the LLM judges the rest.
    Prompts go to ``engine.generate_json(..., Judgement, params)`` ``batch_size`` at a time
    (greedy, 160 new tokens by default). When a batch fails, its rows are retried one by one
    and a row that still fails gets ``judgement=None`` and its error; the run goes on. Usage
    sums the prompt and completion tokens of the verdicts kept, the engine-reported latency
    per row (``latency_s``; engines that batch give each row the batch's time) and the wall
    time of the calls (``wall_s``).
    """
    rows = list(rows)
    params = params or SamplingParams(max_tokens=160, temperature=0.0)
    decided = rule_results(rows) if rules else {}
    todo = [i for i in range(len(rows)) if i not in decided]
    limit = input_limit or engine_input_limit(engine)
    count = engine.count_tokens
    budgets = _budgets([rows[i] for i in todo], count, limit, answer_tokens, params.max_tokens)
    llm_prompts = judge_prompts([rows[i] for i in todo], count_tokens=count,
                                answer_tokens=budgets)
    prompts: list[JudgePrompt | None] = [None] * len(rows)
    for i, p in zip(todo, llm_prompts):
        prompts[i] = p
    results: list[JudgeResult] = [decided.get(i) or JudgeResult(None, truncated=p.truncated)
                                  for i, p in enumerate(prompts)]
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(todo), desc="judge", unit="answer", file=sys.stderr)
    calls, wall = 0, 0.0
    for start in range(0, len(todo), max(1, batch_size)):
        idx = todo[start:start + max(1, batch_size)]
        groups = [idx]
        while groups:
            group = groups.pop(0)
            t0 = time.perf_counter()
            try:
                out = engine.generate_json([prompts[i].messages for i in group], Judgement, params)
                error = None
            except (StructuredOutputError, ValueError) as exc:
                out, error = None, f"{type(exc).__name__}: {exc}"
            wall += time.perf_counter() - t0
            calls += 1
            if out is not None:
                for i, (verdict, comp) in zip(group, out):
                    results[i] = JudgeResult(verdict, comp.prompt_tokens, comp.completion_tokens,
                                             comp.latency_s, prompts[i].truncated)
            elif len(group) > 1:
                groups = [[i] for i in group] + groups  # find which row fails
            else:
                results[group[0]].error = error
        if bar is not None:
            bar.update(len(idx))
    if bar is not None:
        bar.close()
    kept = [r for r in results if r.judgement is not None]
    usage = {"prompt_tokens": sum(r.prompt_tokens for r in kept),
             "completion_tokens": sum(r.completion_tokens for r in kept),
             "latency_s": sum(r.latency_s for r in kept), "wall_s": wall, "calls": calls,
             "rows": len(rows), "by_rule": len(decided)}
    return JudgeRun(results, getattr(engine, "model_id", type(engine).__name__), usage,
                    truncated=sum(p.truncated for p in llm_prompts),
                    answer_token_budget=max(budgets) if budgets else None, input_limit=limit,
                    failures=len(rows) - len(kept))


# --- FinanceBench labels ---------------------------------------------------------------------

_LABEL_MAP = {"correct answer": "correct", "correct": "correct",
              "incorrect answer": "incorrect", "incorrect": "incorrect", "wrong": "incorrect",
              "refusal": "refusal", "failure to answer": "refusal", "refused": "refusal"}


def map_label(label: str) -> str:
    """A FinanceBench label ("Correct Answer" | "Incorrect Answer" | "Refusal", any case, or
    already short) → "correct" | "incorrect" | "refusal"; anything else raises ValueError."""
    key = " ".join(str(label).strip().lower().replace("_", " ").split())
    if key not in _LABEL_MAP:
        raise ValueError(f"unknown FinanceBench label {label!r}")
    return _LABEL_MAP[key]


_REQUIRED = ("financebench_id", "model_name", "eval_mode", "question", "gold_answer",
             "model_answer", "label")


def load_labelled(folder: str | Path) -> list[dict[str, Any]]:
    """The human-labelled answers in ``folder/*.jsonl`` (files in name order).

    Each row keeps the file's fields, with ``gold_answer`` and ``model_answer`` as text,
    ``label`` mapped by ``map_label`` (the original in ``label_raw``), ``configuration`` =
    ``<model_name>_<eval_mode>`` and ``source`` = the file name. A line that is not JSON,
    lacks a field or has an unknown label is skipped with a warning.
    """
    folder = Path(folder)
    files = sorted(folder.glob("*.jsonl"))
    if not files:
        raise FileNotFoundError(f"no *.jsonl files in {folder}")
    rows = []
    for path in files:
        with path.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    raw = json.loads(line)
                    if not isinstance(raw, dict):
                        raise ValueError("not a JSON object")
                    missing = [k for k in _REQUIRED if k not in raw]
                    if missing:
                        raise ValueError(f"missing {', '.join(missing)}")
                    label = map_label(raw["label"])
                except ValueError as exc:  # json.JSONDecodeError is a ValueError
                    warnings.warn(f"{path.name}:{lineno}: skipped ({exc})", stacklevel=2)
                    continue
                rows.append({**raw, "gold_answer": _text(raw["gold_answer"]),
                             "model_answer": _text(raw["model_answer"]), "label": label,
                             "label_raw": raw["label"],
                             "configuration": f"{raw['model_name']}_{raw['eval_mode']}",
                             "source": path.name})
    return rows


# --- calibration -----------------------------------------------------------------------------

def agreement(human: Sequence[str], judged: Sequence[str]) -> dict[str, Any]:
    """accuracy, kappa, confusion (human label → judge label) and n of two label lists."""
    return {"accuracy": stats.accuracy(human, judged),
            "kappa": stats.cohen_kappa(human, judged, labels=LABELS),
            "confusion": stats.confusion_matrix(human, judged, labels=LABELS), "n": len(human)}


def calibrate(engine, rows: Sequence[Mapping[str, Any]], *, run: JudgeRun | None = None,
              **judge_kwargs) -> dict[str, Any]:
    """Agreement of the judge's labels with the people's on labelled rows (``load_labelled``).

    Returns ``accuracy``, ``kappa``, ``confusion`` (``{human: {judge: count}}``) and ``n`` over
    the rows the judge gave a verdict for; ``per_configuration``
    (``{configuration: {accuracy, kappa, n}}``); ``mean_score_by_label`` (the judge's mean
    1..10 score per human label: correct answers should score well above incorrect ones);
    ``score_rates`` of all verdicts; and the run's ``judge`` summary (model, usage, answers cut
    to fit, failures). ``run`` reuses verdicts already made for these rows; other keyword
    arguments go to ``judge``.
    """
    rows = list(rows)
    run = run or judge(engine, rows, **judge_kwargs)
    if len(run.results) != len(rows):
        raise ValueError(f"{len(run.results)} judgements for {len(rows)} rows")
    human, judged, scores = [], [], []
    by_source: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))
    by_config: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))
    by_label: dict[str, list[int]] = defaultdict(list)
    for row, result in zip(rows, run.results):
        if result.judgement is None:
            continue
        h = map_label(row["label"])
        human.append(h)
        judged.append(result.judgement.label)
        scores.append(result.judgement.score)
        by_label[h].append(result.judgement.score)
        by_source[result.source][0].append(h)
        by_source[result.source][1].append(result.judgement.label)
        config = row.get("configuration") or f"{row.get('model_name')}_{row.get('eval_mode')}"
        by_config[config][0].append(h)
        by_config[config][1].append(result.judgement.label)
    overall = agreement(human, judged)
    per_config = {}
    for config in sorted(by_config):
        h, j = by_config[config]
        per_config[config] = {"accuracy": stats.accuracy(h, j),
                              "kappa": stats.cohen_kappa(h, j, labels=LABELS), "n": len(h)}
    sources = {src: {"accuracy": stats.accuracy(h, j), "n": len(h)}
               for src, (h, j) in sorted(by_source.items())}
    return {**overall, "per_configuration": per_config, "by_source": sources,
            "mean_score_by_label": {k: sum(v) / len(v) for k, v in sorted(by_label.items())},
            "score_rates": stats.score_rates(scores), "judge": run.summary()}



# --- cached judging --------------------------------------------------------------------------

def judge_config(engine, *, answer_tokens: int = DEFAULT_ANSWER_TOKENS,
                 params: SamplingParams | None = None) -> dict[str, Any]:
    """What decides the LLM's verdict besides the row: the judge model, its rubric and
    sampling. (The deterministic scorer is applied on top and never cached.)"""
    import hashlib

    params = params or SamplingParams(max_tokens=160, temperature=0.0)
    return {"model_id": getattr(engine, "model_id", type(engine).__name__),
            "engine": type(engine).__name__,  # the same weights read otherwise judge otherwise
            "rubric_sha256": hashlib.sha256(JUDGE_SYSTEM.encode()).hexdigest()[:16],
            "code_sha256": hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16],
            "answer_tokens": answer_tokens, "max_tokens": params.max_tokens,
            "temperature": params.temperature}


def result_record(result: JudgeResult) -> dict[str, Any]:
    d = asdict(result)
    d["judgement"] = result.judgement.model_dump() if result.judgement is not None else None
    return d


def result_from_record(rec: Mapping[str, Any]) -> JudgeResult:
    verdict = rec.get("judgement")
    return JudgeResult(Judgement(**verdict) if verdict else None,
                       **{k: rec[k] for k in ("prompt_tokens", "completion_tokens", "latency_s",
                                              "truncated", "error", "source") if k in rec})


def judge_cached(engine, rows: Sequence[Any], keys: Sequence[str], cache, *, chunk: int = 8,
                 progress: bool = True, desc: str = "judge", rules: bool = True,
                 cached_only: bool = False, **judge_kwargs) -> JudgeRun:
    """``judge`` with every LLM verdict kept in ``cache`` (a ``benchmarks.report.JsonlCache``)
    under its row's key as soon as its chunk of ``chunk`` rows is judged: rows already there
    are not judged again, so a killed run resumes. ``keys`` must name the row *and* the LLM
    judge's configuration (``judge_config``). With ``rules``, rows the deterministic rules
    settle get the rule's verdict (computed afresh, never cached) and no LLM call. A verdict
    that failed is kept too (greedy decoding fails the same way again). Returns a JudgeRun
    over all rows in order; its usage counts only the calls this run made
    (``usage['cached']``: rows whose LLM verdict was already there). ``cached_only``: call no
    LLM; a row with neither a rule's nor a cached verdict gets none."""
    rows, keys = list(rows), list(keys)
    if len(rows) != len(keys):
        raise ValueError(f"{len(keys)} keys for {len(rows)} rows")
    decided = rule_results(rows) if rules else {}
    need = [i for i in range(len(rows)) if i not in decided]
    todo = [] if cached_only else [i for i in need if keys[i] not in cache]
    bar = None
    if progress and todo:
        from tqdm import tqdm

        bar = tqdm(total=len(todo), desc=desc, unit="answer", file=sys.stderr)
    runs = []
    for start in range(0, len(todo), max(1, chunk)):
        ids = todo[start:start + max(1, chunk)]
        run = judge(engine, [rows[i] for i in ids], batch_size=chunk, progress=False,
                    rules=False, **judge_kwargs)
        runs.append(run)
        for i, result in zip(ids, run.results):
            cache.add(keys[i], {"result": result_record(result)})
        if bar is not None:
            bar.update(len(ids))
    if bar is not None:
        bar.close()
    results = [decided.get(i) or (result_from_record(cache.get(keys[i])["result"])
                                  if keys[i] in cache else
                                  JudgeResult(None, error="not judged (cached verdicts only)"))
               for i in range(len(rows))]
    usage: dict[str, float | int] = {k: sum(r.usage.get(k, 0) for r in runs) for k in
                                     ("prompt_tokens", "completion_tokens", "latency_s",
                                      "wall_s", "calls")}
    usage.update(rows=len(rows), cached=sum(keys[i] in cache for i in need) - len(todo),
                 by_rule=len(decided))
    return JudgeRun(results, getattr(engine, "model_id", type(engine).__name__), usage,
                    truncated=sum(r.truncated for r in results),
                    answer_token_budget=max((r.answer_token_budget or 0 for r in runs),
                                            default=None) or None,
                    input_limit=next((r.input_limit for r in runs), None),
                    failures=sum(r.judgement is None for r in results))
