"""Ingest against broken, hostile and concurrent input: a malformed corpus built on the spot
(empty, not a PDF, truncated, encrypted, a compression bomb, garbage after the header, a
duplicate, a filing posing as another company) goes through `Ingestor.run` twice. The index
then holds exactly the good documents once each, and SQLite, FTS5 and FAISS checks pass. Then
the writer lock, --replace, --accept-repaired, remove, temporaries and read-only opens."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pymupdf
import pytest

from finrag.retrieval.indexer import Ingestor, remove_document
from finrag.retrieval.store import catalog as catalog_module
from finrag.retrieval.store.index import CATALOG_FILE, VECTORS_FILE, Index
from finrag.retrieval.store.lock import IndexBusyError

ROOT = Path(__file__).resolve().parents[2]
WORDS = ("revenue", "margin", "inventory", "dividend", "lease", "goodwill", "backlog", "tariff")


def pdf_bytes(topic: str, pages: int = 6) -> bytes:
    doc = pymupdf.open()
    for n in range(pages):
        page = doc.new_page()
        page.insert_text((72, 72), f"{topic} page {n + 1}", fontsize=14)
        for line in range(30):
            words = " ".join(WORDS[(n + line + i) % len(WORDS)] for i in range(8))
            page.insert_text((72, 100 + line * 20), f"{topic} {line}: {words} {n * 100 + line}",
                             fontsize=9)
    return doc.tobytes(garbage=0, deflate=False)


def bomb_bytes() -> bytes:
    """A page whose few-KB Flate stream decompresses to megabytes of text operators."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "x", fontsize=1)
    xref = page.get_contents()[0]
    head = doc.xref_stream(xref).split(b"Tf")[0] + b"Tf\n"  # "q BT <matrix> /helv 1 Tf"
    body = b"1 0 0 1 72 700 Tm [<" + b"41" * 100 + b">]TJ\n"  # 100 A's, all on the page
    doc.update_stream(xref, head + body * 6000 + b"ET\nQ\n")  # 600K characters inflated
    data = doc.tobytes(deflate=True)
    assert len(data) < 16 * 1024 and len(zlib.compress(body * 6000)) < 16 * 1024
    return data


def encrypted_bytes() -> bytes:
    doc = pymupdf.open(stream=pdf_bytes("Secret"))
    return doc.tobytes(encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="pw", owner_pw="owner")


def posing_html() -> str:
    """An EDGAR-named filing of a made-up company whose dei: tags claim to be NVIDIA's."""
    tags = "".join(f'<ix:nonNumeric contextRef="c" name="dei:{k}">{v}</ix:nonNumeric>'
                   for k, v in (("EntityCentralIndexKey", "0001045810"),
                                ("TradingSymbol", "NVDA"),
                                ("EntityRegistrantName", "NVIDIA CORP"),
                                ("DocumentType", "10-K"), ("DocumentFiscalYearFocus", "2024")))
    return (f"<html><body><div style='display:none'>{tags}</div>"
            + "".join(f"<p>Revenue grew strongly in segment {i}.</p>" for i in range(40))
            + "</body></html>")


def build_corpus(folder: Path) -> tuple[Path, list[str]]:
    """The corpus and the doc ids of its good files."""
    folder.mkdir()
    good = {"ALPHA_2022_10K": "Alpha Widgets", "BRAVO_2023_10K": "Bravo Freight",
            "CHARLIE_2021_10Q": "Charlie Mining"}
    for doc_id, topic in good.items():
        (folder / f"{doc_id}.pdf").write_bytes(pdf_bytes(topic))
    (folder / "COPY_OF_ALPHA_2022_10K.pdf").write_bytes((folder / "ALPHA_2022_10K.pdf")
                                                         .read_bytes())
    (folder / "EMPTY_2022_10K.pdf").write_bytes(b"")
    (folder / "TEXT_2022_10K.pdf").write_text("this is not a PDF at all\n" * 50)
    (folder / "GARBAGE_2022_10K.pdf").write_bytes(b"%PDF-1.7\n" + os.urandom(20_000))
    full = pdf_bytes("Delta Shipping", pages=10)
    (folder / "DELTA_2022_10K.pdf").write_bytes(full[: int(len(full) * 0.6)])
    (folder / "ECHO_2022_10K.pdf").write_bytes(encrypted_bytes())
    (folder / "FOXTROT_2022_10K.pdf").write_bytes(bomb_bytes())
    (folder / "zzz-10-k-2024-01-28.htm").write_text(posing_html())
    (folder / "GOLF_2022_10K.htm").write_bytes(b"\xff\xfe\x00<html" + os.urandom(3000))
    # misnamed: read by what they hold
    (folder / "INDIA_2022_10K.htm").write_bytes(pdf_bytes("India Textiles"))
    (folder / "JULIET_2023_10K.pdf").write_text(
        "<html><body>" + "".join(f"<p>Juliet Optics segment {i} revenue grew.</p>"
                                 for i in range(40)) + "</body></html>")
    sub = folder / "nested" / "deeper"
    sub.mkdir(parents=True)
    (sub / "HOTEL_2020_10K.pdf").write_bytes(pdf_bytes("Hotel Leisure", pages=3))
    return folder, [*good, "HOTEL_2020_10K", "INDIA_2022_10K", "JULIET_2023_10K"]


