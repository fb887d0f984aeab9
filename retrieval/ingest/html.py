"""Parse SEC EDGAR filings (10-K, 10-Q, 8-K) saved as inline-XBRL HTML.

``parse_sec_html`` turns one filing into a ``ParsedDocument``:

* pages are split at CSS page breaks (``page-break-before/after: always``, ``break-before/after: page``);
* text is plain, one line per block element, one line per table row with cells joined by " | ";
* tables with at least two non-empty rows and two columns become ``Table`` objects whose rows
  are keyed by the first non-empty row;
* hints come from the ``dei:`` facts the filing tags about itself (company, ticker, period ...).

Hidden content (the ``ix:header`` block, anything styled ``display:none``) is left out of the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import lxml.etree
import lxml.html

from finrag.retrieval.documents import DocumentError, ParsedDocument, ParsedPage, Table

__all__ = ["parse_sec_html", "read_html", "parse_html"]

_BLOCK_TAGS = frozenset(
    "address article aside blockquote body caption center dd div dl dt figcaption figure footer form "
    "h1 h2 h3 h4 h5 h6 header hr li main nav ol p pre section table tr ul".split()
)
_SKIP_TAGS = frozenset({"head", "script", "style", "title", "noscript", "template", "ix:header"})
_HIDDEN_RE = re.compile(r"display\s*:\s*none", re.I)
_BREAK_RE = re.compile(r"(?:page-)?break-(before|after)\s*:\s*(?:always|page|left|right)", re.I)
_WS_RE = re.compile(r"\s+")
_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\ufeff"))
_HTML_SNIFF_RE = re.compile(
    rb"<\s*(?:!doctype\s+html|html|head|body|div|p|table|span|font|br|title)[\s>/]", re.I
)

_CURRENCY_CELLS = frozenset({"$", "€", "£", "¥"})
_CLOSING_CELLS = frozenset({")", "%", ")%", "%)"})

_PAGE_BREAK = object()  # marker in the text stream


@dataclass
class _PendingTable:
    """A table seen in the text stream; its page and index are known only once pages are cut."""

    header: list[str]
    rows: list[dict[str, str]]


def parse_sec_html(path: str | Path) -> ParsedDocument:
    """Read an EDGAR HTML filing into pages, tables and ``dei:`` hints.

    Raises DocumentError for a missing, empty or non-HTML file, or HTML without any text.
    """
    path = Path(path)
    root = read_html(path)
    hints = _dei_hints(root)
    stream: list[Any] = []
    body = root.find("body")
    _walk_children(body if body is not None else root, stream)
    pages = _cut_pages(stream)
    if not pages:
        raise DocumentError(f"{path}: HTML contains no text")
    return ParsedDocument(pages=pages, hints=hints)


def read_html(path: Path) -> lxml.html.HtmlElement:
    """The parsed tree of an HTML file; DocumentError for a missing, empty or non-HTML file."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DocumentError(f"{path}: cannot read file ({exc.strerror or exc})") from exc
    if not data.strip():
        raise DocumentError(f"{path}: empty file")
    head = data[:65536]
    if head.lstrip().startswith(b"%PDF") or b"\x00" in head or not _HTML_SNIFF_RE.search(head):
        raise DocumentError(f"{path}: not an HTML document")
    return parse_html(data, path)


def parse_html(data: bytes, path: Path) -> lxml.html.HtmlElement:
    # libxml2 guesses latin-1 when no charset is declared; prefer UTF-8 when the bytes decode as such.
    try:
        data.decode("utf-8")
        parser = lxml.html.HTMLParser(encoding="utf-8")
    except UnicodeDecodeError:
        parser = lxml.html.HTMLParser()
    try:
        return lxml.html.document_fromstring(data, parser=parser)
    except (lxml.etree.ParserError, ValueError) as exc:
        raise DocumentError(f"{path}: cannot parse HTML ({exc})") from exc


# ---------------------------------------------------------------------------- text stream


def _walk(el: Any, out: list[Any]) -> None:
    """Append the rendering of ``el`` (and its tail) to ``out``: strings, "\\n" for block edges,
    ``_PAGE_BREAK`` markers and ``_PendingTable`` objects."""
    tag = el.tag
    if isinstance(tag, str) and tag.lower() not in _SKIP_TAGS and not _is_hidden(el):
        tag = tag.lower()
        style = el.get("style") or ""
        breaks = {m.group(1).lower() for m in _BREAK_RE.finditer(style)} if "break" in style else ()
        if "before" in breaks:
            out.append(_PAGE_BREAK)
        if tag == "table":
            _render_table(el, out)
        elif tag == "br":
            out.append("\n")
        else:
            block = tag in _BLOCK_TAGS
            if block:
                out.append("\n")
            _walk_children(el, out)
            if block:
                out.append("\n")
        if "after" in breaks:
            out.append(_PAGE_BREAK)
    if el.tail:
        out.append(_WS_RE.sub(" ", el.tail))


