"""The fixed split of the FinanceBench dev questions into a ``tune`` half and a ``test`` half.

Everything that is written or chosen while looking at results — the scorer's rules (from the
human-labelled answers), prompts, pipeline settings — may look at ``tune`` questions only;
``test`` is where a claim is checked, on questions nothing was tuned on. The split is by
question (all labelled answers of one question fall on one side), stratified by FinanceBench
question type and by whether the question's filing is on disk, and ordered inside each stratum
by a seeded hash of the question id, so it does not depend on file order and never changes.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

SEED = "finrag-dev-split-1"
SPLITS = ("tune", "test")


def seeded_rank(seed: str, *parts: object) -> str:
    """A sort key that orders items by a seeded hash of ``parts``: a fixed random order that
    does not depend on file order (the splits here, the fixed samples of the benchmarks)."""
    return hashlib.sha256("|".join(map(str, (seed, *parts))).encode()).hexdigest()


def _rank(qid: str) -> str:
    return seeded_rank(SEED, qid)


def split_ids(questions: Iterable[Mapping[str, Any]]) -> dict[str, set[str]]:
    """``{"tune": ids, "test": ids}`` for FinanceBench question records (``financebench_id``
    or ``id``, ``question_type``, ``pdf_present``). Each stratum alternates tune, test, … in
    hash order, so the halves differ by at most one question per stratum."""
    strata: dict[tuple, list[str]] = defaultdict(list)
    for q in questions:
        qid = str(q.get("financebench_id") or q.get("id"))
        strata[(q.get("question_type") or "", bool(q.get("pdf_present", True)))].append(qid)
    out: dict[str, set[str]] = {name: set() for name in SPLITS}
    carry = 0  # which half an odd stratum's extra question goes to, alternating
    for key in sorted(strata):
        ids = sorted(strata[key], key=_rank)
        for i, qid in enumerate(ids):
            out[SPLITS[(i + carry) % 2]].add(qid)
        carry = (carry + len(ids)) % 2
    return out


def split_of(questions: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """question id → ``"tune"`` or ``"test"``."""
    return {qid: name for name, ids in split_ids(questions).items() for qid in ids}


def select(questions: list, split: str | None, records: Iterable[Mapping[str, Any]]) -> list:
    """The questions of one split (``None`` or ``"all"``: all of them), judged by the raw
    question ``records`` the split is computed from; order kept."""
    if split in (None, "all"):
        return list(questions)
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose from all, {', '.join(SPLITS)}")
    wanted = split_ids(records)[split]
    return [q for q in questions if str(getattr(q, "id", None) or q.get("financebench_id")) in wanted]
