"""A filing file read, checked and chunked: the part of an ingest that needs no index and no
model (``prepare_document``), so it runs anywhere: in the ingest's own process, in a child
process bounded in time and memory for a file nobody vouches for (``prepare_apart``), or on a
Ray worker."""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import time
from dataclasses import dataclass
from dataclasses import replace as with_fields
from pathlib import Path

from finrag.retrieval.documents import Chunk, DocumentError, DocumentMeta, ParsedDocument
from finrag.retrieval.ingest.chunking import chunk_pages
from finrag.retrieval.ingest.html import parse_sec_html
from finrag.retrieval.ingest.kinds import file_kind, misnamed
from finrag.retrieval.ingest.limits import DEFAULT_LIMITS, IngestLimits
from finrag.retrieval.ingest.pdf import parse_pdf
from finrag.retrieval.routing.companies import CompanyTable

log = logging.getLogger("finrag.ingest")
DEFAULT_PARSE_MEMORY = 4 * 2**30  # address space of a parse in a child process (prepare_apart)


def failure_line(path: Path, e: Exception) -> str:
    """A file's failure in one line that starts with its path."""
    if isinstance(e, (DocumentError, ValueError)):
        message = str(e).splitlines()[0] if str(e).strip() else type(e).__name__
    elif isinstance(e, OSError):
        message = f"cannot read file ({e.strerror or type(e).__name__})"
    elif isinstance(e, sqlite3.IntegrityError):
        message = "indexed meanwhile by another writer (same id or content); run again"
    else:
        message = f"unexpected {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return message if message.startswith(str(path)) else f"{path}: {message}"


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def parse_file(path: Path, *, tables: bool = True, accept_repaired: bool = False,
               limits: IngestLimits = DEFAULT_LIMITS) -> ParsedDocument:
    kind = file_kind(path)
    if kind not in ("html", "pdf"):
        raise DocumentError(f"{path}: unsupported file type {path.suffix or '(none)'} "
                            f"(PDF or HTML)")
    limits.check_file(path, path.stat().st_size)
    with path.open("rb") as f:
        if wrong := misnamed(path.name, f.read(1024)):
            log.warning("%s: named as %s (%s) but its bytes are %s: read as %s", path,
                        wrong[0], path.suffix, wrong[1], wrong[1])
    if kind == "html":
        parsed = parse_sec_html(path)
    else:
        parsed = parse_pdf(path, tables=tables, accept_repaired=accept_repaired, limits=limits)
    limits.check_document(path, parsed)
    return parsed


def _check_identity(path: Path, meta: DocumentMeta, parsed: ParsedDocument,
                    companies: CompanyTable) -> None:
    """A filing's own dei: tags (CIK, ticker, registrant name) must not name another company
    than its sidecar entry or file name: else a hostile filing could pose as another company's
    10-K (and add facts under that company's CIK)."""
    hints = parsed.hints
    own = companies.by_name(meta.company) or (meta.ticker and companies.by_ticker(meta.ticker))
    claims = []
    if (cik := str(hints.get("cik") or "").strip()).isdigit():
        by_cik = next((c for c in companies.all() if c.cik == cik.zfill(10)), None)
        claims.append((by_cik, f"dei:EntityCentralIndexKey {cik}"))
        if own and own.cik and own.cik != cik.zfill(10):
            raise DocumentError(
                f"{path}: the filing's CIK {cik} (dei:EntityCentralIndexKey) is not the one "
                f"the company table records for {meta.company}; refused: a filing cannot "
                f"give a company another CIK")
    if ticker := hints.get("ticker"):
        claims.append((companies.by_ticker(ticker), f"dei:TradingSymbol {ticker}"))
    if name := hints.get("company"):
        claims.append((companies.by_name(name), f"dei:EntityRegistrantName {name!r}"))
    for claimed, tag in claims:
        if claimed is not None and (not own or claimed.key != own.key):
            raise DocumentError(
                f"{path}: the filing names {claimed.name} ({tag}) but is filed as "
                f"{meta.company} (its sidecar entry or file name); refused: a filing cannot "
                f"stand for another company. Fix the sidecar entry or the file name")


