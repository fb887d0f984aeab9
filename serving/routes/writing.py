"""Writing the index over HTTP: upload a filing, remove one, move one between collections
(``serving.writes`` says who may). At most ``limits.max_writes`` run at once; each runs to its
end in a worker thread, whatever the client does."""

import asyncio
from typing import Any, Callable

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from finrag.serving.admission import ApiError
from finrag.serving.remote import RemoteEmbedder
from finrag.serving.deployments import variant_dirs
from finrag.serving.routes.documents import DOCUMENT
from finrag.serving.tokens import Grant
from finrag.serving.writes import CollectionChange, DocumentUpload, IndexWriter

router = APIRouter()


class WriteSlot:
    """One of ``limits.max_writes``: taken before a write's body is read, given back when the
    request ends without a write, or when its write ends (past the deadline too)."""

    def __init__(self, ingress: Any):
        self.ingress, self.held, self.handed = ingress, True, False
        ingress.writes += 1

    def release(self) -> None:
        if self.held:
            self.held = False
            self.ingress.writes -= 1


class WriteRoutes:
    def writer(self) -> IndexWriter:
        if self._writer is None:
            from finrag.retrieval.routing.companies import CompanyTable

            self._writer = IndexWriter(self.cfg.index_dir(),
                                       RemoteEmbedder(self.handles["embedder"]).described(),
                                       CompanyTable.load(self.cfg.companies),
                                       self.cfg.limits.max_upload_bytes,
                                       variants=variant_dirs(self.cfg))
        return self._writer

    def write_slot(self) -> WriteSlot:
        """A write's slot, or 503 with Retry-After at once when ``limits.max_writes`` run."""
        limit = self.cfg.limits.max_writes
        if self.writes >= limit:
            wait = self.cfg.limits.retry_after_s or 30
            raise ApiError(503, "overloaded", f"overloaded: {self.writes} writes in progress "
                           f"(limit {limit}); retry after {wait} s", {"Retry-After": str(wait)})
        return WriteSlot(self)

    async def _write(self, request: Request, grant: Grant | None, action: str,
                     work: Callable[[], Any], **what) -> JSONResponse:
        """One write in a worker thread, in the slot the middleware took for it. Past
        ``limits.write_deadline_s`` the client gets 504, and the write is not stopped: it runs
        to its end, as when the client goes (a filing is committed whole or not at all, so
        it is then either in the index or not), holding its slot until then. Its audit line
        is written when it ends, with its status (and ``replied: 504`` when it ended late)."""
        slot = getattr(request.state, "write_slot", None)
        late = False
        future = asyncio.get_running_loop().run_in_executor(None, work)

        def ended(done: asyncio.Future) -> None:
            if slot is not None:
                slot.release()
            exc = asyncio.CancelledError() if done.cancelled() else done.exception()
            result = None if exc is not None else done.result()
            status = (exc.status if isinstance(exc, ApiError) else 500 if exc is not None
                      else result[0] if isinstance(result, tuple) else 200)
            self.gate.record(grant, action, status, **what, **({"replied": 504} if late else {}))

        if slot is not None:
            slot.handed = True
        future.add_done_callback(ended)
        deadline = self.cfg.limits.write_deadline_s
        try:  # shielded: neither the deadline nor a client gone cancels the write
            result = await asyncio.wait_for(asyncio.shield(future), deadline)
        except asyncio.TimeoutError:
            late = True
            raise ApiError(504, "deadline", f"the write did not end within {deadline:g} s; it "
                                            "goes on to its end, all or nothing: look for its "
                                            "result before sending it again") from None
        status, body = result if isinstance(result, tuple) else (200, result)
        return JSONResponse(body, status_code=status)

    @router.post("/v1/documents", status_code=201, summary="Upload and ingest a filing",
                 response_model=None,
                 response_description="The filing's doc id, collections, pages and chunks")
    async def upload(self, upload: DocumentUpload, request: Request) -> JSONResponse:
        grant = self.gate.authorize(request)
        return await self._write(request, grant, "ingest",
                                 lambda: self.writer().ingest(grant, upload),
                                 doc=upload.filename, into=sorted(upload.collections))

    @router.delete(DOCUMENT, summary="Remove a filing from the index", response_model=None)
    async def remove(self, doc_id: str, request: Request) -> JSONResponse:
        grant = self.gate.authorize(request)
        return await self._write(request, grant, "remove",
                                 lambda: self.writer().remove(grant, doc_id), doc=doc_id)

    @router.put(DOCUMENT + "/collections", summary="Add a filing to collections or take it out",
                response_model=None)
    async def collections(self, doc_id: str, change: CollectionChange,
                          request: Request) -> JSONResponse:
        grant = self.gate.authorize(request)
        return await self._write(
            request, grant, "collections",
            lambda: self.writer().change_collections(grant, doc_id, change),
            doc=doc_id, add=change.add, remove=change.remove)
