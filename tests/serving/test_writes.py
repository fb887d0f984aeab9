"""Writing to the served index (serving/writes.py), in process with the real Ingestor, index
and embedder: who may upload, remove and change collections, and what a refused or a bad
upload leaves behind (nothing)."""

import base64
import json
import multiprocessing
import shutil
import sqlite3

import pytest
from conftest import ALPHA, BETA

from finrag.retrieval.routing.companies import CompanyTable
from finrag.retrieval.store.index import Index
from finrag.serving.admission import ALL_COLLECTIONS, ApiError
from finrag.serving.tokens import Grant
from finrag.serving.writes import UPLOADS, CollectionChange, DocumentUpload, IndexWriter

NEW = "LUMENFIELD_2023_10K"
READER = Grant("reader", frozenset({"alpha"}))
INGEST_ALPHA = Grant("up-alpha", frozenset({"alpha"}), ingest=True)
ADMIN_ALPHA = Grant("admin-alpha", frozenset({"alpha"}), admin=True)


@pytest.fixture
def writer(two_collections, embedder, tmp_path):
    folder = tmp_path / "index"
    shutil.copytree(two_collections, folder)
    return IndexWriter(folder, embedder, CompanyTable.load(), max_upload_bytes=2**20)


def _upload(demo_corpus, doc=NEW, **fields) -> DocumentUpload:
    data = (demo_corpus.out_dir / f"{doc}.pdf").read_bytes()
    return DocumentUpload(**{"filename": f"{doc}.pdf", "content": base64.b64encode(data).decode(),
                             "collections": ["alpha"], **fields})


def _refused(status: int, kind: str, work) -> str:
    with pytest.raises(ApiError) as err:
        work()
    assert (err.value.status, err.value.kind) == (status, kind), err.value.message
    return err.value.message


def _documents(writer) -> dict[str, list[str]]:
    with Index.open(writer.index_dir) as index:
        return {d.doc_id: d.collections for d in index.documents()}


def test_an_upload_is_ingested_into_the_uploaders_collections(writer, demo_corpus):
    status, reply = writer.ingest(INGEST_ALPHA, _upload(demo_corpus))
    assert status == 201 and reply["doc_id"] == NEW and reply["collections"] == ["alpha"]
    assert reply["pages"] > 0 and reply["chunks"] > 0
    assert _documents(writer)[NEW] == ["alpha"]
    with Index.open(writer.index_dir) as index:
        source = index.catalog.document(NEW).source_path
    assert source.startswith(str((writer.index_dir / UPLOADS).resolve()))
    # the same file again: already there, nothing written
    assert writer.ingest(INGEST_ALPHA, _upload(demo_corpus)) == (200, {
        "doc_id": NEW, "collections": ["alpha"], "pages": reply["pages"],
        "chunks": reply["chunks"], "added": False})
    assert writer.remove(INGEST_ALPHA, NEW).items() >= {"doc_id": NEW, "removed": True}.items()
    assert NEW not in _documents(writer)
    assert not list((writer.index_dir / UPLOADS).iterdir())  # its file went with it


def test_who_may_write_what(writer, demo_corpus):
    before = _documents(writer)
    # no right, no token, a collection not its own
    assert "ingest right" in _refused(403, "forbidden",
                                      lambda: writer.ingest(READER, _upload(demo_corpus)))
    _refused(403, "forbidden", lambda: writer.ingest(None, _upload(demo_corpus)))
    assert "beta" in _refused(403, "forbidden", lambda: writer.ingest(
        INGEST_ALPHA, _upload(demo_corpus, collections=["alpha", "beta"])))
    _refused(403, "forbidden", lambda: writer.remove(READER, ALPHA[0]))
    _refused(403, "forbidden", lambda: writer.change_collections(
        INGEST_ALPHA, ALPHA[0], CollectionChange(add=["beta"])))
    # another collection's filing: to this caller it does not exist
    gone = _refused(404, "not_found", lambda: writer.remove(INGEST_ALPHA, BETA[0]))
    assert gone == _refused(404, "not_found", lambda: writer.remove(
        INGEST_ALPHA, "NO_SUCH_2024_10K")).replace("NO_SUCH_2024_10K", BETA[0])
    _refused(404, "not_found", lambda: writer.change_collections(
        ADMIN_ALPHA, BETA[0], CollectionChange(add=["alpha"])))
    # an upload of another collection's filing, by id or by content: refused, naming nothing
    taken = _refused(409, "exists", lambda: writer.ingest(INGEST_ALPHA, _upload(
        demo_corpus, BETA[0], replace=True)))
    assert BETA[0] not in taken
    assert _documents(writer) == before
    # a filing in a collection of its own and one of another's: not its to remove, nor to
    # replace, and the refusal does not name the other collection
    with Index.open(writer.index_dir, readonly=False) as index:
        index.catalog.change_collections(ALPHA[1], add=["beta"])
    for refusal in (lambda: writer.remove(INGEST_ALPHA, ALPHA[1]),
                    lambda: writer.ingest(INGEST_ALPHA, _upload(
                        demo_corpus, filename=f"{ALPHA[1]}.pdf", replace=True))):
        message = _refused(403, "forbidden", refusal)
        assert "beta" not in message and "collections this token does not hold" in message
    # an admin of alpha may not move a filing into a collection not its own; the operator's
    # token may, and then alpha's admin no longer finds it
    _refused(403, "forbidden", lambda: writer.change_collections(
        ADMIN_ALPHA, ALPHA[0], CollectionChange(add=["beta"], remove=["alpha"])))
    assert writer.change_collections(ALL_COLLECTIONS, ALPHA[0], CollectionChange(
        add=["beta"], remove=["alpha"])).items() >= {"doc_id": ALPHA[0],
                                                     "collections": ["beta"]}.items()
    _refused(404, "not_found", lambda: writer.change_collections(
        ADMIN_ALPHA, ALPHA[0], CollectionChange(add=["alpha"])))