def check_integrity(folder: Path) -> dict:
    """SQLite and FTS5 integrity, FAISS ids equal to the catalog's chunk ids, one row per
    sha256, no temporaries; returns the documents by id."""
    assert not list(folder.glob("*.tmp")), list(folder.glob("*"))
    db = sqlite3.connect(folder / CATALOG_FILE)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []
        db.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
        docs = {r[0]: r[1] for r in db.execute("SELECT doc_id, sha256 FROM documents")}
        assert len(set(docs.values())) == len(docs)
        chunks = db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        fts = db.execute("SELECT count(*) FROM chunks_fts").fetchone()[0]
        assert chunks == fts > 0
        orphans = db.execute("SELECT count(*) FROM chunks WHERE doc NOT IN "
                             "(SELECT id FROM documents)").fetchone()[0]
        assert orphans == 0
    finally:
        db.close()
    with Index.open(folder) as index:
        assert np.array_equal(np.sort(index.vectors.ids()), index.catalog.chunk_ids())
        assert index.vectors.size == chunks
    import faiss

    on_disk = faiss.read_index(str(folder / VECTORS_FILE))
    assert on_disk.ntotal == chunks
    return docs


def test_a_malformed_corpus_twice_leaves_exactly_the_good_documents(tmp_path, embedder,
                                                                    caplog):
    caplog.set_level("WARNING", logger="finrag.ingest")
    corpus, good = build_corpus(tmp_path / "corpus")
    folder = tmp_path / "index"
    reports = []
    for _ in range(2):
        ingestor = Ingestor(folder, embedder, save_every_s=0)
        reports.append(ingestor.run([corpus], progress=False))
        ingestor.close()
    first, second = reports
    assert sorted(first.added) == sorted(good)
    assert second.added == [] and sorted(Path(p).stem for p in second.skipped) == sorted(good)
    failed = {Path(p).name: m for p, m in first.failed}
    assert {Path(p).name: m for p, m in second.failed} == failed
    assert set(failed) == {"EMPTY_2022_10K.pdf", "TEXT_2022_10K.pdf", "GARBAGE_2022_10K.pdf",
                           "DELTA_2022_10K.pdf", "ECHO_2022_10K.pdf", "FOXTROT_2022_10K.pdf",
                           "zzz-10-k-2024-01-28.htm", "GOLF_2022_10K.htm",
                           "COPY_OF_ALPHA_2022_10K.pdf"}
    assert first.summary()["failed"] == second.summary()["failed"] == len(failed)
    # the same bytes under another name: refused, naming the filing that holds them
    assert "same content as ALPHA_2022_10K" in failed["COPY_OF_ALPHA_2022_10K.pdf"]
    assert "empty file" in failed["EMPTY_2022_10K.pdf"]
    assert "not a PDF" in failed["TEXT_2022_10K.pdf"]
    assert "--accept-repaired" in failed["DELTA_2022_10K.pdf"]
    assert "encrypted" in failed["ECHO_2022_10K.pdf"]
    assert "compression bomb" in failed["FOXTROT_2022_10K.pdf"]
    assert "NVIDIA" in failed["zzz-10-k-2024-01-28.htm"] and "another company" in \
        failed["zzz-10-k-2024-01-28.htm"]
    for message in failed.values():
        assert "\n" not in message and "Traceback" not in message
    docs = check_integrity(folder)
    assert sorted(docs) == sorted(good)
    # each misnamed file read as what it holds, with a warning naming both kinds
    warned = {Path(r.args[0]).name: r.getMessage() for r in caplog.records
              if "but its bytes are" in r.getMessage()}
    assert "named as html (.htm) but its bytes are pdf" in warned["INDIA_2022_10K.htm"]
    assert "named as pdf (.pdf) but its bytes are html" in warned["JULIET_2023_10K.pdf"]
    assert set(warned) == {"INDIA_2022_10K.htm", "JULIET_2023_10K.pdf"}
    with Index.open(folder) as index:
        pages = dict(index.catalog.pages("INDIA_2022_10K"))
        assert len(pages) == 6 and "India Textiles page 1" in pages[1]
        assert "Juliet Optics segment 39" in " ".join(
            t for _, t in index.catalog.pages("JULIET_2023_10K"))
    db = sqlite3.connect(folder / CATALOG_FILE)
    nvidia_facts = db.execute("SELECT count(*) FROM facts WHERE cik='0001045810'").fetchone()[0]
    db.close()
    assert nvidia_facts == 0, "a posing filing stored facts under another company's CIK"


