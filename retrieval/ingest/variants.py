"""Index variants: what text of a chunk is indexed (FTS5 and embedder) and stored.

- ``plain``: the chunk text as cut from the pages.
- ``meta`` (V-A): ``[Company: X, Fiscal Year: Y, Quarter: Qn, Type: T]``, a space, then the
  chunk text. Fiscal Year, Quarter and Type appear only when they are known (a 10-K has no
  quarter); the company is always known.
- ``llmctx`` (V-B): a 50-100 token context written by an LLM that situates the chunk within its
  filing (company, filing type and period, section or topic), one line, a space, then the chunk.

The prefix is joined with a space, never a newline: in a chunk's text every newline is a page
boundary (``retrieval.systems.context.mark_pages`` relies on it to mark pages for citations), so the
prefix must not add one. Tokenizers (FTS5, the embedders) treat both alike.

The variant is fixed per index (``IndexSettings.variant``). The prefixed text is what is stored
as the chunk text, so FTS5, the embedder, snippets and the generator all see the same thing;
a chunk's pages and character offsets still refer to the page text, not to the prefix.

LLM contexts cost seconds per chunk on CPU, so each one is persisted as soon as it is written,
in a ``chunk_contexts`` table of the index's catalog keyed by (document sha256, chunk seq, chunk
text hash, model, prompt version). A build that is killed and re-run reuses them and writes only
the missing ones; the document itself is still added to the index all or nothing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import sqlite3
import sys
import time
from collections.abc import Callable

from finrag.retrieval.documents import Chunk, DocumentMeta, ParsedDocument
from finrag.retrieval.ingest.chunking import join_pages

VARIANTS = ("plain", "meta", "llmctx")
PROMPT_VERSION = "ctx-v1"  # part of a stored context's key: change it when the prompt changes
PREFIX_SEP = " "  # between a prefix and the chunk text: no newline (newlines are page breaks)


def check_variant(variant: str) -> str:
    if variant not in VARIANTS:
        raise ValueError(f"unknown index variant {variant!r}; known: {', '.join(VARIANTS)}")
    return variant


# V-A ------------------------------------------------------------------------------------
def meta_prefix(meta: DocumentMeta) -> str:
    """``[Company: X, Fiscal Year: Y, Quarter: Qn, Type: T]`` with the unknown parts left out."""
    parts = [f"Company: {' '.join(meta.company.split())}"]
    if meta.fiscal_year:
        parts.append(f"Fiscal Year: {meta.fiscal_year}")
    if meta.fiscal_quarter:
        parts.append(f"Quarter: Q{meta.fiscal_quarter}")
    if meta.doc_type:
        parts.append(f"Type: {meta.doc_type}")
    return "[" + ", ".join(parts) + "]"


def with_prefix(prefix: str, text: str) -> str:
    prefix = " ".join(prefix.split())  # one line: a newline would read as a page break
    return f"{prefix}{PREFIX_SEP}{text}" if prefix else text


def indexed_chunks(variant: str, meta: DocumentMeta, chunks: list[Chunk],
                   contexts: list[str] | None = None) -> list[Chunk]:
    """The chunks with the variant's indexed text; seq, pages and offsets are unchanged."""
    check_variant(variant)
    if variant == "plain":
        return list(chunks)
    if variant == "meta":
        prefix = meta_prefix(meta)
        return [dataclasses.replace(c, text=with_prefix(prefix, c.text)) for c in chunks]
    if contexts is None or len(contexts) != len(chunks):
        raise ValueError("the llmctx variant needs one context per chunk")
    return [dataclasses.replace(c, text=with_prefix(ctx, c.text))
            for c, ctx in zip(chunks, contexts)]


# V-B: the persisted contexts -----------------------------------------------------------------
def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


_CONTEXTS_SCHEMA = """
CREATE TABLE IF NOT EXISTS chunk_contexts (
    sha256 TEXT NOT NULL,        -- the document file's sha256
    seq INTEGER NOT NULL,        -- the chunk's position in the document
    text_hash TEXT NOT NULL,     -- sha256 of the chunk text (without any prefix)
    model TEXT NOT NULL,         -- the LLM that wrote the context
    prompt TEXT NOT NULL,        -- PROMPT_VERSION
    context TEXT NOT NULL,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    created_at TEXT NOT NULL DEFAULT (datetime('now')),
    PRIMARY KEY (sha256, seq, text_hash, model, prompt)
);
"""