def test_a_bad_upload_is_refused_and_leaves_nothing(writer, demo_corpus):
    before = _documents(writer)
    bad = [(dict(filename="../x.pdf"), 422), (dict(filename="notes.txt"), 422),
           (dict(content="not base64 !"), 422), (dict(content=""), 422),
           (dict(collections=["Bad Name"]), 422),
           (dict(metadata={"doc_id": "OTHER_2024_10K"}), 422),
           (dict(metadata={"company": "Lumenfield Software", "colour": "red"}), 422)]
    for fields, status in bad:
        _refused(status, "bad_request", lambda: writer.ingest(INGEST_ALPHA,
                                                              _upload(demo_corpus, **fields)))
    # a file that is not a PDF at all: the parser's reason, with the file's name, no path
    junk = DocumentUpload(filename="JUNK_2024_10K.pdf", collections=["alpha"],
                          content=base64.b64encode(b"%PDF-1.4 broken" * 10).decode())
    reason = _refused(422, "bad_document", lambda: writer.ingest(INGEST_ALPHA, junk))
    assert str(writer.index_dir) not in reason and "JUNK_2024_10K.pdf" in reason
    big = IndexWriter(writer.index_dir, writer.embedder, writer.companies, max_upload_bytes=1024)
    _refused(413, "too_large", lambda: big.ingest(INGEST_ALPHA, _upload(demo_corpus)))
    assert _documents(writer) == before
    uploads = writer.index_dir / UPLOADS
    assert not uploads.exists() or not list(uploads.iterdir())


def test_a_second_writer_waits_its_turn(writer, demo_corpus):
    with Index.open(writer.index_dir, readonly=False):  # an ingest in progress elsewhere
        _refused(409, "busy", lambda: writer.ingest(INGEST_ALPHA, _upload(demo_corpus)))
        _refused(409, "busy", lambda: writer.remove(INGEST_ALPHA, ALPHA[0]))
    status, _ = writer.ingest(INGEST_ALPHA, _upload(demo_corpus))
    assert status == 201
    assert json.dumps(_documents(writer)[NEW]) == '["alpha"]'


def _companies(table) -> list[dict]:
    return sorted((c.to_dict() for c in table.all()), key=lambda c: c["key"])


def _facts_rows(writer, cik: str) -> tuple[list, list]:
    db = sqlite3.connect(writer.index_dir / "catalog.sqlite")
    try:
        return (db.execute("SELECT * FROM fact_companies WHERE cik=?", (cik,)).fetchall(),
                db.execute("SELECT * FROM facts WHERE cik=? ORDER BY id", (cik,)).fetchall())
    finally:
        db.close()


def _seed_apple_facts(writer) -> str:
    from finrag.retrieval.facts.model import Fact
    from finrag.retrieval.facts.store import FactStore

    apple = writer.companies.by_ticker("AAPL")
    with Index.open(writer.index_dir, readonly=False) as index:
        FactStore(index.catalog.db).add("companyfacts:0000320193", "sha", apple, [Fact(
            cik=apple.cik, concept="us-gaap:Revenues", unit="USD", start="2022-09-25",
            end="2023-09-30", value=383e9, form="10-K", source="companyfacts")])
    return apple.cik


