"""`finrag ingest --ray`: the documents parsed and embedded on Ray Data, committed by the one
writer, give the index a sequential ingest gives; a worker lost mid-ingest loses nothing."""

import os
import signal
import sqlite3
import time
from pathlib import Path

import numpy as np
import pytest

from finrag.models.profiles import load_config
from finrag.retrieval.indexer import Ingestor
from finrag.serving.ray_ingest import RayWorkers


def _contents(index_dir: Path) -> dict:
    """Everything an ingest decides: documents, pages, tables, chunk ids and texts, vectors,
    collections, facts."""
    db = sqlite3.connect(index_dir / "catalog.sqlite")
    try:
        rows = lambda sql: db.execute(sql).fetchall()  # noqa: E731
        chunks = rows("SELECT c.id, d.doc_id, c.seq, c.text, c.first_page, c.last_page, "
                      "c.embedding FROM chunks c JOIN documents d ON d.id = c.doc ORDER BY c.id")
        return {
            "documents": rows("SELECT id, doc_id, company, ticker, doc_type, fiscal_year, "
                              "fiscal_quarter, period_end, page_count, char_count, chunk_count, "
                              "sha256 FROM documents ORDER BY id"),
            "collections": rows("SELECT doc, name FROM collections ORDER BY doc, name"),
            "pages": rows("SELECT doc, number, text FROM pages ORDER BY doc, number"),
            "tables": rows("SELECT doc, page, idx, header, rows FROM tables ORDER BY doc, page, idx"),
            "chunks": [c[:6] for c in chunks],
            "vectors": np.stack([np.frombuffer(c[6], dtype=np.float32) for c in chunks]),
            "facts": rows("SELECT count(*) FROM facts")[0][0],
        }
    finally:
        db.close()


def _ingest(index_dir, corpus, embedder, workers=None):
    ingestor = Ingestor(index_dir, embedder, metadata=corpus.metadata_path)
    try:
        return ingestor.run([corpus.out_dir, corpus.out_dir / "BROKEN_2022_10K.pdf"],
                            progress=False, workers=workers)
    finally:
        ingestor.close()
        if workers is not None:
            workers.close()


class _LosingAWorker(RayWorkers):
    """Kills one of Ray Data's worker processes (SIGKILL, by pid) once the first document is
    back: the files it held are run again by Ray."""

    killed: list = []

    def run(self, jobs, options, variant, index):
        for n, item in enumerate(super().run(jobs, options, variant, index)):
            if n == 0:
                self.killed.append(_kill_a_worker())
            yield item


def _kill_a_worker() -> int:
    import psutil

    me = psutil.Process()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # Ray's workers are children of its raylet, ours
        workers = [p for p in me.children(recursive=True)
                   if "MapWorker" in " ".join(p.cmdline() or [])]
        if workers:
            os.kill(workers[0].pid, signal.SIGKILL)
            return workers[0].pid
        time.sleep(0.2)
    raise AssertionError("no Ray Data worker process found to kill")


@pytest.fixture(scope="module")
def corpus_with_a_broken_file(demo_corpus, tmp_path_factory):
    from types import SimpleNamespace

    folder = tmp_path_factory.mktemp("ray-ingest")
    for f in sorted(Path(demo_corpus.out_dir).glob("*.pdf"))[:6]:  # two companies' filings
        os.symlink(f, folder / f.name)
    (folder / "BROKEN_2022_10K.pdf").write_bytes(b"%PDF-1.7\nnot a pdf at all")
    return SimpleNamespace(out_dir=folder, metadata_path=demo_corpus.metadata_path)


@pytest.mark.slow
def test_ray_ingest_gives_the_sequential_index_and_survives_a_lost_worker(
        corpus_with_a_broken_file, embedder, tmp_path):
    """Slow: six demo filings and a broken file are ingested four times, once in process and
    three times on Ray Data with two workers, each time starting a local Ray runtime whose
    workers load the embedder; the last run loses a worker and redoes its files (about 75 s
    on two cores)."""
    corpus = corpus_with_a_broken_file
    tiny = load_config().active("tiny")
    sequential = _ingest(tmp_path / "seq", corpus, embedder)
    on_ray = _ingest(tmp_path / "ray", corpus, embedder, RayWorkers(tiny, workers=2))
    assert len(sequential.added) == 6 and sequential.added == on_ray.added
    assert sequential.chunks == on_ray.chunks and sequential.pages == on_ray.pages
    assert sequential.failed == on_ray.failed and len(on_ray.failed) == 1
    assert "BROKEN_2022_10K.pdf" in on_ray.failed[0][1]

    want, got = _contents(tmp_path / "seq"), _contents(tmp_path / "ray")
    for key in ("documents", "collections", "pages", "tables", "chunks", "facts"):
        assert got[key] == want[key], key
    assert len(want["tables"]) > 0
    assert np.allclose(got["vectors"], want["vectors"], atol=1e-5)

    again = _ingest(tmp_path / "ray", corpus, embedder, RayWorkers(tiny, workers=2))
    assert again.added == [] and len(again.skipped) == len(sequential.added)

    lossy = _LosingAWorker(tiny, workers=2)
    lost = _ingest(tmp_path / "lost", corpus, embedder, lossy)
    assert len(_LosingAWorker.killed) == 1
    with pytest.raises(ProcessLookupError):
        os.kill(_LosingAWorker.killed[0], 0)
    assert lost.added == sequential.added and lost.failed == sequential.failed
    after = _contents(tmp_path / "lost")
    for key in ("documents", "chunks", "facts"):
        assert after[key] == want[key], key  # each document once, the same chunk ids
    assert np.allclose(after["vectors"], want["vectors"], atol=1e-5)


def test_ray_ingest_refuses_what_it_cannot_do(demo_corpus, embedder, tmp_path):
    from finrag.retrieval.ingest.variants import Contextualizer

    tiny = load_config().active("tiny")
    ingestor = Ingestor(tmp_path / "ctx", embedder, variant="llmctx",
                        contextualizer=Contextualizer(lambda: None, model_id="x"))
    try:
        with pytest.raises(ValueError, match="llmctx"):
            ingestor.run([demo_corpus.out_dir], progress=False, workers=RayWorkers(tiny))
    finally:
        ingestor.close()
    with pytest.raises(ValueError, match="at least 1"):
        RayWorkers(tiny, workers=0)
    with pytest.raises(ValueError, match="at least 1"):
        RayWorkers(tiny, threads=0)
