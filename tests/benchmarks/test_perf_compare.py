"""benchmarks.perf_compare: the block order, the ratio of medians with its paired interval, and
one tiny bounded run of two revisions in their worktrees (figures meaningless here: the timed
run is for an otherwise idle machine)."""

import json
import subprocess

import pytest

from finrag.benchmarks import perf_compare as PC
from finrag.benchmarks import perf_compare_report as PCR
from conftest import REPO


def test_blocks_alternate_and_cover_every_question_once_per_side():
    order = PC.block_order(7, 3)
    assert [s for *_, s in order] == ["before", "after", "after", "before", "before", "after"]
    for side in PC.SIDES:
        seqs = [start + i for start, n, s in order if s == side for i in range(n)]
        assert seqs == list(range(7))
    with pytest.raises(ValueError):
        PC.block_order(0, 3)


def test_ratio_of_medians_and_its_paired_interval():
    before = [1.0, 2.0, 3.0, 10.0, 4.0, 6.0, 2.5, 8.0, 1.5, 5.0]
    ci = PCR.ratio_ci(before, [2 * b for b in before])
    assert ci["estimate"] == pytest.approx(2.0) and ci["n"] == 10
    assert ci["low"] == pytest.approx(2.0) and ci["high"] == pytest.approx(2.0)  # pairs kept
    after = [1.1, 1.9, 3.6, 9.0, 4.4, 7.0, 2.0, 8.5, 1.4, 6.5]
    noisy = PCR.ratio_ci(before, after, n=500)
    assert noisy["estimate"] == pytest.approx(4.0 / 3.5)  # medians 4.0 / 3.5
    assert noisy["low"] <= noisy["estimate"] <= noisy["high"] and noisy["low"] < noisy["high"]
    few = PCR.ratio_ci(before[:3], after[:3])  # under 10 pairs: the ratio, no interval
    assert few["estimate"] == pytest.approx(1.9 / 2.0) and few["low"] is None
    assert PCR.ratio_ci([0.0, 0.0, 1.0], [1.0, 1.0, 1.0])["estimate"] is None  # median 0
    assert PCR.ratio_ci([0.2] * 10, [0.1] * 10, floor=1.0)["estimate"] is None  # sub-ms stage
    with pytest.raises(ValueError):
        PCR.ratio_ci([1.0], [1.0, 2.0])
    per_q = PCR.per_question_ratio(before, after, n=500)
    ratios = sorted(a / b for b, a in zip(before, after))
    assert per_q["estimate"] == pytest.approx((ratios[4] + ratios[5]) / 2)
    assert per_q["low"] <= per_q["estimate"] <= per_q["high"]


@pytest.mark.slow
@pytest.mark.integration
def test_two_revisions_alternate_on_the_tiny_profile(tmp_path, demo_index, demo_corpus):
    """Bounded: 2 answers per side, every wait for a worker at most 600 s."""
    out = tmp_path / "compare"
    questions = demo_corpus.out_dir / "questions.jsonl"
    assert PC.main(["--before", "HEAD", "--after", "HEAD", "--index", str(demo_index),
                    "--profile", "tiny", "--questions", str(questions), "--requests", "2",
                    "--block", "1", "--warmup", "0", "--timeout-s", "600", "--out", str(out),
                    "--quiet"]) == 0
    res = json.loads((out / "results.json").read_text())
    assert [s for *_, s in res["order"]] == ["before", "after", "after", "before"]
    for side in PC.SIDES:
        assert [r["seq"] for r in res["rows"][side]] == [0, 1]
        assert all(r["latency_ms"] > 0 and r["timings_ms"]["generate"] > 0
                   for r in res["rows"][side])
        files = res["ready"][side]["files"]
        assert set(files) == {"finrag.retrieval", "finrag.models", "finrag.benchmarks"}
        # imported from the side's own worktree, not from this checkout, which the report
        # names by a label rather than the temporary folder's path
        assert all(f.startswith(f"<temporary worktree>/{side}/") for f in files.values()), files
        assert res["ready"][side]["root"] == f"<temporary worktree>/{side}"
        assert "finrag-perf-compare-" not in (out / "results.json").read_text()
    fig = res["figures"]
    assert fig["same"] == {"answer": 2, "context": 2, "routing": 2, "n": 2, "differing": []}
    assert fig["total"]["estimate"] > 0 and fig["total"]["n"] == 2
    assert fig["per_question"]["estimate"] > 0 and fig["per_question"]["low"] is None
    assert fig["stages"]["generate"]["ratio_p50"]["estimate"] > 0
    assert fig["sides"]["before"]["latency_ms"]["p95"] is None  # 2 answers: no tail
    report = (out / "report.md").read_text()
    head = res["revs"]["after"]["commit"]
    assert f"`{head}`" in report and "**after/before " in report
    assert "identical answer text: 2 of 2" in report
    assert "p95 is left out: 2 answers per side" in report
    assert (out / "compare.png").stat().st_size > 5000
    # the worktrees are gone
    listed = subprocess.run(["git", "worktree", "list"], cwd=REPO, capture_output=True,
                            text=True, check=True).stdout
    assert "finrag-perf-compare-" not in listed
