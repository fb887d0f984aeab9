"""Filings on disk → the index, one document at a time, resumable and atomic per document.

A document is parsed, chunked and embedded in memory, then written in one SQLite transaction
(the next file is parsed while one is embedded); a run that is killed loses at most the
documents in flight, and the next run skips every document already indexed (by sha256), so
re-running gives the same index as one clean run.
Files that cannot be read are reported one line each and the rest goes on.

The index variant (``retrieval.ingest.variants``: plain, meta, llmctx) decides the indexed text of each
chunk; it is applied between chunking and embedding. LLM contexts (llmctx) are persisted as they
are written, so a killed llmctx build resumes without writing them again.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from finrag.retrieval.routing.companies import CompanyTable, normalize_name
from finrag.retrieval.documents import (Chunk, DocumentError, DocumentMeta,
                                        check_collections)
from finrag.retrieval.facts.companyfacts import is_companyfacts_file
from finrag.retrieval.facts.load import load_companyfacts, load_inline
from finrag.retrieval.facts.model import FactsError
from finrag.retrieval.facts.store import FactStore
from finrag.retrieval.store.index import Index, IndexSettings
from finrag.retrieval.ingest.limits import DEFAULT_LIMITS, IngestLimits
from finrag.retrieval.ingest.metadata import load_sidecar, resolve_metadata
from finrag.retrieval.ingest.kinds import SUFFIXES, file_kind
from finrag.retrieval.ingest.prepare import (DocumentJob, ParseOptions, PreparedDocument,
                                             failure_line, prepare_document, sha256_of)
from finrag.retrieval.ingest.variants import ContextStore, Contextualizer, check_variant, indexed_chunks

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger("finrag.ingest")


def fact_sources(doc_id: str) -> list[str]:
    """The facts sources a document's file fills: its inline XBRL, its statement tables."""
    from finrag.retrieval.facts.statements import SOURCE_PREFIX

    return [f"ixbrl:{doc_id}", f"{SOURCE_PREFIX}{doc_id}"]


def remove_document(index: Index, doc_id: str) -> bool:
    """Take a document out of an index opened for writing, with its pages, chunks, vectors
    and the facts read from its file; False if it is not there."""
    if not index.remove_document(doc_id):
        return False
    FactStore(index.catalog.db).remove_sources(fact_sources(doc_id))
    return True


@dataclass
class IngestReport:
    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)  # doc ids also in added
    skipped: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (path, one-line reason)
    pages: int = 0
    chunks: int = 0
    seconds: float = 0.0
    parse_seconds: float = 0.0
    embed_seconds: float = 0.0
    write_seconds: float = 0.0
    context_seconds: float = 0.0  # llmctx: LLM time writing chunk contexts (not in parse_seconds)
    contexts_generated: int = 0
    contexts_reused: int = 0
    facts_added: int = 0  # XBRL facts stored (companyfacts JSON, inline XBRL of HTML filings)
    facts_files: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failed

    def summary(self) -> dict:
        return {
            "added": len(self.added),
            "replaced": len(self.replaced),
            "skipped": len(self.skipped),
            "failed": len(self.failed),
            "pages": self.pages,
            "chunks": self.chunks,
            "seconds": round(self.seconds, 2),
            "pages_per_s": round(self.pages / self.seconds, 2) if self.seconds else None,
            "chunks_embedded_per_s": (
                round(self.chunks / self.embed_seconds, 2) if self.embed_seconds else None
            ),
            "parse_seconds": round(self.parse_seconds, 2),
            "embed_seconds": round(self.embed_seconds, 2),
            "write_seconds": round(self.write_seconds, 2),
            "context_seconds": round(self.context_seconds, 2),
            "contexts_generated": self.contexts_generated,
            "contexts_reused": self.contexts_reused,
            "facts_added": self.facts_added,
            "facts_files": len(self.facts_files),
        }


def find_files(paths: Iterable[str | Path]) -> list[Path]:
    """Expand folders into their filings (PDF, HTML) and companyfacts files
    (``CIK##########.json``), sorted, facts files first (they date the inline XBRL of the
    filings), without duplicates."""
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found += sorted((f for f in p.rglob("*") if f.is_file() and _wanted(f)),
                            key=lambda f: (not is_companyfacts_file(f), str(f)))
        else:
            found.append(p)  # named explicitly: a missing or odd file is reported, not dropped
    seen, unique = set(), []
    for f in found:
        key = f.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique


def _wanted(path: Path) -> bool:
    kind = SUFFIXES.get(path.suffix.lower())
    return kind is not None and (kind != "facts" or is_companyfacts_file(path))


