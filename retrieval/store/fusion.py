"""Reciprocal rank fusion (Cormack et al., 2009)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence


def rrf(rankings: Sequence[Sequence[Hashable]], *, k: int = 60) -> list[tuple[Hashable, float]]:
    """Fuse ranked lists: each item scores sum(1 / (k + rank)) over the lists it is in (rank from
    1). Ties keep the order of first appearance, so the result is deterministic."""
    if k < 0:
        raise ValueError("rrf k must be >= 0")
    scores: dict[Hashable, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    order = {item: i for i, item in enumerate(scores)}
    return sorted(scores.items(), key=lambda kv: (-kv[1], order[kv[0]]))
