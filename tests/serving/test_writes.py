"""Writing to the served index (serving/writes.py), in process with the real Ingestor, index
and embedder: who may upload, remove and change collections, and what a refused or a bad
upload leaves behind (nothing)."""

import base64
import json
import shutil

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
    assert writer.remove(INGEST_ALPHA, NEW) == {"doc_id": NEW, "removed": True}
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
    # a filing in a collection of its own and one of another's: not its to remove
    with Index.open(writer.index_dir, readonly=False) as index:
        index.catalog.change_collections(ALPHA[1], add=["beta"])
    assert "beta" in _refused(403, "forbidden", lambda: writer.remove(INGEST_ALPHA, ALPHA[1]))
    # an admin of alpha may not move a filing into a collection not its own; the operator's
    # token may, and then alpha's admin no longer finds it
    assert "beta" in _refused(403, "forbidden", lambda: writer.change_collections(
        ADMIN_ALPHA, ALPHA[0], CollectionChange(add=["beta"], remove=["alpha"])))
    assert writer.change_collections(ALL_COLLECTIONS, ALPHA[0], CollectionChange(
        add=["beta"], remove=["alpha"])) == {"doc_id": ALPHA[0], "collections": ["beta"]}
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
