"""Caps on what one filing may hold, so a hostile or broken file (a decompression bomb, a
million-page PDF) is refused with a clear error instead of filling the disk or the memory.
The defaults are far above real filings: a 10-K PDF is ~100-400 pages of 2-8K characters."""

from __future__ import annotations

from dataclasses import dataclass

from finrag.retrieval.documents import DocumentError, ParsedDocument


@dataclass(frozen=True)
class IngestLimits:
    max_file_bytes: int = 512 * 2**20
    max_pages: int = 5000
    max_page_chars: int = 200_000  # text of one page
    max_page_content_bytes: int = 32 * 2**20  # one PDF page's decompressed content streams
    max_document_chars: int = 20_000_000

    def check_file(self, path, size: int) -> None:
        if size > self.max_file_bytes:
            raise DocumentError(f"{path}: file of {size / 2**20:.0f} MiB is over the limit of "
                                f"{self.max_file_bytes / 2**20:.0f} MiB")

    def check_pages(self, path, count: int) -> None:
        if count > self.max_pages:
            raise DocumentError(f"{path}: {count} pages is over the limit of {self.max_pages}")

    def check_page(self, path, number: int, chars: int, content_bytes: int = 0) -> None:
        if content_bytes > self.max_page_content_bytes:
            raise DocumentError(f"{path}: page {number} decompresses to {content_bytes} bytes, "
                                f"over the limit of {self.max_page_content_bytes} (a "
                                f"compression bomb?)")
        if chars > self.max_page_chars:
            raise DocumentError(f"{path}: page {number} holds {chars} characters, over the "
                                f"limit of {self.max_page_chars} (a compression bomb?)")

    def check_document(self, path, parsed: ParsedDocument) -> None:
        self.check_pages(path, parsed.page_count)
        for page in parsed.pages:
            self.check_page(path, page.number, len(page.text))
        if parsed.char_count > self.max_document_chars:
            raise DocumentError(f"{path}: {parsed.char_count} characters is over the limit of "
                                f"{self.max_document_chars}")


DEFAULT_LIMITS = IngestLimits()