def test_a_refused_upload_changes_no_company_and_no_facts(writer, demo_corpus):
    cik = _seed_apple_facts(writer)
    before, facts_before, documents = _companies(writer.companies), _facts_rows(writer, cik), \
        _documents(writer)
    assert facts_before[0] and facts_before[1]
    meta = {"company": "Nowhere Widgets", "ticker": "NWW", "fiscal_year_end": "03-31",
            "doc_type": "10-K", "fiscal_year": 2023}
    junk = DocumentUpload(filename="JUNK_2024_10K.pdf", collections=["alpha"], metadata=meta,
                          content=base64.b64encode(b"%PDF-1.4 broken" * 10).decode())
    _refused(422, "bad_document", lambda: writer.ingest(INGEST_ALPHA, junk))
    # another company's ticker or CIK-holder's name with another name, or its calendar
    for claim in [{"company": "Evil Holdings", "ticker": "AAPL"},
                  {"company": "Apple", "fiscal_year_end": "01-31"},
                  {"company": "Evil Holdings", "aliases": ["Apple"]}]:
        message = _refused(409, "conflict", lambda: writer.ingest(INGEST_ALPHA, _upload(
            demo_corpus, metadata={**claim, "doc_type": "10-K", "fiscal_year": 2023})))
        assert not {"09-27", "320193", "Apple Computer"} & set(message.split()) and \
            "Apple Computer" not in message, message
    assert _companies(writer.companies) == before
    assert writer.companies.by_name("Nowhere Widgets") is None
    assert writer.companies.by_name("Evil Holdings") is None
    assert writer.companies.by_ticker("AAPL").name == "Apple"
    assert _facts_rows(writer, cik) == facts_before
    assert _documents(writer) == documents
    # the same upload with its own company: accepted, and only then the table learns it
    status, _ = writer.ingest(INGEST_ALPHA, _upload(demo_corpus, metadata={
        "company": "Lumenfield Software, Inc.", "ticker": "LMFD", "fiscal_year_end": "12-31",
        "doc_type": "10-K", "fiscal_year": 2023}))
    assert status == 201 and writer.companies.by_ticker("LMFD").name == "Lumenfield Software, Inc."
    assert _facts_rows(writer, cik) == facts_before


def test_an_indexed_filings_company_is_settled_for_uploads(writer, demo_corpus):
    """The company table of a served writer knows only its YAML; the filings indexed name
    companies too (as the router reads them): an upload may not take one's ticker or name
    under another name, whichever collection holds it, and is refused before it is read."""
    documents = _documents(writer)
    for claim in [{"company": "Evil Holdings", "ticker": "BQRY"},  # alpha's Brightquarry
                  {"company": "Evil Holdings", "ticker": "LMFD"},  # beta's Lumenfield
                  {"company": "Evil Holdings", "aliases": ["Quillon Pump & Valve Company"]}]:
        message = _refused(409, "conflict", lambda: writer.ingest(INGEST_ALPHA, _upload(
            demo_corpus, metadata={**claim, "doc_type": "10-K", "fiscal_year": 2023})))
        assert "Brightquarry" not in message and "Lumenfield" not in message, message
    assert writer.companies.by_name("Evil Holdings") is None
    assert _documents(writer) == documents


def test_html_bytes_named_pdf_are_refused_naming_both(writer):
    html = ("<html><body>" + "".join(f"<p>Juliet Optics segment {i} revenue grew.</p>"
                                     for i in range(40)) + "</body></html>").encode()
    before = _documents(writer)
    upload = DocumentUpload(filename="JULIET_2023_10K.pdf", collections=["alpha"],
                            content=base64.b64encode(html).decode())
    message = _refused(422, "bad_document", lambda: writer.ingest(INGEST_ALPHA, upload))
    assert "named as pdf" in message and "bytes are html" in message
    assert _documents(writer) == before


def test_a_parse_over_its_time_limit_is_refused_and_the_writer_goes_on(writer, demo_corpus):
    hurried = IndexWriter(writer.index_dir, writer.embedder, writer.companies,
                          max_upload_bytes=2**20, max_parse_s=0.005)
    before = _documents(writer)
    message = _refused(422, "bad_document", lambda: hurried.ingest(INGEST_ALPHA,
                                                                   _upload(demo_corpus)))
    assert "took over 0.005 s" in message and str(writer.index_dir) not in message
    assert _documents(writer) == before
    assert not [p for p in multiprocessing.active_children() if p.name == "finrag-parse"]
    # too little memory for the parser: refused too
    starved = IndexWriter(writer.index_dir, writer.embedder, writer.companies,
                          max_upload_bytes=2**20, max_parse_bytes=2**20)
    _refused(422, "bad_document", lambda: starved.ingest(INGEST_ALPHA, _upload(demo_corpus)))
    assert _documents(writer) == before
    status, reply = writer.ingest(INGEST_ALPHA, _upload(demo_corpus))
    assert status == 201 and reply["chunks"] > 0