def _apply_hints(meta: DocumentMeta, parsed: ParsedDocument, *, override: bool) -> DocumentMeta:
    """Facts a filing states about itself (inline-XBRL dei: tags) fill what the sidecar left
    open, and beat what was only guessed from the file name (``override``): EDGAR file names
    carry a filing date, the document carries its fiscal period."""
    for key in ("ticker", "doc_type", "fiscal_year", "fiscal_quarter", "period_end"):
        value = parsed.hints.get(key)
        # who the filer is comes from the sidecar or the file name, never from the file
        may_override = override and key != "ticker"
        if value is not None and (may_override or getattr(meta, key) in (None, "")):
            setattr(meta, key, value)
    return meta


@dataclass
class DocumentJob:
    """A file the writer has decided to index: its bytes' sha256 and its resolved metadata."""
    path: Path
    sha256: str
    meta: DocumentMeta
    hints_override: bool  # the metadata was only guessed from the file name


@dataclass(frozen=True)
class ParseOptions:
    """Everything parsing and chunking a file depends on, besides the file."""
    chunk_size: int
    chunk_overlap: int
    tables: bool
    accept_repaired: bool
    limits: IngestLimits
    collections: tuple[str, ...]  # for a document whose metadata names none
    companies: CompanyTable


@dataclass
class PreparedDocument:
    """A file read, checked and chunked, not yet embedded."""
    job: DocumentJob
    meta: DocumentMeta
    parsed: ParsedDocument
    chunks: list[Chunk]
    parse_seconds: float


def prepare_document(job: DocumentJob, options: ParseOptions) -> PreparedDocument:
    """Parse (tables too), check the filing's own identity tags, fill metadata from them and
    chunk: the part of an ingest that needs no index and no model, so it runs anywhere."""
    t0 = time.perf_counter()
    path = job.path
    parsed = parse_file(path, tables=options.tables, accept_repaired=options.accept_repaired,
                        limits=options.limits)
    _check_identity(path, job.meta, parsed, options.companies)
    meta = _apply_hints(with_fields(job.meta), parsed, override=job.hints_override)
    if not meta.collections:
        meta = with_fields(meta, collections=list(options.collections))
    chunks = chunk_pages(parsed.pages, size=options.chunk_size, overlap=options.chunk_overlap)
    return PreparedDocument(job, meta, parsed, chunks, time.perf_counter() - t0)


def prepare_apart(job: DocumentJob, options: ParseOptions, *, max_seconds: float,
                  max_memory: int | None = DEFAULT_PARSE_MEMORY) -> PreparedDocument:
    """``prepare_document`` in a child process of its own, for a file nobody vouches for (an
    upload): a file that hangs the parser past ``max_seconds``, needs more than ``max_memory``
    bytes of address space (where the OS can limit it) or kills the parser is refused with a
    DocumentError, and the calling process is unharmed. The child is forked from a server
    process that has the parsers imported (spawned where the OS cannot fork a server)."""
    import multiprocessing

    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([__name__])  # not __main__: the caller's script
    else:
        context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_prepare_child, args=(job, options, max_memory, send),
                            name="finrag-parse", daemon=True)
    child.start()
    send.close()
    try:
        if not receive.poll(max_seconds):
            raise DocumentError(f"{job.path}: reading the file took over {max_seconds:g} s; "
                                f"refused")
        try:
            outcome = receive.recv()
        except EOFError:
            child.join(5)
            raise DocumentError(f"{job.path}: the parser stopped on this file (exit code "
                                f"{child.exitcode}); refused") from None
    finally:
        if child.is_alive():
            child.kill()
        child.join(5)
        receive.close()
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


def _prepare_child(job: DocumentJob, options: ParseOptions, max_memory: int | None,
                   send) -> None:
    """The child of ``prepare_apart``: its address space bounded, then the file prepared; the
    prepared document, or a DocumentError, goes back through ``send``."""
    if max_memory:
        try:
            import resource

            _, hard = resource.getrlimit(resource.RLIMIT_AS)
            limit = max_memory if hard == resource.RLIM_INFINITY else min(max_memory, hard)
            resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
        except (ImportError, ValueError, OSError):
            pass  # an OS without the limit: the time limit still holds
    try:
        outcome = prepare_document(job, options)
    except MemoryError:
        outcome = DocumentError(f"{job.path}: reading the file needs more than "
                                f"{max_memory / 2**20:.0f} MiB of memory; refused")
    except Exception as e:  # sent as one line: any exception type may not unpickle there
        outcome = DocumentError(failure_line(job.path, e))
    send.send(outcome)
    send.close()