def _walk_children(el: Any, out: list[Any]) -> None:
    if el.text:
        out.append(_WS_RE.sub(" ", el.text))
    for child in el:
        _walk(child, out)


def _is_hidden(el: Any) -> bool:
    style = el.get("style")
    return bool(style) and "none" in style and _HIDDEN_RE.search(style) is not None


def _clean_line(text: str) -> str:
    return _WS_RE.sub(" ", text.translate(_ZERO_WIDTH)).strip()


def _cut_pages(stream: list[Any]) -> list[ParsedPage]:
    """Split the stream at page breaks. Pages with nothing on them are dropped, as a browser
    does not print a blank page for two breaks in a row."""
    chunks: list[tuple[list[str], list[_PendingTable]]] = [([], [])]
    for item in stream:
        if item is _PAGE_BREAK:
            chunks.append(([], []))
        elif isinstance(item, _PendingTable):
            chunks[-1][1].append(item)
        else:
            chunks[-1][0].append(item)

    pages: list[ParsedPage] = []
    for parts, pending in chunks:
        lines = (_clean_line(line) for line in "".join(parts).split("\n"))
        text = "\n".join(line for line in lines if line)
        if not text and not pending:
            continue
        number = len(pages) + 1
        tables = [Table(page=number, index=i, header=t.header, rows=t.rows) for i, t in enumerate(pending)]
        pages.append(ParsedPage(number=number, text=text, tables=tables))
    return pages


# ---------------------------------------------------------------------------- tables


def _render_table(table: Any, out: list[Any]) -> None:
    """Emit one " | " line per row, and a _PendingTable when the table holds real data."""
    rows = [_row_cells(tr) for tr in _table_rows(table)]
    rows = [cells for cells in rows if cells]
    for cells in rows:
        out.append("\n" + " | ".join(text for _, _, text in cells) + "\n")
    if len(rows) >= 2 and max(len(cells) for cells in rows) >= 2:
        header, records = _keyed_rows(rows)
        if len(header) >= 2 and records:
            out.append(_PendingTable(header, records))


def _table_rows(table: Any) -> list[Any]:
    """The table's own rows (not those of tables nested in its cells)."""
    rows = []
    for child in table:
        if not isinstance(child.tag, str) or _is_hidden(child):
            continue
        tag = child.tag.lower()
        if tag == "tr":
            rows.append(child)
        elif tag in ("thead", "tbody", "tfoot"):
            rows.extend(tr for tr in child if isinstance(tr.tag, str) and tr.tag.lower() == "tr")
    return [tr for tr in rows if not _is_hidden(tr)]


def _row_cells(tr: Any) -> list[tuple[int, int, str]]:
    """Non-empty cells of a row as (first column, column after last, text), with "$" joined to
    the value after it and ")" / "%" joined to the value before it. Hidden cells take no column."""
    cells: list[tuple[int, int, str]] = []
    col = 0
    for td in tr:
        if not isinstance(td.tag, str) or td.tag.lower() not in ("td", "th") or _is_hidden(td):
            continue
        try:
            span = min(max(int(td.get("colspan") or 1), 1), 1000)
        except ValueError:
            span = 1
        parts: list[Any] = []
        _walk_children(td, parts)
        text = _clean_line("".join(p for p in parts if isinstance(p, str)))
        if text:
            cells.append((col, col + span, text))
        col += span

    merged: list[tuple[int, int, str]] = []
    prefix = ""
    for start, end, text in cells:
        if text in _CURRENCY_CELLS:
            prefix += text
        elif text in _CLOSING_CELLS and merged:
            p_start, p_end, p_text = merged[-1]
            merged[-1] = (p_start, p_end, p_text + text)
        else:
            merged.append((start, end, prefix + text))
            prefix = ""
    if prefix:  # a "$" with nothing after it
        merged.append((cells[-1][0], cells[-1][1], prefix))
    return merged


def _keyed_rows(rows: list[list[tuple[int, int, str]]]) -> tuple[list[str], list[dict[str, str]]]:
    """Key the data rows by the header, which is the first row plus any rows right under it
    that, like it, leave the label column empty (e.g. "Years ended" over "2024 | 2023").

    The last header row's column spans decide which header a value falls under, and rows above
    it prefix the names ("Years ended 2024"). Columns the header leaves blank get a "colN" name
    if any value lands there; values landing in the same column are joined by a space.
    """
    n_header = 1
    while (
        n_header < 3
        and n_header + 1 < len(rows)
        and rows[n_header - 1][0][0] > 0
        and rows[n_header][0][0] > 0
    ):
        n_header += 1
    header_rows, data = rows[:n_header], rows[n_header:]

    # Slots: the last header row's cells plus the gaps between them (blank header cells).
    slots: list[tuple[int, int, bool]] = []  # (first column, column after last, has a header cell)
    col = 0
    for start, end, _ in header_rows[-1]:
        if start > col:
            slots.append((col, start, False))
        slots.append((start, end, True))
        col = end
    slots.append((col, 10**9, False))

    def slot_of(start: int) -> int:
        return next(i for i, (s_start, s_end, _) in enumerate(slots) if s_start <= start < s_end)

    placed: list[dict[int, list[str]]] = []
    for cells in data:
        values: dict[int, list[str]] = {}
        for start, _, text in cells:
            values.setdefault(slot_of(start), []).append(text)
        placed.append(values)

    used = {i for values in placed for i in values}
    keep = [i for i, (_, _, has_cell) in enumerate(slots) if has_cell or i in used]
    raw_names = []
    for i in keep:
        s_start, s_end, _ = slots[i]
        overlapping = (
            text for row in header_rows for start, end, text in row if start < s_end and s_start < end
        )
        raw_names.append(" ".join(overlapping))
    names = _unique_names(raw_names)
    records = [{name: " ".join(values.get(i, [])) for name, i in zip(names, keep)} for values in placed]
    return names, records


