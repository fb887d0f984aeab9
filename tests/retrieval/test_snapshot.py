"""Published snapshots (retrieval/store/publish.py, snapshot.py): a consistent, checksummed,
read-only copy of an index that readers open without writing beside it, and follow to the
next version."""

import json
import shutil
import threading

import numpy as np
import pytest
from conftest import ALPHA, BETA

from finrag.retrieval.indexer import Ingestor
from finrag.retrieval.store.catalog import Catalog
from finrag.retrieval.store.index import Index
from finrag.retrieval.store.publish import open_snapshot, prune, publish
from finrag.retrieval.store.snapshot import (CURRENT_FILE, MANIFEST_FILE, PublishedIndex,
                                             SnapshotError, current_version, point_current,
                                             versions)
from finrag.serving.cli import main

NEW = "LUMENFIELD_2023_10K"  # a demo filing the two-collection index does not hold
QUERIES = ["total revenue growth", "risks of competition", "net income per share"]


@pytest.fixture
def source(two_collections, tmp_path):
    """A copy of the four-filing index that a test may grow."""
    folder = tmp_path / "index"
    shutil.copytree(two_collections, folder)
    return folder


def _listing(folder):
    return sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir())


def _flip_a_byte(path, at: int = 4096):
    data = bytearray(path.read_bytes())
    data[min(at, len(data) - 1)] ^= 0xFF
    path.write_bytes(bytes(data))


def _bump_generation(folder):
    """A change that needs no embedding: a document joins another collection."""
    with Index.open(folder, readonly=False) as index:
        index.catalog.change_collections(ALPHA[0], add=[f"extra{index.generation()}"])


def _add(folder, demo_corpus, embedder, doc=NEW):
    ingestor = Ingestor(folder, embedder, metadata=demo_corpus.metadata_path)
    try:
        report = ingestor.run([demo_corpus.out_dir / f"{doc}.pdf"], progress=False)
    finally:
        ingestor.close()
    assert report.ok and len(report.added) == 1, report.failed


def test_a_snapshot_searches_as_its_index_does(two_collections, tmp_path, embedder):
    root = tmp_path / "published"
    snap = publish(two_collections, root)
    assert snap.new and snap.name == "v000001" and snap.folder == root / "v000001"
    assert (root / CURRENT_FILE).read_text().strip() == "v000001"
    manifest = json.loads((snap.folder / MANIFEST_FILE).read_text())
    with Index.open(two_collections) as index:
        assert manifest["generation"] == index.generation()
        assert manifest["documents"] == len(ALPHA + BETA)
        assert manifest["chunks"] == index.catalog.counts()["chunks"] > 0
        assert manifest["embedder"]["model_id"] == index.settings.embedder_model_id
        expected = {q: index.search(q, embedder.encode([q])[0], k=8) for q in QUERIES}
    assert set(manifest["files"]) == {"catalog.sqlite", "vectors.faiss"}
    for name, entry in manifest["files"].items():
        assert entry["bytes"] == (snap.folder / name).stat().st_size
    # a rollback-journal database (header bytes 18-19: 1 = legacy, 2 = WAL)
    assert (snap.folder / "catalog.sqlite").read_bytes()[18:20] == b"\x01\x01"
    with open_snapshot(root) as copy:
        assert copy.vectors.size == manifest["chunks"]
        for q, hits in expected.items():
            got = copy.search(q, embedder.encode([q])[0], k=8)
            assert [(h.chunk_id, h.doc_id, h.rank) for h in got] == \
                [(h.chunk_id, h.doc_id, h.rank) for h in hits]
            assert np.allclose([h.score for h in got], [h.score for h in hits])
    # the same generation again: no new version
    again = publish(two_collections, root)
    assert not again.new and again.name == "v000001"
    assert [p.name for p in versions(root)] == ["v000001"]


def test_a_damaged_or_missing_file_is_refused_by_name(two_collections, tmp_path):
    root = tmp_path / "published"
    folder = publish(two_collections, root).folder
    _flip_a_byte(folder / "vectors.faiss")
    with pytest.raises(SnapshotError, match=r"vectors\.faiss does not match its checksum"):
        open_snapshot(root)
    with pytest.raises(SnapshotError, match=r"vectors\.faiss"):
        Index.open(root)  # how the app opens it
    shutil.copyfile(two_collections / "vectors.faiss", folder / "vectors.faiss")
    _flip_a_byte(folder / "catalog.sqlite", at=8192)
    with pytest.raises(SnapshotError, match=r"catalog\.sqlite does not match"):
        open_snapshot(folder)  # a version folder itself
    (folder / "catalog.sqlite").unlink()
    with pytest.raises(SnapshotError, match=r"catalog\.sqlite is missing"):
        open_snapshot(root)
    with pytest.raises(FileNotFoundError, match="no published snapshot"):
        open_snapshot(tmp_path / "nowhere")