class Ingestor:
    """Holds the embedder and index for a run; ``run(paths)`` does the work.

    ``variant`` fixes the index variant when the index is created (an existing index of another
    variant is refused); ``llmctx`` needs a ``contextualizer`` (``retrieval.ingest.variants``)."""

    def __init__(
        self,
        index_dir: str | Path,
        embedder,
        *,
        chunk_size: int = 2500,
        chunk_overlap: int = 1250,
        metadata: str | Path | None = None,
        companies: CompanyTable | None = None,
        tables: bool = True,
        save_every_s: float = 60.0,
        variant: str = "plain",
        contextualizer: Contextualizer | None = None,
        replace: bool = False,
        accept_repaired: bool = False,
        limits: IngestLimits = DEFAULT_LIMITS,
        collections: list[str] | None = None,
        prepare: Callable[[DocumentJob, ParseOptions], PreparedDocument] | None = None,
    ):
        """``prepare``: how a file is parsed and chunked (default ``prepare_document``; e.g.
        ``prepare_apart`` in a child process, with its limits); the rest of the ingest is the
        same either way."""
        check_variant(variant)
        if variant == "llmctx" and contextualizer is None:
            raise ValueError("the llmctx variant needs a contextualizer (an LLM to write the "
                             "chunk contexts)")
        if variant != "llmctx" and contextualizer is not None:
            raise ValueError(f"a contextualizer is only used by the llmctx variant, "
                             f"not {variant!r}")
        self.variant = variant
        self.contextualizer = contextualizer
        self.progress = False
        self.embedder = embedder
        self.companies = CompanyTable.load() if companies is None else companies
        self.sidecar = load_sidecar(metadata, self.companies) if metadata else {}
        self.tables = tables
        self.save_every_s = save_every_s
        self.replace = replace  # a changed file of an indexed doc id replaces it
        self.accept_repaired = accept_repaired
        self.limits = limits
        self.prepare = prepare
        # for documents whose sidecar entry names none (checked before anything is read)
        self.collections = check_collections(collections) if collections else []
        self.index = Index.create_or_open(
            index_dir,
            IndexSettings(chunk_size=chunk_size, chunk_overlap=chunk_overlap,
                          embedder=embedder.name,
                          embedder_kind=getattr(embedder, "kind", "sentence-transformers"),
                          embedder_model_id=embedder.model_id,
                          dim=embedder.dim, normalize=getattr(embedder, "normalize", True),
                          variant=variant,
                          context_model=contextualizer.model_id if contextualizer else ""),
        )
        self.contexts = ContextStore(self.index.catalog.db) if contextualizer else None
        self.facts = FactStore(self.index.catalog.db)

    def close(self) -> None:
        self.index.close()

    def plan(self, path: Path, report: IngestReport) -> DocumentJob | None:
        """What to do with one file, decided before it is read: None when there is nothing to
        parse (a facts file, stored here at once; a document indexed before, skipped)."""
        if not path.is_file():
            raise DocumentError(f"{path}: no such file")
        sha = sha256_of(path)
        kind = file_kind(path)
        if kind == "facts":
            self._facts(path, report, lambda: load_companyfacts(self.facts, path, sha,
                                                                 self.companies), always=True)
            return None
        known = self.index.catalog.document_by_sha(sha)
        try:
            meta = resolve_metadata(path, self.sidecar, self.companies)
        except (DocumentError, ValueError):
            if not known:
                raise
            meta = known  # indexed before: its record names it
        if self._check_new(path, sha, meta) is None:
            report.skipped.append(str(path))
            if kind == "html":  # facts of a filing indexed before
                self._facts(path, report, lambda: load_inline(self.facts, path, known.doc_id,
                                                              sha, self.companies))
            return None
        return DocumentJob(path=path, sha256=sha, meta=meta,
                           hints_override=meta.doc_id not in self.sidecar)

    def _check_new(self, path: Path, sha: str, meta: DocumentMeta) -> bool | None:
        """None if these bytes are indexed under this id already; else whether the file
        replaces an indexed document of its id. Asked again at commit: a document committed
        since (the same file twice in one run) counts."""
        known = self.index.catalog.document_by_sha(sha)
        if known and known.doc_id != meta.doc_id:
            # the same bytes under another name: indexing them twice would answer twice
            raise DocumentError(
                f"{path}: holds the same content as {known.doc_id} (indexed from "
                f"{Path(known.source_path).name}); not indexed again as {meta.doc_id}")
        if known:
            return None
        existing = self.index.catalog.document(meta.doc_id)
        if existing and not self.replace:
            raise DocumentError(
                f"{path}: document id {meta.doc_id!r} is already indexed from "
                f"{existing.source_path} with different content (sha256 differs); pass "
                f"--replace to index this file instead, or `finrag remove {meta.doc_id}`"
            )
        return existing is not None

    @property
    def parse_options(self) -> ParseOptions:
        settings = self.index.settings
        return ParseOptions(chunk_size=settings.chunk_size, chunk_overlap=settings.chunk_overlap,
                            tables=self.tables, accept_repaired=self.accept_repaired,
                            limits=self.limits, collections=tuple(self.collections),
                            companies=self.companies)

    def finish(self, doc: PreparedDocument, report: IngestReport) -> None:
        """Embed a prepared document (llmctx: after writing its chunk contexts) and commit it."""
        contexts = None
        if self.contextualizer is not None:  # its time is not parse time: counted apart
            c = self.contextualizer
            before = (c.generated, c.reused, c.seconds)
            contexts = c.contextualize(doc.meta, doc.parsed, doc.chunks, store=self.contexts,
                                       sha256=doc.job.sha256, progress=self.progress)
            report.contexts_generated += c.generated - before[0]
            report.contexts_reused += c.reused - before[1]
            report.context_seconds += c.seconds - before[2]  # LLM time only
        self.commit(embed_document(doc, self.variant, self.embedder, contexts), report)

    def commit(self, embedded: EmbeddedDocument, report: IngestReport) -> None:
        """Write one embedded document in one transaction, with its facts."""
        doc, chunks, vectors = embedded.doc, embedded.chunks, embedded.vectors
        path, meta = doc.job.path, doc.meta
        replacing = self._check_new(path, doc.job.sha256, meta)
        if replacing is None:
            report.skipped.append(str(path))
            return
        self._check_facts_company(doc)
        t2 = time.perf_counter()
        if replacing:  # the old file's facts go with it (the new file's are stored below)
            self.facts.remove_sources(fact_sources(meta.doc_id))
        self.index.add_document(meta, doc.parsed, chunks, vectors,
                                source_path=str(path.resolve()), sha256=doc.job.sha256,
                                replace=replacing)
        report.added.append(meta.doc_id)
        if replacing:
            report.replaced.append(meta.doc_id)
        if file_kind(path) == "html":
            self._facts(path, report, lambda: load_inline(self.facts, path, meta.doc_id,
                                                          doc.job.sha256, self.companies))
        elif self.tables:  # a PDF has no XBRL: its statement tables are read instead
            self._statement_facts(meta.doc_id, report)
        t3 = time.perf_counter()  # the writer's own time, its facts included
        report.pages += doc.parsed.page_count
        report.chunks += len(chunks)
        report.parse_seconds += doc.parse_seconds
        report.embed_seconds += embedded.embed_seconds
        report.write_seconds += t3 - t2

    def _check_facts_company(self, doc: PreparedDocument) -> None:
        """A filing whose CIK the facts store records for a company of another name is refused
        before anything is written (its facts would be filed under that company)."""
        cik = str(doc.parsed.hints.get("cik") or "").strip()
        recorded = self.facts.recorded_company(cik) if cik.isdigit() else None
        if recorded is None or normalize_name(doc.meta.company) == normalize_name(recorded.name):
            return
        own = (self.companies.by_name(doc.meta.company)
               or (doc.meta.ticker and self.companies.by_ticker(doc.meta.ticker)) or None)
        if own is None or own.key != recorded.key:
            raise DocumentError(
                f"{doc.job.path}: the filing's CIK {cik} (dei:EntityCentralIndexKey) holds "
                f"facts of another company than {doc.meta.company}; refused: a filing cannot "
                f"stand for another company")

    def _statement_facts(self, doc_id: str, report: IngestReport) -> None:
        """Facts from the primary statements' tables of a PDF just indexed (no embedding; a
        company the table does not know holds none)."""
        from finrag.retrieval.facts.concepts import default_concepts
        from finrag.retrieval.facts.statements import store_statements

        try:
            found = store_statements(self.facts, self.index.catalog, doc_id, self.companies,
                                     default_concepts())
        except ValueError:
            return
        if found.facts:
            report.facts_added += len(found.facts)
            report.facts_files.append(doc_id)

    @staticmethod
    def _facts(path: Path, report: IngestReport, load: Callable[[], tuple[str, int | None]],
               always: bool = False) -> None:
        """Store a file's facts; ``always``: a facts file is listed even when it adds none."""
        try:
            _, added = load()
        except FactsError as err:
            raise DocumentError(str(err)) from None
        if added is None:  # this very file's facts are stored already
            if str(path) not in report.skipped:
                report.skipped.append(str(path))
        elif added or always:
            report.facts_added += added
            report.facts_files.append(str(path))

    def run(self, paths: Iterable[str | Path], *, progress: bool = True,
            on_error: Callable[[str], None] | None = None,
            workers: DocumentWorkers | None = None) -> IngestReport:
        """Ingest files one after another, or, with ``workers``, have them parse, chunk and
        embed the documents elsewhere (``serving.ray_ingest``) while this process, the one
        writer, commits each in file order."""
        from tqdm import tqdm

        if workers is not None and self.contextualizer is not None:
            raise ValueError("the llmctx variant writes its chunk contexts with the profile's "
                             "LLM in the writer's process: ingest it without workers")
        files = find_files(paths)
        report = IngestReport()
        self.progress = progress
        self._last_save = start = time.perf_counter()
        bar = tqdm(files, unit="doc", disable=not progress, file=sys.stderr, dynamic_ncols=True)
        try:
            if workers is None:
                self._one_after_another(files, report, on_error, bar)
            else:
                jobs = []
                for path in files:  # read nothing but the bytes' hash: quick
                    job = self._attempt(path, report, on_error, self.plan, path, report)
                    if job is not None:
                        jobs.append(job)
                    else:
                        bar.update(1)
                results = workers.run(jobs, self.parse_options, self.variant, self.index)
                for job, result in results:  # in the order of jobs: the same chunk ids
                    bar.set_postfix_str(job.path.name[:40])
                    if isinstance(result, str):  # the worker's one-line reason
                        self._attempt(job.path, report, on_error, _raise, DocumentError(result))
                    else:
                        self._attempt(job.path, report, on_error, self.commit, result, report)
                    bar.update(1)
        finally:
            bar.close()
            self.index.save()
            report.seconds = time.perf_counter() - start
        return report

    def _one_after_another(self, files: list[Path], report: IngestReport, on_error, bar) -> None:
        """Each file planned, parsed, embedded and committed in turn, with the next file parsed
        in a thread while this one is embedded: the parse is Python and MuPDF, the embedding
        native code that leaves the GIL, so the two share the cores. Plans and commits stay on
        this thread, the one that holds the index."""
        parser = ThreadPoolExecutor(1, thread_name_prefix="finrag-parse")
        current = None  # (path, the future of its prepared document)
        try:
            for path in [*files, None]:
                following = None
                if path is not None:
                    job = self._attempt(path, report, on_error, self.plan, path, report)
                    if job is None:
                        bar.update(1)
                    else:
                        following = (path, parser.submit(self.prepare or prepare_document,
                                                          job, self.parse_options))
                if current is not None:
                    done, prepared = current
                    bar.set_postfix_str(done.name[:40])
                    self._attempt(done, report, on_error,
                                  lambda: self.finish(prepared.result(), report))
                    bar.update(1)
                current = following
        finally:  # interrupted: no parse left to run behind
            parser.shutdown(wait=True, cancel_futures=True)

    def _attempt(self, path: Path, report: IngestReport, on_error, fn, *args, **kwargs):
        """``fn``'s result, or None with the file's failure reported: one file's problem never
        ends the run. The index is saved now and then."""
        result = None
        try:
            result = fn(*args, **kwargs)
        except Exception as e:
            message = failure_line(path, e)
            report.failed.append((str(path), message))
            if on_error:
                on_error(message)
        if time.perf_counter() - self._last_save > self.save_every_s:
            self.index.save()
            self._last_save = time.perf_counter()
        return result


def _raise(error: Exception):
    raise error


@dataclass
class EmbeddedDocument:
    """A prepared document with its indexed chunks (the variant's text) and their vectors."""
    doc: PreparedDocument
    chunks: list[Chunk]
    vectors: "np.ndarray"
    embed_seconds: float


class DocumentWorkers(Protocol):
    """Prepares and embeds documents in other processes (``serving.ray_ingest.RayWorkers``)."""

    def run(self, jobs: list[DocumentJob], options: ParseOptions, variant: str, index: Index
            ) -> Iterator[tuple[DocumentJob, EmbeddedDocument | str]]:
        """Each job's embedded document, or a one-line reason it failed, in the jobs' order;
        the workers' embedders must be the one ``index`` was built with."""
        ...


def embed_document(doc: PreparedDocument, variant: str, embedder,
                   contexts: list[str] | None = None) -> EmbeddedDocument:
    """The variant's indexed text of a prepared document (llmctx: with its chunk contexts),
    embedded."""
    t0 = time.perf_counter()
    chunks = indexed_chunks(variant, doc.meta, doc.chunks, contexts)
    vectors = embedder.encode([c.text for c in chunks])
    return EmbeddedDocument(doc, chunks, vectors, time.perf_counter() - t0)