class ContextStore:
    """LLM-written chunk contexts in a SQLite database (the index's catalog), each batch
    committed in its own small transaction as soon as it is written."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db
        with self.db:
            self.db.executescript(_CONTEXTS_SCHEMA)

    def lookup(self, sha256: str, model: str, prompt: str = PROMPT_VERSION
               ) -> dict[tuple[int, str], str]:
        """{(seq, text_hash): context} for one document, model and prompt version."""
        rows = self.db.execute(
            "SELECT seq, text_hash, context FROM chunk_contexts "
            "WHERE sha256 = ? AND model = ? AND prompt = ?", (sha256, model, prompt))
        return {(seq, h): ctx for seq, h, ctx in rows}

    def put(self, sha256: str, model: str, rows: list[tuple[int, str, str, int, int]],
            prompt: str = PROMPT_VERSION) -> None:
        """rows: (seq, text_hash, context, prompt_tokens, completion_tokens)."""
        with self.db:
            self.db.executemany(
                "INSERT OR REPLACE INTO chunk_contexts(sha256, seq, text_hash, model, prompt, "
                "context, prompt_tokens, completion_tokens) VALUES (?,?,?,?,?,?,?,?)",
                [(sha256, seq, h, model, prompt, ctx, pt, ct) for seq, h, ctx, pt, ct in rows])

    def count(self, sha256: str | None = None) -> int:
        if sha256 is None:
            return self.db.execute("SELECT count(*) FROM chunk_contexts").fetchone()[0]
        return self.db.execute("SELECT count(*) FROM chunk_contexts WHERE sha256 = ?",
                               (sha256,)).fetchone()[0]


# V-B: writing contexts ------------------------------------------------------------------------
_SYSTEM = (
    "You write a short context for a chunk of an SEC filing so that search can find the chunk. "
    "Say which company and filing (type and period) the chunk comes from, which section of the "
    "filing it belongs to and what it is about. Write one or two sentences, 50 to 100 tokens, "
    "and nothing else."
)

_USER = """<document>
{opening}
</document>
{about}
Here is a chunk of this document (page {pages}):
<chunk>
{chunk}
</chunk>

