"""benchmarks.vector_index at a tiny size (5,000 vectors of 64 dims, one thread): exact search
by streaming, recall against it, sizes, the refusal of what does not fit, and the report."""

import json

import numpy as np
import pytest

from finrag.benchmarks import report as R
from finrag.benchmarks import vector_index as VI
from finrag.benchmarks import vector_index_report as VR


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    import faiss

    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        gen = VI.Generator(dim=64, centres=64, block=1500)  # sizes cut across blocks
        n = 5000
        nlist = VI.nlist_for(n)
        s = VI.Settings(dim=64, nprobe=(4, nlist), ef_search=(16, 64), pq_m=16)
        result = VI.run([3000, n], ["flat", "ivf", "ivfpq"], s, gen, queries=40,
                        timed_queries=30)
    finally:
        faiss.omp_set_num_threads(threads)
    out = tmp_path_factory.mktemp("vector_index")
    result |= {"command": "test", "target": 20_000_000}
    R.write_json(out / "results.json", result)
    VR.render(result, out)
    return gen, s, result, out


def _row(result, option, n):
    return next(r for r in result["rows"] if r["option"] == option and r["size"] == n)


def test_streamed_truth_is_the_exact_top_k():
    gen = VI.Generator(dim=32, centres=16, block=700)
    q = gen.queries(12)
    truth = VI.ground_truth(gen, [1000, 2500], q, 10, timed=3)
    for n in (1000, 2500):
        base = np.concatenate([x for _, x in gen.base(n)])
        assert base.shape == (n, 32)
        exact = np.argsort(-(q @ base.T), axis=1, kind="stable")[:, :10]
        assert VI.recall_at_k(list(truth[n]["ids"]), exact) == 1.0
        assert len(truth[n]["stream_ms"]) == 3
    # a smaller size is a prefix of a larger one; queries are not base vectors
    assert np.array_equal(np.concatenate([x for _, x in gen.base(1000)]), base[:1000])
    assert (q @ base.T).max() < 0.9999


def test_generated_vectors_are_unit_and_clustered():
    gen = VI.Generator(dim=256, centres=32, block=2000)
    x = gen.block_at(0)
    assert x.dtype == np.float32 and np.allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-5)
    nearest = np.sort(x[:200] @ x.T, axis=1)[:, -2]  # the nearest other vector
    uniform = np.random.default_rng(0).standard_normal((2000, 256))
    uniform /= np.linalg.norm(uniform, axis=1, keepdims=True)
    assert np.median(nearest) > np.median(np.sort(uniform[:200] @ uniform.T, axis=1)[:, -2]) + 0.2


def test_recall_and_sizes(tiny):
    gen, s, result, _ = tiny
    nlist = VI.nlist_for(5000)
    flat = _row(result, "flat", 5000)
    assert flat["status"] == "measured" and flat["implementation"] == "VectorIndex"
    assert flat["searches"][0]["recall"] == 1.0
    ivf = _row(result, "ivf", 5000)
    every_list = next(x for x in ivf["searches"] if x["setting"] == f"nprobe={nlist}")
    assert every_list["recall"] >= 0.999
    assert next(x for x in ivf["searches"] if x["setting"] == "nprobe=4")["recall"] < 1.0
    pq = _row(result, "ivfpq", 5000)
    assert pq["implementation"] == "faiss"
    assert pq["bytes_per_vector"] < flat["bytes_per_vector"] / 4
    assert flat["bytes_per_vector"] == pytest.approx(64 * 4 + 8, rel=0.01)
    for r in (flat, ivf, pq):
        assert r["build_s"] > 0 and all(x["p50_ms"] > 0 and x["p95_ms"] >= x["p50_ms"]
                                        for x in r["searches"])
    stream = _row(result, VI.STREAM, 5000)["searches"][0]
    assert stream["queries"] == 30 and stream["p95_ms"] is not None


def test_what_does_not_fit_is_not_run_and_says_why():
    gen = VI.Generator(dim=16, centres=8, block=500)
    s = VI.Settings(dim=16)
    result = VI.run([1000], ["flat", "ivfpq"], s, gen, queries=5, timed_queries=5,
                    memory_limit=1000)
    for option in ("flat", "ivfpq"):
        row = _row(result, option, 1000)
        assert row["status"] == "not run" and "GiB at its peak (computed" in row["reason"]
        assert "index_bytes" not in row and "searches" not in row
    assert VR.project(result | {"target": 10**6}, 10**6)[0]["option"] == VI.STREAM


def test_projection_from_measured_rows(tiny):
    _, _, result, _ = tiny
    proj = {(p["option"], p["setting"]): p for p in VR.project(result, 20_000_000)}
    flat = proj[("flat", "exact")]
    assert flat["index_bytes"] == pytest.approx(_row(result, "flat", 5000)["bytes_per_vector"]
                                                * 20_000_000)
    pq = proj[("ivfpq", "nprobe=4")]
    assert pq["index_bytes"] < flat["index_bytes"] / 4
    ivf = proj[("ivf", "nprobe=4")]
    assert ivf["resident_bytes"] > ivf["index_bytes"]  # VectorIndex keeps its flat index too
    assert all(p["p50_ms"] > 0 for p in proj.values())


def test_report_renders_and_report_only_writes_it_again(tiny, tmp_path):
    _, _, result, out = tiny
    report = (out / "report.md").read_text()
    assert (out / "recall_latency.png").stat().st_size > 1000
    assert (out / "size_build.png").stat().st_size > 1000
    assert "| 5,000 | ivfpq | faiss |" in report and "Projected to 20,000,000" in report
    (out / "report.md").unlink()
    assert VI.main(["--report-only", "--out", str(out)]) == 0
    assert (out / "report.md").read_text() == report
    docs = tmp_path / "page.md"
    docs.write_text(f"before\n{VR.DOCS_BEGIN}\nold\n{VR.DOCS_END}\nafter\n")
    VI.main(["--report-only", "--out", str(out), "--write-docs", str(docs)])
    text = docs.read_text()
    assert "old" not in text and text.startswith("before\n") and text.endswith("after\n")
    assert (out / "docs_snippet.md").read_text().strip() in text
    assert json.loads((out / "results.json").read_text())["settings"]["sizes"] == [3000, 5000]