def test_reading_a_snapshot_writes_nothing_beside_it(two_collections, tmp_path, embedder):
    root = tmp_path / "published"
    folder = publish(two_collections, root).folder
    before, root_before = _listing(folder), _listing(root)
    # read-only as on a shared volume (a root user still could write: the listing decides)
    for path in folder.iterdir():
        path.chmod(0o444)
    folder.chmod(0o555)
    try:
        vector = embedder.encode(["operating income"])[0]
        with open_snapshot(root) as index:
            assert index.search("operating income", vector, k=5)
            assert index.catalog.pages(ALPHA[0])
        reader = Index.open(root)
        assert isinstance(reader, PublishedIndex)
        assert reader.search("operating income", vector, k=5, doc_ids=[BETA[0]])
        assert {d.doc_id for d in reader.documents()} == set(ALPHA + BETA)
        assert not reader.refresh()
        reader.close()
    finally:
        folder.chmod(0o755)
    assert _listing(folder) == before
    assert _listing(root) == root_before
    assert not [p for p in folder.iterdir() if p.name.endswith(("-wal", "-shm", "-journal"))]


def test_a_reader_moves_to_the_next_version_and_keeps_the_old_one_for_its_requests(
        source, tmp_path, demo_corpus, embedder):
    root = tmp_path / "published"
    publish(source, root)
    reader = Index.open(root)
    reader.recheck_s = 0
    old, first = reader._index, reader.generation()
    assert NEW not in {d.doc_id for d in reader.documents()}
    _add(source, demo_corpus, embedder)
    assert not reader.refresh()  # a grown index is not served until it is published
    assert publish(source, root).name == "v000002"
    assert reader.refresh() and reader.snapshot.name == "v000002"
    assert NEW in {d.doc_id for d in reader.documents()}
    assert reader.generation() > first
    vector = embedder.encode(["Lumenfield revenue"])[0]
    assert reader.search("Lumenfield revenue", vector, k=5, doc_ids=[NEW])
    # the version swapped out still answers the request that holds it
    assert old.search("revenue", vector, k=3) and NEW not in {d.doc_id for d in old.documents()}
    reader.close()


def test_a_damaged_new_version_is_not_served(source, tmp_path):
    root = tmp_path / "published"
    publish(source, root)
    reader = Index.open(root)
    reader.recheck_s = 0
    _bump_generation(source)
    bad = publish(source, root).folder
    _flip_a_byte(bad / "catalog.sqlite", at=8192)
    assert not reader.refresh()
    assert reader.snapshot.name == "v000001" and reader.documents()
    reader.close()


def test_publishing_during_an_ingest_copies_only_whole_documents(
        source, tmp_path, demo_corpus, embedder, monkeypatch):
    root = tmp_path / "published"
    publish(source, root)
    _bump_generation(source)  # committed: the publish below makes a new version
    inside, go_on = threading.Event(), threading.Event()
    changed = Catalog._changed

    def paused(self):  # the ingest's transaction holds the document row, not its chunks yet
        changed(self)
        inside.set()
        go_on.wait(60)

    monkeypatch.setattr(Catalog, "_changed", paused)
    failed = []
    ingest = threading.Thread(target=lambda: _catch(failed, _add, source, demo_corpus,
                                                    embedder))
    ingest.start()
    try:
        assert inside.wait(60), "the ingest never reached its transaction"
        during = publish(source, root)
    finally:
        go_on.set()
        ingest.join(120)
    assert not failed, failed
    assert during.new and during.name == "v000002" and during.documents == len(ALPHA + BETA)
    with open_snapshot(root) as index:
        assert NEW not in {d.doc_id for d in index.documents()}
        assert index.generation() == during.generation
        assert index.catalog.counts()["chunks"] == during.chunks == index.vectors.size
    after = publish(source, root)
    assert after.new and after.documents == during.documents + 1
    with open_snapshot(root) as index:
        docs = index.documents()
        assert NEW in {d.doc_id for d in docs}
        assert sum(d.chunk_count for d in docs) == after.chunks == index.vectors.size