Write the short context for this chunk. Start with "This chunk is from"."""


def describe(meta: DocumentMeta) -> str:
    """One line about the filing from its catalog metadata, for the prompt."""
    what = meta.doc_type or "filing"
    period = []
    if meta.fiscal_quarter:
        period.append(f"Q{meta.fiscal_quarter}")
    if meta.fiscal_year:
        period.append(f"fiscal year {meta.fiscal_year}")
    if meta.period_end:
        period.append(f"period ended {meta.period_end}")
    line = f"The document is the {what} of {' '.join(meta.company.split())}"
    return line + (f" for {', '.join(period)}." if period else ".")


_LABEL = re.compile(r"^\s*(context( note)?|note)\s*:\s*", re.I)
_TAG = re.compile(r"</?[A-Za-z][\w-]{0,20}(\s[^<>]{0,80})?>")  # <chunk>, <p>, … echoed back


def clean_context(text: str, truncated: bool) -> str:
    """One line of prose: labels, markup tags and surrounding quotes dropped; a note cut off
    by the token cap ends at its last full sentence when that keeps most of it."""
    text = _LABEL.sub("", " ".join(_TAG.sub(" ", text).split())).strip().strip('"').strip()
    if truncated:
        end = max(text.rfind(". "), text.rfind("! "), text.rfind("? "))
        if text[-1:] in ".!?":
            end = len(text) - 1
        if end >= len(text) // 2:
            text = text[: end + 1]
    return text


def _is_loader(obj) -> bool:
    return callable(obj) and not hasattr(obj, "generate")


class Contextualizer:
    """Writes a context per chunk with an LLM engine (``models.llm.LLMEngine``), in batches.

    ``llm`` is an engine, or a no-argument callable that loads one when the first context is
    needed (then pass ``model_id``): a re-run whose contexts are all stored loads no model.

    ``on_context(seq, context)`` is called after each context is persisted (progress hooks;
    raising from it interrupts the build like Ctrl-C would). ``generated``/``reused`` count the
    contexts written by the LLM and those taken from the store over this object's lifetime.
    """

    def __init__(self, llm, *, model_id: str | None = None, batch_size: int = 4,
                 max_tokens: int = 100,
                 opening_chars: int = 1500, chunk_chars: int = 4000,
                 describe_document: bool = True,
                 on_context: Callable[[int, str], None] | None = None):
        from finrag.models.llm import SamplingParams

        self._llm = None if _is_loader(llm) else llm
        self._loader = llm if self._llm is None else None
        if model_id is None and self._llm is None:
            raise ValueError("pass model_id with an LLM loader")
        self.model_id = model_id or str(getattr(llm, "model_id", "") or type(llm).__name__)
        self.batch_size = max(1, batch_size)
        self.params = SamplingParams(max_tokens=max_tokens, temperature=0.0)
        self.opening_chars = opening_chars
        self.chunk_chars = chunk_chars
        self.describe_document = describe_document
        self.on_context = on_context
        self.generated = 0
        self.reused = 0
        self.seconds = 0.0

    @property
    def llm(self):
        if self._llm is None:
            self._llm = self._loader()
        return self._llm

    def prompt(self, meta: DocumentMeta, opening: str, chunk: Chunk) -> list[dict]:
        pages = (str(chunk.first_page) if chunk.first_page == chunk.last_page
                 else f"{chunk.first_page}-{chunk.last_page}")
        user = _USER.format(opening=opening,
                            about=(describe(meta) + "\n") if self.describe_document else "",
                            pages=pages, chunk=chunk.text[: self.chunk_chars])
        return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]

    def contextualize(self, meta: DocumentMeta, parsed: ParsedDocument, chunks: list[Chunk], *,
                      store: ContextStore | None = None, sha256: str | None = None,
                      progress: bool = False) -> list[str]:
        """One context per chunk, in order. With a ``store`` (and the document's ``sha256``)
        stored contexts are reused and each new batch is persisted before the next starts."""
        from tqdm import tqdm

        if store is not None and not sha256:
            raise ValueError("a context store needs the document's sha256")
        hashes = [text_hash(c.text) for c in chunks]
        have = store.lookup(sha256, self.model_id) if store is not None else {}
        contexts: list[str | None] = [have.get((c.seq, h)) for c, h in zip(chunks, hashes)]
        todo = [i for i, ctx in enumerate(contexts) if ctx is None]
        self.reused += len(chunks) - len(todo)
        if not todo:
            return [c for c in contexts]  # type: ignore[misc]
        opening = join_pages(parsed.pages)[0][: self.opening_chars].strip()
        bar = tqdm(total=len(chunks), initial=len(chunks) - len(todo), unit="chunk",
                   desc=f"contexts {meta.doc_id}"[:40], leave=False, disable=not progress,
                   file=sys.stderr, dynamic_ncols=True)
        try:
            for start in range(0, len(todo), self.batch_size):
                batch = todo[start:start + self.batch_size]
                t0 = time.perf_counter()
                outs = self.llm.generate([self.prompt(meta, opening, chunks[i]) for i in batch],
                                         self.params)
                self.seconds += time.perf_counter() - t0
                rows = []
                for i, out in zip(batch, outs):
                    contexts[i] = clean_context(out.text, out.finish_reason == "length")
                    rows.append((chunks[i].seq, hashes[i], contexts[i], out.prompt_tokens,
                                 out.completion_tokens))
                if store is not None:
                    store.put(sha256, self.model_id, rows)
                self.generated += len(batch)
                bar.update(len(batch))
                if self.on_context:
                    for i in batch:
                        self.on_context(chunks[i].seq, contexts[i])
        finally:
            bar.close()
        return [c for c in contexts]  # type: ignore[misc]