def test_a_parse_in_a_child_process_is_the_same_and_bounded(tmp_path):
    """``prepare_apart`` gives what ``prepare_document`` gives; a parse past its time or
    memory limit is a DocumentError, and no child is left behind."""
    import multiprocessing
    from functools import partial

    from finrag.retrieval.documents import DocumentError, DocumentMeta
    from finrag.retrieval.ingest.prepare import (DocumentJob, ParseOptions, prepare_apart,
                                                 prepare_document)
    from finrag.retrieval.ingest.limits import DEFAULT_LIMITS
    from finrag.retrieval.routing.companies import CompanyTable

    path = tmp_path / "ALPHA_2022_10K.pdf"
    path.write_bytes(pdf_bytes("Alpha Widgets", pages=40))
    job = DocumentJob(path, "sha", DocumentMeta(doc_id="ALPHA_2022_10K", company="Alpha",
                                                doc_type="10-K"), hints_override=True)
    options = ParseOptions(chunk_size=2500, chunk_overlap=1250, tables=True,
                           accept_repaired=False, limits=DEFAULT_LIMITS, collections=("a",),
                           companies=CompanyTable.load())
    here, apart = prepare_document(job, options), prepare_apart(job, options, max_seconds=60)
    assert apart.chunks == here.chunks and apart.parsed.pages == here.parsed.pages
    assert apart.meta == here.meta and len(here.chunks) > 10
    for limits, reason in ((dict(max_seconds=0.001), "took over 0.001 s"),
                           (dict(max_seconds=60, max_memory=2**20), "")):
        with pytest.raises(DocumentError, match=reason) as err:
            partial(prepare_apart, **limits)(job, options)
        assert str(err.value).startswith(str(path))
    assert not [p for p in multiprocessing.active_children() if p.name == "finrag-parse"]


def test_the_next_file_is_parsed_while_one_is_embedded(tmp_path, embedder, monkeypatch):
    """Each document's embedding waits for the next file's parse to start: a run that parsed
    only after embedding would stop here (the wait times out and the test fails)."""
    import threading

    from finrag.retrieval import indexer

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    names = ["ALPHA_2022_10K", "BRAVO_2022_10K", "CHARLIE_2022_10K", "DELTA_2022_10K"]
    for name in names:
        (corpus / f"{name}.pdf").write_bytes(pdf_bytes(name.split("_")[0].title()))
    started = {name: threading.Event() for name in names}
    parsers, waited = [], []
    prepare = indexer.prepare_document

    def recording(job, options):
        parsers.append(threading.current_thread().name)
        started[job.path.stem].set()
        return prepare(job, options)

    class Waiting:  # the real embedder, each document's call waiting on the next parse
        def __getattr__(self, name):
            return getattr(embedder, name)

        def encode(self, texts, **kwargs):
            following = names[len(waited) + 1:len(waited) + 2]
            waited.append(all(started[n].wait(30) for n in following))
            return embedder.encode(texts, **kwargs)

    monkeypatch.setattr(indexer, "prepare_document", recording)
    ingestor = Ingestor(tmp_path / "index", Waiting())
    report = ingestor.run([corpus], progress=False)
    ingestor.close()
    assert report.failed == [] and report.added == names
    assert waited == [True] * len(names)
    assert len(parsers) == len(names) and all(n.startswith("finrag-parse") for n in parsers)
    assert sorted(check_integrity(tmp_path / "index")) == names


def test_unreadable_files_do_not_end_the_run(tmp_path, embedder):
    if os.geteuid() == 0:
        pytest.skip("running as root: file permissions do not stop root from reading")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "ALPHA_2022_10K.pdf").write_bytes(pdf_bytes("Alpha"))
    locked = corpus / "BRAVO_2022_10K.pdf"
    locked.write_bytes(pdf_bytes("Bravo"))
    locked.chmod(0)
    ingestor = Ingestor(tmp_path / "index", embedder)
    report = ingestor.run([corpus], progress=False)
    ingestor.close()
    assert report.added == ["ALPHA_2022_10K"]
    assert "cannot read file" in report.failed[0][1]