def test_publish_while_an_ingest_writes_copies_its_last_commit(source, tmp_path, monkeypatch):
    """A write transaction held open in another connection: the copy is the last commit."""
    import sqlite3

    root = tmp_path / "published"
    writer = sqlite3.connect(source / "catalog.sqlite")
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("DELETE FROM chunks WHERE doc = (SELECT id FROM documents WHERE doc_id = ?)",
                   (ALPHA[0],))
    try:
        snap = publish(source, root)
    finally:
        writer.rollback()
        writer.close()
    with open_snapshot(root) as index:
        doc = index.catalog.document(ALPHA[0])
        assert doc.chunk_count == len(index.catalog.chunk_ids([doc.pk])) > 0
        assert snap.chunks == index.vectors.size


def _catch(failed, fn, *args):
    try:
        fn(*args)
    except BaseException as e:  # reported by the test
        failed.append(e)


def test_old_versions_go_but_never_the_current_one(source, tmp_path):
    root = tmp_path / "published"
    for _ in range(4):
        publish(source, root, keep=2)
        _bump_generation(source)
    assert [p.name for p in versions(root)] == ["v000003", "v000004"]
    point_current(root, "v000003")  # rolled back by hand
    assert prune(root, keep=1) == []
    assert [p.name for p in versions(root)] == ["v000003", "v000004"]
    snap = publish(source, root, keep=1)
    assert snap.name == "v000005" and current_version(root).name == "v000005"
    assert [p.name for p in versions(root)] == ["v000005"]


def test_a_replica_copies_a_version_to_local_disk(two_collections, tmp_path):
    root = tmp_path / "published"
    publish(two_collections, root)
    cache = tmp_path / "local"
    with open_snapshot(root, local_copy=cache) as index:
        assert cache in index.folder.parents and index.folder.name == "v000001"
        assert index.documents()
    local = next(cache.iterdir()) / "v000001"
    _flip_a_byte(local / "vectors.faiss")  # a damaged local copy is made again
    with open_snapshot(root, local_copy=cache) as index:
        assert index.vectors.size > 0
    assert (local / "vectors.faiss").read_bytes() == (root / "v000001" / "vectors.faiss").read_bytes()


def test_the_publish_commands(two_collections, tmp_path, capsys):
    root = tmp_path / "published"
    assert main(["publish", "--index", str(two_collections), "--to", str(root), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["name"] == "v000001" and out["new"] and out["documents"] == 4
    assert main(["publish", "--index", str(two_collections), "--to", str(root)]) == 0
    assert "nothing published; CURRENT is v000001" in capsys.readouterr().out
    assert main(["publish", "--index", str(tmp_path / "nowhere"), "--to", str(root)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: no index at") and "\n" not in err
    assert main(["publish", "--index", str(two_collections), "--to", str(root),
                 "--keep", "0"]) == 2
    assert main(["remove", ALPHA[0], "--index", str(root)]) == 2
    assert "read-only" in capsys.readouterr().err
    _flip_a_byte(root / "v000001" / "catalog.sqlite", at=8192)
    assert main(["snapshots", "--to", str(root), "--verify"]) == 1
    captured = capsys.readouterr()
    assert "v000001" in captured.out and "CURRENT" in captured.out
    assert "catalog.sqlite does not match" in captured.err
    assert main(["snapshots", "--to", str(tmp_path / "nowhere")]) == 2


def test_a_root_made_anew_under_the_same_version_is_opened_afresh(source, tmp_path):
    """A version is known by its manifest's digest: a publish root deleted and published again
    from other contents (its v000001 another index's) is served anew, by a reader that follows
    it and from a local copy of the old one."""
    from finrag.retrieval.indexer import remove_document

    root, cache = tmp_path / "published", tmp_path / "local"
    publish(source, root)
    reader = PublishedIndex.open(root, lambda folder: Index.open(folder, immutable=True),
                                 local_copy=cache)
    reader.recheck_s = 0
    first = reader.generation()
    assert {d.doc_id for d in reader.documents()} == set(ALPHA + BETA)
    with Index.open(source, readonly=False) as index:
        remove_document(index, BETA[0])
    shutil.rmtree(root)
    assert publish(source, root).name == "v000001"
    assert reader.refresh() and reader.snapshot.name == "v000001"
    assert {d.doc_id for d in reader.documents()} == set(ALPHA + BETA) - {BETA[0]}
    assert reader.generation() > first
    assert not reader.refresh()  # nothing new since
    reader.close()
    with open_snapshot(root, local_copy=cache) as copy:  # the copy made of the old v000001
        assert {d.doc_id for d in copy.documents()} == set(ALPHA + BETA) - {BETA[0]}
