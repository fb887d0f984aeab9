"""k-reciprocal re-ranking over a candidate neighbourhood (Zhong et al., 2017; PRISM's candidate
refinement).

A candidate is likely relevant when the query is among its nearest neighbours as much as it is
among the query's. Over the query and its candidates (unit vectors), each node's k-reciprocal
set R(p, k1) holds the nodes that are in p's k1 nearest and have p in theirs; it is widened by
the half-size sets of its members that overlap it by 2/3. Each node is then encoded as a vector
of Gaussian weights over its set, and the Jaccard distance between the query's encoding and a
candidate's says how much their neighbourhoods agree. The final distance blends it with the
stage's own ranking: ``lam * d_stage + (1 - lam) * d_jaccard``.
"""

from __future__ import annotations

import numpy as np


def _reciprocal(ranks: np.ndarray, p: int, k: int) -> np.ndarray:
    """Nodes in p's k nearest (itself included) that also have p in their k nearest."""
    forward = ranks[p, : k + 1]
    back = ranks[forward, : k + 1]
    return forward[np.any(back == p, axis=1)]


def k_reciprocal_scores(query_vector: np.ndarray, vectors: np.ndarray, stage_scores: list[float],
                        *, k1: int = 10, k2: int = 3, lam: float = 0.5) -> list[float]:
    """New scores (higher = better) for candidates with unit ``vectors`` (n, d) and the
    stage's ``stage_scores``. With fewer than three candidates the stage's order stands."""
    n = len(stage_scores)
    if n < 3:
        return [float(s) for s in stage_scores]
    if vectors.shape[0] != n:
        raise ValueError(f"{vectors.shape[0]} vectors for {n} candidates")
    nodes = np.vstack([np.asarray(query_vector, dtype=np.float32)[None, :],
                       np.asarray(vectors, dtype=np.float32)])
    nodes /= np.maximum(np.linalg.norm(nodes, axis=1, keepdims=True), 1e-12)
    dist = np.clip(2.0 - 2.0 * nodes @ nodes.T, 0.0, 4.0)  # squared Euclidean on the sphere
    dist /= max(float(dist.max()), 1e-12)
    ranks = np.argsort(dist, axis=1, kind="stable")
    k1 = max(1, min(k1, n))
    size = n + 1
    encoded = np.zeros((size, size), dtype=np.float64)
    for p in range(size):
        core = _reciprocal(ranks, p, k1)
        expanded = set(core.tolist())
        half = max(1, int(round(k1 / 2)))
        for c in core:
            cand = _reciprocal(ranks, int(c), half)
            if len(np.intersect1d(cand, core)) > 2 / 3 * len(cand):
                expanded.update(cand.tolist())
        idx = np.fromiter(expanded, dtype=np.int64)
        weights = np.exp(-dist[p, idx])
        encoded[p, idx] = weights / weights.sum()
    if k2 > 1:  # local query expansion: average each encoding over its k2 nearest
        encoded = np.vstack([encoded[ranks[p, :k2]].mean(axis=0) for p in range(size)])
    q = encoded[0]
    inter = np.minimum(q[None, :], encoded[1:]).sum(axis=1)
    union = np.maximum(q[None, :], encoded[1:]).sum(axis=1)
    jaccard = 1.0 - inter / np.maximum(union, 1e-12)
    s = np.asarray(stage_scores, dtype=np.float64)
    lo, hi = s.min(), s.max()
    d_stage = np.zeros(n) if hi == lo else (hi - s) / (hi - lo)
    final = lam * d_stage + (1.0 - lam) * jaccard
    return (-final).tolist()
