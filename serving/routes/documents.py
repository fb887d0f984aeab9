"""Reading the index: ``GET /v1/documents`` (the filings, a page at a time), a filing's page
as a picture with the cited passage highlighted, the web page and the endpoint list."""

import asyncio
import base64
import html
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import FileResponse, HTMLResponse

from finrag.serving.admission import ApiError
from finrag.serving.remote import DeadlineExceeded

router = APIRouter()

PAGE = "/v1/documents/{doc_id}/pages/{page}"
DOCUMENT = "/v1/documents/{doc_id}"
WEB_PAGE = Path(__file__).resolve().parents[1] / "web" / "index.html"

# what /v1/documents shows of a document: never its path on disk or its hash
PUBLIC_DOCUMENT_FIELDS = ("doc_id", "company", "ticker", "aliases", "doc_type", "fiscal_year",
                          "fiscal_quarter", "period_end", "filing_date", "sector",
                          "page_count", "char_count", "chunk_count")


def docs_page(spec: dict) -> str:
    """/docs: the endpoints of the OpenAPI schema as plain HTML, no script."""
    rows = []
    for path, methods in sorted(spec.get("paths", {}).items()):
        for method, op in methods.items():
            rows.append(f"<tr><td>{html.escape(method.upper())}</td><td><code>"
                        f"{html.escape(path)}</code></td><td>"
                        f"{html.escape(op.get('summary') or '')}</td></tr>")
    title = html.escape(spec.get("info", {}).get("title", "API"))
    return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title} "
            f"API</title></head><body><h1>{title} API</h1><p>The schema: "
            f"<a href=\"/openapi.json\">/openapi.json</a>. Calls under /v1 need "
            f"<code>Authorization: Bearer &lt;token&gt;</code>.</p><table><tr><th>method</th>"
            f"<th>path</th><th>what</th></tr>{''.join(rows)}</table></body></html>")


class DocumentRoutes:
    @router.get("/", include_in_schema=False)
    async def web_page(self) -> FileResponse:
        # the page holds no data: every call it makes carries the bearer token the user gives
        return FileResponse(WEB_PAGE, media_type="text/html; charset=utf-8")

    @router.get("/docs", include_in_schema=False)
    async def api_docs(self, request: Request) -> HTMLResponse:
        return HTMLResponse(docs_page(request.app.openapi()))

    @router.get(PAGE, summary="A page of a filing with the cited passage highlighted",
                response_model=None)
    async def page(self, request: Request, doc_id: str = PathParam(..., max_length=256),
                   page: int = PathParam(..., ge=1, le=100_000),
                   chunk: int | None = Query(None, ge=0, le=2**63 - 1)) -> dict[str, Any]:
        grant = self.gate.authorize(request)
        if grant is not None and grant.collections is not None:
            readable = await asyncio.to_thread(lambda: self._view(grant).index.readable)
            if doc_id not in readable:  # the reply of a filing that is not in the index
                self.gate.record(grant, "page", 404, doc=doc_id)
                raise ApiError(404, "not_found", f"no filing {doc_id!r} in the index")
        try:
            view = await asyncio.wait_for(
                self.handles["retriever"].page_view.remote(doc_id, page, chunk),
                self.cfg.limits.deadline_s)
        except asyncio.TimeoutError:
            raise ApiError(504, "deadline", "the page was not rendered within the deadline of "
                                            f"{self.cfg.limits.deadline_s:g} s") from None
        self.gate.record(grant, "page", view["status"], doc=doc_id, page=page)
        if view["status"] != 200:
            raise ApiError(view["status"], "not_found" if view["status"] == 404 else
                           "bad_request", view["error"])
        return {"doc_id": doc_id, "page": view["page"], "page_count": view["page_count"],
                "highlighted": view["highlighted"],
                "image": "data:image/png;base64," + base64.b64encode(view["png"]).decode()}

    @router.get("/v1/documents", summary="The filings in the index, a page at a time",
                response_model=None)
    async def documents(self, request: Request, offset: int = Query(0, ge=0, le=10**9),
                        limit: int = Query(50, ge=1, le=10**9)) -> dict[str, Any]:
        grant = self.gate.authorize(request)
        limit = min(limit, self.cfg.limits.max_page_size)
        try:
            docs = await asyncio.wait_for(self.handles["retriever"].documents.remote(),
                                          self.cfg.limits.health_timeout_s * 6)
        except Exception as exc:
            raise self.gate.failure(exc if not isinstance(exc, asyncio.TimeoutError)
                                    else DeadlineExceeded()) from None
        if grant is not None and grant.collections is not None:  # only what it may read
            docs = [d for d in docs if grant.collections.intersection(d.get("collections") or [])]
        page = [{k: v for k, v in d.items() if k in PUBLIC_DOCUMENT_FIELDS}
                for d in docs[offset:offset + limit]]
        self.gate.record(grant, "/v1/documents", 200, count=len(docs))
        more = offset + limit < len(docs)
        return {"count": len(docs), "offset": offset, "limit": limit,
                "next_offset": offset + limit if more else None, "documents": page}
