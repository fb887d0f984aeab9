"""The vector index's search paths: scoped search by gathering the scope's vectors (what the
GPU path uses: GPU indexes take no ID selector) is exactly the ID-selector search, and the
approximate whole-corpus indexes (IVF, HNSW) find what flat finds."""

import numpy as np
import pytest

from finrag.retrieval.store.vectors import VectorIndex


def unit(rows: int, dim: int = 32, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((rows, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture()
def filled():
    vectors, ids = unit(3000), np.arange(1000, 4000, dtype=np.int64)
    out = {}
    for name, kw in {"selector": dict(scoped="selector"), "gather": dict(scoped="gather")}.items():
        vi = VectorIndex(32, gpu=False, **kw)
        vi.add(ids, vectors)
        out[name] = vi
    return out, ids


def test_gathered_scope_is_exactly_the_selector_search(filled):
    index, ids = filled
    rng = np.random.default_rng(1)
    queries = unit(40, seed=2)
    compared = 0
    for q in queries:
        scope = rng.choice(ids, size=int(rng.integers(1, 600)), replace=False)
        scope = np.concatenate([scope, [10, 99_999]])  # ids not in the index are ignored
        a_ids, a_scores = index["selector"].search(q, 10, scope)
        b_ids, b_scores = index["gather"].search(q, 10, scope)
        assert list(a_ids) == list(b_ids)
        assert np.allclose(a_scores, b_scores, atol=1e-5)
        compared += 1
    assert compared == 40
    assert len(index["gather"].search(queries[0], 5, np.array([7, 8]))[0]) == 0


def test_approximate_indexes_find_what_flat_finds(filled):
    index, ids = filled
    flat = index["selector"]
    queries = unit(50, seed=3)
    truth = [set(flat.search(q, 10)[0]) for q in queries]
    for kind, kw, floor in (("ivf", {"nprobe": 10_000}, 1.0), ("hnsw", {"ef_search": 256}, 0.95)):
        approx = VectorIndex(32, gpu=False).configure(approximate=kind, **kw)
        approx.add(ids, flat.index.index.reconstruct_n(0, len(ids)))
        recall = np.mean([len(set(approx.search(q, 10)[0]) & t) / 10
                          for q, t in zip(queries, truth)])
        assert recall >= floor, (kind, recall)
        # scoped searches stay exact on an approximate index
        scope = ids[:200]
        assert list(approx.search(queries[0], 10, scope)[0]) == list(
            flat.search(queries[0], 10, scope)[0])
        # a write drops the derived structure: removed ids are never returned
        top = approx.search(queries[0], 3)[0]
        approx.remove(top)
        assert not set(approx.search(queries[0], 10)[0]) & set(top)


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="none, ivf or hnsw"):
        VectorIndex(8, approximate="lsh")
    with pytest.raises(ValueError, match="selector or gather"):
        VectorIndex(8, scoped="rows")
