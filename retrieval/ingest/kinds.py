"""What a file holds: a PDF, an HTML filing or a companyfacts JSON, by its bytes first."""

from __future__ import annotations

from pathlib import Path

SUFFIXES = {".pdf": "pdf", ".htm": "html", ".html": "html", ".json": "facts"}


def file_kind(path: Path) -> str | None:
    """What a file holds: ``pdf`` when its first KiB has the PDF header (the bytes decide,
    whatever the name says: PDF bytes named ``.htm`` are read as a PDF), ``html`` for markup
    under any name, else what its name says (``facts`` for a companyfacts JSON, None for
    an unknown type). A file that cannot be read is judged by its name; reading it says why."""
    by_name = SUFFIXES.get(path.suffix.lower())
    try:
        with path.open("rb") as f:
            head = f.read(1024)
    except OSError:
        return by_name
    return bytes_kind(head, by_name) or by_name


def bytes_kind(head: bytes, by_name: str | None = None) -> str | None:
    """What a file's first KiB says it holds: ``pdf``, ``html`` (markup, unless the name says
    a facts JSON), else None."""
    if b"%PDF-" in head:
        return "pdf"
    if by_name != "facts" and head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<"):
        return "html"
    return None


def misnamed(name: str, head: bytes) -> tuple[str, str] | None:
    """(the kind the name says, the kind the bytes say) of a filing whose bytes are not what
    its name says (HTML bytes named ``.pdf``); None when they agree or the bytes say nothing."""
    by_name = SUFFIXES.get(Path(name).suffix.lower())
    read = bytes_kind(head, by_name)
    if by_name in ("pdf", "html") and read is not None and read != by_name:
        return by_name, read
    return None
