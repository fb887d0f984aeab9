"""Writing to the served index over HTTP: a filing uploaded and ingested, a filing removed, a
filing's collections changed, and who may do each.

- Ingesting and removing need a token with the ingest right, changing collections one with the
  admin right (`finrag token create … --ingest/--admin`; the single bearer token has both, an
  identity proxy's users neither). A scoped token writes only inside its own collections: it
  uploads into them, removes a filing only when every collection of the filing is its own,
  and adds or takes away only its own collections.
- A filing the caller may not read is, to that caller, a filing that does not exist (404),
  except that an upload whose id or content is already indexed is refused (409) without
  saying by which filing.
- The work is the one way of doing it: the ``Ingestor`` under the index's writer lock (another
  ingest holding it: 409, retry later), one document all or nothing; the served readers catch
  up on their next call (``Index.refresh``). Uploaded files are kept under the index folder,
  in ``uploads/<sha256 prefix>/``: their pages are rendered from there.
- An upload is parsed in a child process, within a time and a memory limit (a file that
  exceeds them: 422); a file whose bytes are not what its name says is refused (422). What its
  metadata says about its company is learned into a staged copy of the company table, kept
  once the filing is committed: a refused upload changes nothing shared, and no upload may
  rename, re-ticker or re-calendar a company the table records (409 ``conflict``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
import shutil
import tempfile
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from finrag.retrieval.documents import check_collections
from finrag.retrieval.ingest.kinds import misnamed
from finrag.retrieval.ingest.metadata import doc_id_for
from finrag.retrieval.store.lock import IndexBusyError
from finrag.retrieval.store.variant_indexes import in_step, variants_beside
from finrag.serving.admission import ApiError
from finrag.serving.tokens import Grant

UPLOADS = "uploads"
FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,150}\.(pdf|htm|html)$", re.IGNORECASE)


class DocumentUpload(BaseModel):
    model_config = ConfigDict(extra="forbid")

    filename: str = Field(..., description="The file's name (its stem is the doc id unless "
                                           "metadata names one): NAME.pdf, NAME.htm or NAME.html")
    content: str = Field(..., description="The file, base64-encoded")
    collections: list[str] = Field(..., min_length=1, description="Collections it goes into")
    metadata: dict[str, Any] = Field(default_factory=dict, description="finrag sidecar fields "
                                     "(company, ticker, doc_type, fiscal_year, period_end, …); "
                                     "empty: read from a FinanceBench-style file name")
    replace: bool = Field(False, description="Replace the indexed filing of the same id")


class CollectionChange(BaseModel):
    model_config = ConfigDict(extra="forbid")

    add: list[str] = Field(default_factory=list)
    remove: list[str] = Field(default_factory=list)


def _own(grant: Grant, names: list[str], what: str, *, named: bool = False) -> None:
    """Refuse collections outside the grant's (403). The reply names them only when the
    caller itself ``named`` them: a filing's other collections are not the caller's to know."""
    outside = sorted(n for n in names if not grant.reads(n))
    if outside and named:
        raise ApiError(403, "forbidden", f"this token cannot {what} collection(s) "
                                         f"{', '.join(outside)}")
    if outside:
        raise ApiError(403, "forbidden", f"this token cannot {what} collection(s): they "
                                         f"include collections this token does not hold")


def _needs(grant: Grant | None, right: str) -> Grant:
    if grant is None or not getattr(grant, right):
        flag = "--ingest" if right == "ingest" else "--admin"
        raise ApiError(403, "forbidden", f"this needs a token with the {right} right "
                                         f"(`finrag token create NAME --collection C {flag}`)")
    return grant


def _checked_collections(names: list[str]) -> list[str]:
    try:
        return check_collections(names)
    except ValueError as exc:
        raise ApiError(422, "bad_request", str(exc)) from None


class IndexWriter:
    """The served index's one writer in this process (the index's lock keeps out others)."""

    def __init__(self, index_dir: Path, embedder, companies, max_upload_bytes: int, *,
                 variants: dict[str, str | Path] | None = None, max_parse_s: float = 120.0,
                 max_parse_bytes: int | None = None):
        """``variants``: the variant index folders served beside the index (default: those
        beside it), which every removal and change of collections brings in step.
        ``companies``: the company table uploads learn into, once accepted. An upload is
        parsed in a child process within ``max_parse_s`` seconds and ``max_parse_bytes`` of
        address space (default: ``DEFAULT_PARSE_MEMORY``)."""
        self.index_dir = Path(index_dir)
        self.variants = variants_beside(self.index_dir) if variants is None else dict(variants)
        self.embedder = embedder  # with name, model_id, kind, dim and normalize (the index's)
        self.companies = companies
        self.max_upload_bytes = max_upload_bytes
        self.max_parse_s = max_parse_s
        self.max_parse_bytes = max_parse_bytes
        self._one = threading.Lock()

    # -- the three writes ----------------------------------------------------------------
    def ingest(self, grant: Grant | None, upload: DocumentUpload) -> tuple[int, dict]:
        """(status, reply): 201 and the filing's record once it is committed, or 200 when the
        same file is already indexed under the same id."""
        grant = _needs(grant, "ingest")
        self._writable()
        collections = _checked_collections(upload.collections)
        _own(grant, collections, "ingest into", named=True)
        if not FILE_NAME.match(upload.filename):
            raise ApiError(422, "bad_request", "filename: letters, digits, '.', '_' or '-', "
                                               "ending .pdf, .htm or .html")
        try:
            data = base64.b64decode(upload.content, validate=True)
        except (binascii.Error, ValueError):
            raise ApiError(422, "bad_request", "content: not base64") from None
        if not data:
            raise ApiError(422, "bad_request", "content: an empty file")
        if len(data) > self.max_upload_bytes:
            raise ApiError(413, "too_large", f"the file has {len(data)} bytes; the limit is "
                                             f"{self.max_upload_bytes}")
        if wrong := misnamed(upload.filename, data[:1024]):
            raise ApiError(422, "bad_document", f"{upload.filename}: named as {wrong[0]} but "
                                                f"its bytes are {wrong[1]}; refused: upload it "
                                                f"under a name that says what it holds")
        doc_id = doc_id_for(Path(upload.filename).stem)
        named = upload.metadata.get("doc_id")
        if named is not None and (not isinstance(named, str) or doc_id_for(named) != doc_id):
            raise ApiError(422, "bad_request", f"metadata.doc_id: the doc id is the file name's "
                                               f"stem, {doc_id}")
        sha = hashlib.sha256(data).hexdigest()
        with self._one:
            return self._ingest(grant, upload, collections, doc_id, sha, data)

    def remove(self, grant: Grant | None, doc_id: str) -> dict:
        grant = _needs(grant, "ingest")
        self._writable()
        from finrag.retrieval.indexer import remove_document

        with self._one, self._writing() as index:
            doc = self._readable(grant, index, doc_id)
            _own(grant, doc.collections, f"remove {doc_id} from its")
            remove_document(index, doc_id)
            variants = in_step(index, self.variants, [doc_id])
        self._drop_upload(doc.source_path)
        return {"doc_id": doc_id, "removed": True, "variants": variants}

    def change_collections(self, grant: Grant | None, doc_id: str,
                           change: CollectionChange) -> dict:
        grant = _needs(grant, "admin")
        self._writable()
        add, remove = (_checked_collections(change.add) if change.add else [],
                       _checked_collections(change.remove) if change.remove else [])
        if not add and not remove:
            raise ApiError(422, "bad_request", "name collections to add or remove")
        _own(grant, add + remove, "change", named=True)
        with self._one, self._writing() as index:
            self._readable(grant, index, doc_id)
            try:
                after = index.catalog.change_collections(doc_id, add=add, remove=remove)
            except ValueError as exc:
                raise ApiError(422, "bad_request", str(exc)) from None
            variants = in_step(index, self.variants, [doc_id])
        return {"doc_id": doc_id, "collections": after, "variants": variants}

    # -- inside --------------------------------------------------------------------------
    def _writable(self) -> None:
        from finrag.retrieval.store.snapshot import is_publish_root

        if is_publish_root(self.index_dir):
            raise ApiError(409, "read_only", "this service serves a published snapshot, which "
                                             "is read-only: write to the index it is published "
                                             "from, then publish it again")

    def _writing(self):
        from finrag.retrieval.store.index import Index

        try:
            return Index.open(self.index_dir, readonly=False)
        except IndexBusyError:
            raise ApiError(409, "busy", "another ingest is writing the index; retry when it "
                                        "has finished", {"Retry-After": "30"}) from None

    @staticmethod
    def _readable(grant: Grant, index, doc_id: str):
        doc = index.catalog.document(doc_id)
        if doc is None or not (grant.collections is None
                               or grant.collections.intersection(doc.collections)):
            raise ApiError(404, "not_found", f"no filing {doc_id!r} in the index")
        return doc

    def _ingest(self, grant, upload, collections, doc_id, sha, data) -> tuple[int, dict]:
        from finrag.retrieval.indexer import Ingestor, remove_document
        from finrag.retrieval.ingest.prepare import DEFAULT_PARSE_MEMORY, prepare_apart
        from finrag.retrieval.routing.companies import CompanyConflict
        from finrag.retrieval.routing.mentions import CompanyDictionary

        with self._writing() as index:  # the checks, before any work
            known = index.catalog.document_by_sha(sha)
            same_id = index.catalog.document(doc_id)
            indexed = index.catalog.documents()
            for doc in (known, same_id):
                if doc is not None and not (grant.collections is None or
                                            grant.collections.intersection(doc.collections)):
                    raise ApiError(409, "exists", "a filing of this id or with this content "
                                                  "is already indexed")
            if known is not None and known.doc_id == doc_id:
                return 200, {"doc_id": doc_id, "collections": known.collections,
                             "pages": known.page_count, "chunks": known.chunk_count,
                             "added": False}
            if known is not None:
                raise ApiError(409, "exists", f"this content is already indexed as "
                                              f"{known.doc_id}")
            if same_id is not None:
                if not upload.replace:
                    raise ApiError(409, "exists", f"{doc_id} is already indexed from another "
                                                  "file; send replace=true to replace it")
                _own(grant, same_id.collections, f"replace {doc_id} in its")
        folder = self.index_dir / UPLOADS / sha[:16]
        path = folder / upload.filename
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, delete=False, suffix=".part") as tmp:
            tmp.write(data)
        Path(tmp.name).replace(path)
        sidecar = None
        if upload.metadata:
            sidecar = folder / "metadata.json"
            sidecar.write_text(json.dumps([{**upload.metadata, "doc_id": doc_id,
                                            "collections": collections}]))
        started = time.perf_counter()
        # what the upload teaches the company table is learned aside, and kept once it is in;
        # the companies of the filings indexed are settled too, as the router reads them
        companies = CompanyDictionary(self.companies, indexed).table.staged()
        try:
            ingestor = Ingestor(self.index_dir, self.embedder, metadata=sidecar,
                                companies=companies, collections=collections,
                                replace=upload.replace,
                                prepare=partial(prepare_apart, max_seconds=self.max_parse_s,
                                                max_memory=self.max_parse_bytes
                                                or DEFAULT_PARSE_MEMORY))
        except IndexBusyError:
            shutil.rmtree(folder, ignore_errors=True)
            raise ApiError(409, "busy", "another ingest is writing the index; retry when it "
                                        "has finished", {"Retry-After": "30"}) from None
        except CompanyConflict as exc:
            shutil.rmtree(folder, ignore_errors=True)
            raise ApiError(409, "conflict", f"metadata: {exc}".replace(f"{folder}/", "")
                           .replace(str(folder), "")) from None
        except ValueError as exc:  # the metadata
            shutil.rmtree(folder, ignore_errors=True)
            raise ApiError(422, "bad_request", f"metadata: {exc}".replace(str(folder), "")) \
                from None
        try:
            report = ingestor.run([path], progress=False)
            doc = ingestor.index.catalog.document(doc_id)
            if report.failed and doc is not None and doc.sha256 == sha and same_id is None:
                # committed, then refused (its facts): taken out again, all or nothing
                remove_document(ingestor.index, doc_id)
                doc = None
            if same_id is not None:  # the variants held the file replaced: they drop it
                in_step(ingestor.index, self.variants, [doc_id])
        finally:
            ingestor.close()
        if not report.failed and doc is not None:
            self.companies.adopt(companies)
        if report.failed or doc is None:
            shutil.rmtree(folder, ignore_errors=True)
            reason = report.failed[0][1] if report.failed else "nothing was indexed"
            # the reason names the file by its path here: the caller knows it by its name
            raise ApiError(422, "bad_document", reason.replace(str(path), upload.filename)
                           .replace(str(folder), ""))
        if same_id is not None:
            self._drop_upload(same_id.source_path, keep=folder)
        return 201, {"doc_id": doc_id, "collections": doc.collections, "pages": doc.page_count,
                     "chunks": doc.chunk_count, "added": True, "replaced": same_id is not None,
                     "seconds": round(time.perf_counter() - started, 3)}

    def _drop_upload(self, source_path: str, keep: Path | None = None) -> None:
        """Delete an uploaded file's folder once its filing is gone (files ingested from
        elsewhere are not ours to delete)."""
        folder = Path(source_path).parent
        if folder.parent == (self.index_dir / UPLOADS).resolve() and (
                keep is None or folder != keep.resolve()):
            shutil.rmtree(folder, ignore_errors=True)