def test_repaired_pdfs_replace_and_remove(tmp_path, embedder):
    full = pdf_bytes("Delta Shipping", pages=10)
    truncated = tmp_path / "t" / "DELTA_2022_10K.pdf"
    truncated.parent.mkdir()
    truncated.write_bytes(full[: int(len(full) * 0.6)])
    good = tmp_path / "g" / "DELTA_2022_10K.pdf"
    good.parent.mkdir()
    good.write_bytes(full)
    folder = tmp_path / "index"

    ingestor = Ingestor(folder, embedder, accept_repaired=True)
    assert ingestor.run([truncated], progress=False).added == ["DELTA_2022_10K"]
    short = ingestor.index.catalog.document("DELTA_2022_10K").char_count
    ingestor.close()

    ingestor = Ingestor(folder, embedder)  # the good copy, same id: refused, saying what to do
    report = ingestor.run([good], progress=False)
    ingestor.close()
    assert report.added == [] and "--replace" in report.failed[0][1]

    ingestor = Ingestor(folder, embedder, replace=True)
    report = ingestor.run([good], progress=False)
    ingestor.close()
    assert report.added == report.replaced == ["DELTA_2022_10K"] and report.ok
    docs = check_integrity(folder)
    assert list(docs) == ["DELTA_2022_10K"]
    with Index.open(folder) as index:
        assert index.catalog.document("DELTA_2022_10K").char_count > short
        assert index.documents()[0].page_count == 10

    result = subprocess.run([sys.executable, "-m", "finrag.serving.cli", "remove", "DELTA_2022_10K",
                             "NOT_THERE", "--index", str(folder)], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr
    assert "removed DELTA_2022_10K" in result.stdout and "NOT_THERE" in result.stderr
    with Index.open(folder) as index:
        assert index.documents() == [] and index.vectors.size == 0
        assert index.search_fts("Delta Shipping", 5) == []


def test_a_second_writer_is_refused(tmp_path, embedder):
    folder = tmp_path / "index"
    ingestor = Ingestor(folder, embedder)
    try:
        with pytest.raises(IndexBusyError, match="another process"):
            Index.open(folder, readonly=False)
        result = subprocess.run([sys.executable, "-m", "finrag.serving.cli", "remove", "X",
                                 "--index", str(folder)], cwd=ROOT, capture_output=True,
                                text=True, timeout=300)
        assert result.returncode == 2 and f"pid {os.getpid()}" in result.stderr, result.stderr
        with Index.open(folder) as reader:  # readers are never locked out
            assert reader.documents() == []
    finally:
        ingestor.close()
    with Index.open(folder, readonly=False):  # released on close
        pass


def test_leftover_temporaries_go_and_the_wal_is_folded_on_close(tmp_path, embedder):
    folder = tmp_path / "index"
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "ALPHA_2022_10K.pdf").write_bytes(pdf_bytes("Alpha"))
    ingestor = Ingestor(folder, embedder)
    ingestor.run([corpus], progress=False)
    ingestor.close()
    stale = folder / f"{VECTORS_FILE}.99999.tmp"  # what a writer killed mid-save leaves
    stale.write_bytes(b"half a faiss file")
    with Index.open(folder, readonly=False):
        assert not stale.exists()
    wal = folder / (CATALOG_FILE + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    check_integrity(folder)


def test_a_read_only_copy_with_unfolded_commits_is_refused(tmp_path, embedder, monkeypatch):
    """A folder the process cannot write (a read-only mount) is opened immutable, which would
    not see commits left in a -wal file: such a copy is refused, a clean one opens."""
    folder = tmp_path / "index"
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "ALPHA_2022_10K.pdf").write_bytes(pdf_bytes("Alpha"))
    ingestor = Ingestor(folder, embedder)
    ingestor.run([corpus], progress=False)
    # the files as a writer killed now would leave them: the commit only in the -wal
    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    for name in (CATALOG_FILE, CATALOG_FILE + "-wal"):
        (snapshot / name).write_bytes((folder / name).read_bytes())
    ingestor.close()
    assert (snapshot / (CATALOG_FILE + "-wal")).stat().st_size > 0

    real_access = os.access
    read_only = {snapshot, folder}  # as a read-only mount answers (root ignores mode bits)
    monkeypatch.setattr(catalog_module.os, "access", lambda p, mode: (
        False if Path(p) in read_only and mode == os.W_OK else real_access(p, mode)))
    with pytest.raises(RuntimeError, match="read-only.*still holds commits"):
        Index.open(snapshot)
    with Index.open(folder) as index:  # closed cleanly: nothing left in a -wal
        assert [d.doc_id for d in index.documents()] == ["ALPHA_2022_10K"]
