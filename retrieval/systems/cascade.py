"""The rerank cascade, a retrieval policy over the rerankers of ``models.rerankers``: a light
stage, the large stage over its top candidates, and an adaptive cutoff of how many to keep."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Hashable, Sequence

from finrag.models.profiles import Profile, load_reranker
from finrag.models.rerankers import Reranker


def adaptive_cutoff(scores: Sequence[float], cumulative: float = 0.55, cliff: float = 0.15,
                    min_keep: int = 1, max_keep: int | None = None) -> int:
    """How many of ``scores`` (best first) to keep.

    Scores are min-max normalised to [0, 1]. Items are kept in order until their normalised
    scores add up to ``cumulative`` of the total, stopping before an item that falls more than
    ``cliff`` below the one above it. All-equal scores count as 1 each (so the cumulative rule
    keeps that share of the items). The result is clamped to [min_keep, max_keep] and never
    exceeds len(scores).
    """
    n = len(scores)
    if n == 0:
        return 0
    lo, hi = min(scores), max(scores)
    norm = [1.0] * n if hi == lo else [(s - lo) / (hi - lo) for s in scores]
    target = cumulative * sum(norm)
    kept, total = 0, 0.0
    for i, value in enumerate(norm):
        if i and norm[i - 1] - value > cliff:
            break
        kept, total = kept + 1, total + value
        if total >= target - 1e-12:
            break
    kept = max(kept, min_keep)
    if max_keep is not None:
        kept = min(kept, max_keep)
    return min(kept, n)


@dataclass
class StageRecord:
    """One cascade stage: what it scored (ids and scores, best first), how many came in and
    went on, wall seconds and process CPU seconds (all threads)."""

    stage: str  # light | prior | large | large_fusion | cutoff
    model_id: str | None
    ids: list
    scores: list[float]
    n_in: int
    n_out: int
    seconds: float
    cpu_seconds: float
    usage: dict | None = None  # token counts when the stage is an LLM


@dataclass
class CascadeResult:
    ids: list  # kept ids, best first
    scores: list[float]  # their scores from the last scoring stage
    stages: list[StageRecord] = field(default_factory=list)

    def stage(self, name: str) -> StageRecord | None:
        return next((s for s in self.stages if s.stage == name), None)


class Cascade:
    """Light stage → top ``large_top_m`` → large stage → adaptive cutoff → ``min_keep`` to
    ``keep_k``.

    The first ``light_top_n`` candidates (in the retriever's order) enter. Without a light
    stage the first ``large_top_m`` of them go to the large stage as they are; without a large
    stage the light stage's top ``large_top_m`` are cut by their light scores.
    """

    def __init__(self, light: Reranker | None, large: Reranker | None, *, light_top_n: int = 50,
                 large_top_m: int = 10, keep_k: int = 5, min_keep: int = 1,
                 cumulative: float = 0.55, cliff: float = 0.15, prior_fusion: bool = False,
                 large_fusion: bool = False, prior_k: int = 60):
        if light is None and large is None:
            raise ValueError("a cascade needs at least one stage")
        self.light, self.large = light, large
        self.prior_fusion, self.large_fusion, self.prior_k = prior_fusion, large_fusion, prior_k
        self.light_top_n, self.large_top_m, self.keep_k = light_top_n, large_top_m, keep_k
        self.min_keep = min_keep
        self.cumulative, self.cliff = cumulative, cliff

    @staticmethod
    def _run(stage: str, reranker: Reranker, query: str, items: list[tuple[Hashable, str]],
             n_out: int) -> StageRecord:
        t0, c0 = time.perf_counter(), time.process_time()
        raw = reranker.score(query, [text for _, text in items])
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        order = sorted(range(len(items)), key=lambda i: -raw[i])  # stable: ties keep order
        usage = getattr(reranker, "last_usage", None)
        return StageRecord(stage, reranker.model_id, [items[i][0] for i in order],
                           [float(raw[i]) for i in order], len(items), min(n_out, len(items)),
                           seconds, cpu, dict(usage) if usage else None)

    def _fuse(self, stage: str, given: list, rec: StageRecord) -> StageRecord:
        """RRF of the order ``given`` to a stage and the order it returned (``rec``)."""
        t0, c0 = time.perf_counter(), time.process_time()
        fused: dict = {}
        for ranking in (given, rec.ids):
            for r, i in enumerate(ranking, start=1):
                fused[i] = fused.get(i, 0.0) + 1.0 / (self.prior_k + r)
        order = sorted(fused, key=lambda i: -fused[i])  # stable: ties keep the given order
        return StageRecord(stage, None, order, [fused[i] for i in order], rec.n_in, rec.n_out,
                           time.perf_counter() - t0, time.process_time() - c0)

    def rerank(self, query: str, candidates: list[tuple[Hashable, str]]) -> CascadeResult:
        """With ``prior_fusion`` the light stage's ranking is fused by RRF with the
        candidates' own order (stage ``prior``)."""
        pool = list(candidates[:self.light_top_n])
        stages: list[StageRecord] = []
        text = dict(pool)
        if self.light is not None:
            rec = self._run("light", self.light, query, pool, self.large_top_m)
            stages.append(rec)
            if self.prior_fusion:  # RRF of the incoming order and the light stage's
                rec = self._fuse("prior", [i for i, _ in pool], rec)
                stages.append(rec)
            ids, scores = rec.ids[:rec.n_out], rec.scores[:rec.n_out]
        else:
            ids, scores = [i for i, _ in pool[:self.large_top_m]], None
        if self.large is not None:
            given = ids
            rec = self._run("large", self.large, query, [(i, text[i]) for i in ids], len(ids))
            stages.append(rec)
            if self.large_fusion:  # RRF of the order the large stage was given and its own
                rec = self._fuse("large_fusion", given, rec)
                stages.append(rec)
            ids, scores = rec.ids, rec.scores
        t0, c0 = time.perf_counter(), time.process_time()
        kept = adaptive_cutoff(scores, self.cumulative, self.cliff, min_keep=self.min_keep,
                               max_keep=self.keep_k)
        stages.append(StageRecord("cutoff", None, ids[:kept], scores[:kept], len(ids), kept,
                                  time.perf_counter() - t0, time.process_time() - c0))
        return CascadeResult(ids[:kept], scores[:kept], stages)


def load_cascade(profile: Profile, **shared) -> Cascade:
    """The profile's two-stage cascade with its configured cut-offs."""
    light = load_reranker(profile, "light_reranker", **shared)
    large = load_reranker(profile, "large_reranker", **shared)
    return Cascade(light, large, **profile.cascade.model_dump())