def _unique_names(raw: list[str]) -> list[str]:
    names: list[str] = []
    seen: set[str] = set()
    for pos, name in enumerate(raw, start=1):
        name = name or f"col{pos}"
        candidate, n = name, 2
        while candidate in seen:
            candidate, n = f"{name}_{n}", n + 1
        seen.add(candidate)
        names.append(candidate)
    return names


# ---------------------------------------------------------------------------- dei: hints

_MONTHS = {m: i for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), start=1)}


def _dei_hints(root: Any) -> dict[str, Any]:
    facts: dict[str, list[str]] = {}
    for el in root.iter():
        tag = el.tag
        # The HTML parser gives "ix:nonnumeric"; an XML parser would give "{ns}nonNumeric".
        if not isinstance(tag, str) or not tag.lower().endswith("nonnumeric"):
            continue
        name = el.get("name") or ""
        if name.startswith("dei:"):
            facts.setdefault(name[4:], []).append(_clean_line(el.text_content()))

    def first(key: str) -> str:
        return next((v for v in facts.get(key, []) if v), "")

    hints: dict[str, Any] = {}
    if company := first("EntityRegistrantName"):
        hints["company"] = company
    if ticker := first("TradingSymbol"):
        hints["ticker"] = ticker.upper()
    if cik := first("EntityCentralIndexKey"):
        hints["cik"] = cik
    doc_type = first("DocumentType").upper()
    for known in ("10-K", "10-Q", "8-K"):
        if doc_type.startswith(known):  # also 10-K/A, 10-KT
            hints["doc_type"] = known
            break
    if re.fullmatch(r"\d{4}", year := first("DocumentFiscalYearFocus")):
        hints["fiscal_year"] = int(year)
    period = first("DocumentFiscalPeriodFocus").upper()
    if re.fullmatch(r"Q[1-4]", period):
        hints["fiscal_quarter"] = int(period[1])
    elif period == "FY":
        hints["fiscal_quarter"] = None
    if period_end := _parse_date(first("DocumentPeriodEndDate")):
        hints["period_end"] = period_end
    if fye := _parse_month_day(first("CurrentFiscalYearEndDate")):
        hints["fiscal_year_end"] = fye
    return hints


def _month(name: str) -> int | None:
    return _MONTHS.get(name[:3].lower()) if len(name) >= 3 else None


def _parse_date(text: str) -> str | None:
    """"September 28, 2024", "Jan. 26, 2025", "28 September 2024", "2024-09-28", "9/28/2024" -> ISO."""
    text = text.replace(",", " ").replace(".", " ")
    candidates = []
    if m := re.search(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b", text):
        candidates.append((m[1], m[2], m[3]))
    if m := re.search(r"\b([A-Za-z]{3,})\s+(\d{1,2})\s+(\d{4})\b", text):
        candidates.append((m[3], _month(m[1]), m[2]))
    if m := re.search(r"\b(\d{1,2})\s+([A-Za-z]{3,})\s+(\d{4})\b", text):
        candidates.append((m[3], _month(m[2]), m[1]))
    if m := re.search(r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b", text):
        candidates.append((m[3], m[1], m[2]))
    for year, month, day in candidates:
        try:
            return date(int(year), int(month), int(day)).isoformat()
        except (TypeError, ValueError):
            continue
    return None


def _parse_month_day(text: str) -> str | None:
    """"--09-28", "September 28", "9/28" -> "09-28"."""
    candidates = []
    if m := re.fullmatch(r"-*(\d{1,2})-(\d{1,2})", text):
        candidates.append((m[1], m[2]))
    if m := re.fullmatch(r"([A-Za-z]{3,})\.?\s*(\d{1,2})", text):
        candidates.append((_month(m[1]), m[2]))
    if m := re.fullmatch(r"(\d{1,2})/(\d{1,2})", text):
        candidates.append((m[1], m[2]))
    for month, day in candidates:
        try:
            return date(2000, int(month), int(day)).strftime("%m-%d")  # 2000: leap year, allows 02-29
        except (TypeError, ValueError):
            continue
    return None
