"""One answer on its way through a system: the question's checks, what the stages record
(``Run``), and its energy once it is written."""

from __future__ import annotations

import re
import time
from contextlib import contextmanager
from typing import Any, Iterator

from finrag.retrieval.answer import Answer, LLMCall, Routing

MAX_QUESTION_CHARS = 2000
MAX_ROUTED_DOCUMENTS = 8  # filings one question may be answered from


class QuestionError(ValueError):
    """A question the systems cannot take (empty, too long)."""


# control characters other than tab and newlines, and halves of UTF-16 pairs (which cannot
# be encoded as UTF-8, so no reply could quote them)
_NOT_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


def check_question(question: str) -> str:
    if not isinstance(question, str) or not question.strip():
        raise QuestionError("empty question: ask something about a filing")
    question = question.strip()
    if len(question) > MAX_QUESTION_CHARS:
        raise QuestionError(f"question is {len(question)} characters; the limit is "
                            f"{MAX_QUESTION_CHARS}")
    if _NOT_TEXT.search(question):
        raise QuestionError("the question holds characters that are not text (a control "
                            "character or a lone UTF-16 surrogate)")
    return question


def check_fan_out(routing: Routing) -> None:
    """Each routed filing costs a search and a rerank (a whole read for SFR): bounded."""
    if len(routing.doc_ids) > MAX_ROUTED_DOCUMENTS:
        raise QuestionError(f"the question names {len(routing.doc_ids)} filings; at most "
                            f"{MAX_ROUTED_DOCUMENTS} are read for one question: ask about "
                            f"fewer companies or periods")


class Run:
    """What one answer accumulates while the stages run: its ``Answer`` record, and the
    metered windows it is charged for (``(reading, share)``: ``share`` of a window shared
    with other answers)."""

    def __init__(self, question: str, system: str, profile: str,
                 model_ids: dict[str, str] | None = None):
        self.answer = Answer(query=question, system=system, answer="", profile=profile,
                             model_ids=dict(model_ids or {}))
        self.readings: list[tuple[Any, float]] = []

    def finished(self) -> Answer:
        """The answer with its total time and energy, from the windows it was charged."""
        self.answer.timings_ms["total"] = round(
            sum(r.seconds for r, _ in self.readings) * 1000, 3)
        self.answer.energy = energy(self.readings)
        return self.answer

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.add_time(name, (time.perf_counter() - t0) * 1000)

    def add_time(self, name: str, ms: float) -> None:
        self.answer.timings_ms[name] = round(self.answer.timings_ms.get(name, 0.0) + ms, 3)

    def record(self, stage: str, items: list, scores: list[float] | None = None) -> None:
        rows = self.answer.retrieved.setdefault(stage, [])
        for i, item in enumerate(items):
            score = scores[i] if scores is not None else getattr(item, "score", None)
            rows.append({"chunk_id": item.chunk_id, "doc_id": item.doc_id,
                         "first_page": item.first_page, "last_page": item.last_page,
                         "score": None if score is None else round(float(score), 6)})

    def call(self, role: str, model_id: str, completion) -> None:
        self.answer.calls.append(LLMCall(role, model_id, completion.prompt_tokens,
                                         completion.completion_tokens,
                                         round(completion.latency_s * 1000, 3)))


def energy(readings: list[tuple[Any, float]]) -> dict[str, Any]:
    """One answer's energy from its measured windows; ``(reading, share)`` charges this answer
    ``share`` of a window (a batched generation: its share of the batch's tokens). Windows of a
    meter that reads no counter (source unavailable: steps served elsewhere) are left out of
    the joules when others were measured, and the scope says so."""
    measured = [(r, w) for r, w in readings if r.source != "unavailable"]
    parts = measured or readings
    joules = [r.joules * w if r.joules is not None else None for r, w in parts]
    scope = " + ".join(dict.fromkeys(r.scope for r, _ in parts if r.scope)) or None
    if any(w < 1 for _, w in parts) and scope:
        scope = f"{scope}; generation batched with other answers, its energy split by token share"
    if measured and len(measured) < len(readings):
        scope = f"{scope}; the other steps ran where no counter was read: not included"
    return {"joules": None if None in joules else round(sum(joules), 6),
            "source": parts[0][0].source, "scope": scope,
            "cpu_seconds": round(sum(r.cpu_seconds * w for r, w in readings), 3)}
