"""The index on the generated demo corpus: scoped search, atomic resumable ingest, bad files."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from finrag.retrieval.store.catalog import fts_query
from finrag.retrieval.store.index import Index, UnknownDocumentError
from finrag.retrieval.indexer import Ingestor

REPO = Path(__file__).resolve().parents[2]


def _snapshot(folder: Path):
    """What an index holds, independent of timing: documents, chunks, vectors, FTS answers."""
    with Index.open(folder) as index:
        db = index.catalog.db
        docs = db.execute("SELECT doc_id, sha256, page_count, chunk_count FROM documents "
                          "ORDER BY doc_id").fetchall()
        chunks = db.execute("SELECT d.doc_id, c.seq, c.text, c.first_page, c.last_page, c.id "
                            "FROM chunks c JOIN documents d ON c.doc = d.id "
                            "ORDER BY d.doc_id, c.seq").fetchall()
        ids, vecs = index.catalog.vectors()
        faiss_ids = np.sort(index.vectors.ids())
        fts = index.search_fts("net income revenue", 10)
        tables = db.execute("SELECT count(*) FROM tables").fetchone()[0]
    return docs, chunks, ids, vecs, faiss_ids, fts, tables


def test_demo_index_contents(demo_index, demo_corpus):
    with Index.open(demo_index) as index:
        docs = index.documents()
        assert {d.doc_id for d in docs} == {p.stem for p in demo_corpus.pdf_paths}
        counts = index.catalog.counts()
        assert counts["chunks"] == index.vectors.size == sum(d.chunk_count for d in docs)
        assert counts["tables"] >= len(docs)  # each filing has its income statement
        for d in docs:
            assert d.company and d.doc_type in ("10-K", "10-Q") and d.fiscal_year
            assert len(d.sha256) == 64 and d.page_count > 0


def test_scoped_search_never_leaks(demo_index, demo_corpus, embedder):
    with Index.open(demo_index) as index:
        all_docs = [d.doc_id for d in index.documents()]
        queries = ["total revenue", "net income increased", "risk factors competition",
                   "diluted earnings per share", "cost of revenue gross profit"]
        for q in queries:
            vec = embedder.encode([q])[0]
            for scope in ([all_docs[0]], all_docs[1:3], all_docs[-2:]):
                hits = index.search(q, vec, k=50, doc_ids=scope, fts_k=100, dense_k=100)
                assert hits, (q, scope)
                assert {h.doc_id for h in hits} <= set(scope)
                assert all(doc in scope for _, doc in
                           [(c, index.catalog.chunks([c])[c].doc_id)
                            for c, _ in index.search_dense(vec, 100, scope)])
                assert all(index.catalog.chunks([c])[c].doc_id in scope
                           for c, _ in index.search_fts(q, 100, scope))
            # unscoped search does reach other documents
            assert len({h.doc_id for h in index.search(q, vec, k=20)}) > 1
        with pytest.raises(UnknownDocumentError):
            index.search("revenue", None, doc_ids=["NO_SUCH_DOC"])
        assert index.search_fts("revenue", 5, []) == []


def test_scoped_search_finds_the_fact_page(demo_index, demo_corpus, embedder):
    facts = json.loads(Path(demo_corpus.facts_path).read_text())
    found = 0
    with Index.open(demo_index) as index:
        for fact in facts[:12]:
            q = f"{fact['metric']} fiscal {fact['fiscal_year']}"  # scope carries the company
            hits = index.search(q, embedder.encode([q])[0], k=5, doc_ids=[fact["doc_id"]])
            assert {h.doc_id for h in hits} == {fact["doc_id"]}
            found += any(h.first_page <= fact["page"] <= h.last_page for h in hits)
    assert found >= 9, found


def test_fts_query_is_safe():
    assert fts_query('revenue" OR 1=1; DROP TABLE chunks; --') == \
        '"revenue" OR "1" OR "drop" OR "table" OR "chunks"'
    assert fts_query("the of and ?") is None
    assert fts_query("AT&T's 10-K NEAR(x)") == '"at&t\'s" OR "10" OR "near"'


def test_reingest_skips_and_never_duplicates(demo_index, demo_corpus, embedder, tmp_path):
    before = _snapshot(demo_index)
    ingestor = Ingestor(demo_index, embedder, metadata=demo_corpus.metadata_path)
    report = ingestor.run([demo_corpus.out_dir], progress=False)
    ingestor.close()
    assert report.added == [] and len(report.skipped) == len(demo_corpus.pdf_paths)
    after = _snapshot(demo_index)
    assert before[0] == after[0] and before[1] == after[1]


def test_vectors_repaired_from_catalog(demo_corpus, embedder, tmp_path):
    folder = tmp_path / "idx"
    ing = Ingestor(folder, embedder, metadata=demo_corpus.metadata_path)
    ing.run(demo_corpus.pdf_paths[:2], progress=False)
    ing.close()
    expected = _snapshot(folder)
    (folder / "vectors.faiss").write_bytes(b"garbage")  # a torn or stale FAISS file
    with Index.open(folder, readonly=False):
        pass
    assert np.array_equal(_snapshot(folder)[4], expected[4])
    (folder / "vectors.faiss").unlink()
    got = _snapshot(folder)
    assert np.array_equal(got[4], expected[4]) and got[5] == expected[5]


@pytest.mark.slow
def test_kill_and_resume_equals_clean_run(demo_corpus, tmp_path):
    """Slow: three `finrag ingest` subprocesses over the whole demo corpus, each loading the
    embedder: a clean run, one killed once two filings are in, and its resume (about 50 s on
    two cores)."""
    clean, killed = tmp_path / "clean", tmp_path / "killed"
    cmd = [sys.executable, "-m", "finrag.serving.cli", "ingest", str(demo_corpus.out_dir),
           "--metadata", str(demo_corpus.metadata_path), "-q"]
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    subprocess.run(cmd + ["--index", str(clean)], check=True, env=env, cwd=REPO,
                   capture_output=True, timeout=600)

    proc = subprocess.Popen(cmd + ["--index", str(killed)], env=env, cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    total = len(demo_corpus.pdf_paths)
    deadline = time.time() + 300
    n = 0
    while time.time() < deadline and proc.poll() is None:  # wait for a partial index
        try:
            db = sqlite3.connect(f"file:{killed / 'catalog.sqlite'}?mode=ro", uri=True, timeout=1)
            n = db.execute("SELECT count(*) FROM documents").fetchone()[0]
            db.close()
        except sqlite3.Error:
            n = 0
        if 2 <= n < total:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "ingest finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert 2 <= n < total

    resumed = subprocess.run(cmd + ["--index", str(killed), "--json"], env=env, cwd=REPO,
                             capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout)
    assert summary["skipped"] >= 2 and summary["added"] + summary["skipped"] == total

    a, b = _snapshot(clean), _snapshot(killed)
    assert a[0] == b[0]  # same documents
    assert a[1] == b[1]  # same chunks with the same ids, text and pages
    assert np.array_equal(a[2], b[2]) and np.allclose(a[3], b[3], atol=1e-5)
    assert np.array_equal(a[4], b[4]) and np.array_equal(b[4], b[2])  # FAISS == catalog
    assert [c for c, _ in a[5]] == [c for c, _ in b[5]]
    assert a[6] == b[6]


def _write_bad_files(folder: Path) -> dict[str, str]:
    import pymupdf

    folder.mkdir()
    (folder / "EMPTY_2020_10K.pdf").write_bytes(b"")
    (folder / "NOTAPDF_2020_10K.pdf").write_text("just some text, not a PDF\n" * 20)
    (folder / "CORRUPT_2020_10K.pdf").write_bytes(b"%PDF-1.7\n" + os.urandom(4000))
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "secret figures")
    doc.save(folder / "LOCKED_2020_10K.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256,
             user_pw="pw", owner_pw="owner")
    blank = pymupdf.open()
    blank.new_page()
    blank.save(folder / "BLANK_2020_10K.pdf")
    (folder / "notes.txt").write_text("ignored: not a filing type")
    return {"EMPTY": "empty file", "NOTAPDF": "not a PDF", "CORRUPT": "corrupt",
            "LOCKED": "encrypted", "BLANK": "no extractable text"}


def test_malformed_files_fail_one_line_each_and_the_rest_goes_on(demo_corpus, tmp_path):
    bad = tmp_path / "bad"
    expected = _write_bad_files(bad)
    good = demo_corpus.pdf_paths[0]
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    res = subprocess.run(
        [sys.executable, "-m", "finrag.serving.cli", "ingest", str(bad), str(good),
         str(tmp_path / "missing_2020_10K.pdf"), "--metadata", str(demo_corpus.metadata_path),
         "--index", str(tmp_path / "idx"), "-q"],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert res.returncode == 1
    errors = [l for l in res.stderr.splitlines() if l.startswith("error:")]
    assert len(errors) == len(expected) + 1, res.stderr
    for key, reason in expected.items():
        line = next(l for l in errors if f"{key}_2020_10K.pdf" in l)
        assert reason in line, line
    assert any("missing_2020_10K.pdf" in l and "no such file" in l for l in errors)
    assert "ingested 1 document(s)" in res.stdout
    with Index.open(tmp_path / "idx") as index:
        assert [d.doc_id for d in index.documents()] == [good.stem]


def test_index_settings_must_match(demo_index, embedder):
    with pytest.raises(ValueError, match="chunk_size"):
        Ingestor(demo_index, embedder, chunk_size=1000)
    with pytest.raises(FileNotFoundError):
        Index.open(demo_index.parent / "nowhere")


def test_scoped_fts_ranges_equal_a_plain_rowid_filter(demo_index):
    """The rowid-range scope gives exactly what a straightforward subquery filter gives."""
    with Index.open(demo_index) as index:
        docs = [d.doc_id for d in index.documents()]
        for scope in ([docs[0]], docs[2:5], docs[::3]):
            pks = index.scope(scope)
            marks = ",".join("?" * len(pks))
            for q in ("total revenue growth", "competition risk customers", "diluted"):
                expected = index.catalog.db.execute(
                    "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid IN "
                    f"(SELECT id FROM chunks WHERE doc IN ({marks})) "
                    "ORDER BY bm25(chunks_fts), rowid LIMIT 15", [fts_query(q), *pks]).fetchall()
                got = index.search_fts(q, 15, scope)
                assert [c for c, _ in got] == [r[0] for r in expected]
