"""The block model of a filing, its layout on pages, and the PDF painted from the layout."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import pymupdf

PAGE_W, PAGE_H = 612, 792
LEFT, RIGHT, TOP, BOTTOM = 54, 558, 60, 740
CONTENT_W = RIGHT - LEFT
FOOTER_Y = 764
TABLE_COLS = (LEFT, 318, 438, RIGHT)  # x positions of the vertical rules
ROW_H = 14.0


@dataclass(frozen=True)
class Style:
    font: str  # a PDF base-14 font name as pymupdf spells it
    size: float
    leading: float
    before: float = 0.0
    after: float = 6.0
    align: str = "left"
    keep_with_next: bool = False


STYLES = {
    "body": Style("tiro", 9.5, 11.3, 0, 4.5),
    "risk": Style("tibi", 9.5, 11.3, 3, 2, keep_with_next=True),
    "part": Style("tibo", 12, 15, 10, 6, "center", keep_with_next=True),
    "item": Style("tibo", 11, 14, 8, 4, keep_with_next=True),
    "sub": Style("tibo", 9.5, 11.3, 4, 2, keep_with_next=True),
    "caption": Style("tibo", 10, 12.4, 6, 2, "center", keep_with_next=True),
    "caption_note": Style("tiit", 9, 11, 0, 5, "center", keep_with_next=True),
    "cover": Style("tiro", 10, 12.4, 0, 3, "center"),
    "cover_bold": Style("tibo", 10.5, 13, 4, 3, "center"),
    "cover_form": Style("tibo", 16, 20, 6, 6, "center"),
    "cover_name": Style("tibo", 18, 22, 12, 2, "center"),
    "cover_note": Style("tiit", 8.5, 10.5, 0, 8, "center"),
    "cover_text": Style("tiro", 9, 11, 0, 5),
    "toc_title": Style("tibo", 12, 15, 0, 10, "center"),
    "toc_part": Style("tibo", 10, 13, 6, 2),
}


@dataclass
class Fact:
    metric: str
    value: int | float
    unit: str
    text: str
    fiscal_year: int
    fiscal_quarter: int | None
    source: str  # "text" (a narrative sentence) or "table" (a statement row)
    page: int = 0


@dataclass(eq=False)
class Text:
    text: str
    style: str = "body"
    facts: list[Fact] = field(default_factory=list)
    page: int = 0


@dataclass(eq=False)
class TocEntry:
    label: str
    title: str
    target: Text


@dataclass(eq=False)
class StatementTable:
    header: tuple[str, str, str]
    rows: list[tuple[str, str, str]]
    facts: list[Fact] = field(default_factory=list)
    page: int = 0

    @property
    def height(self) -> float:
        return ROW_H * (1 + len(self.rows))


class PageBreak:
    pass


Block = Text | TocEntry | StatementTable | PageBreak


@lru_cache(maxsize=None)
def _unit_width(text: str, font: str) -> float:
    return pymupdf.get_text_length(text, fontname=font, fontsize=1)


def _width(text: str, font: str, size: float) -> float:
    words = text.split(" ")
    return size * (sum(_unit_width(w, font) for w in words) + _unit_width(" ", font) * (len(words) - 1))


@lru_cache(maxsize=None)
def _wrap(text: str, font: str, size: float, width: float) -> tuple[str, ...]:
    lines: list[str] = []
    current: list[str] = []
    used = 0.0
    space = _unit_width(" ", font) * size
    for word in text.split():
        word_w = _unit_width(word, font) * size
        if current and used + space + word_w > width:
            lines.append(" ".join(current))
            current, used = [], 0.0
        used += (space if current else 0.0) + word_w
        current.append(word)
    if current:
        lines.append(" ".join(current))
    return tuple(lines)


TOC_TITLE_X = LEFT + 54
TOC_TITLE_W = CONTENT_W - 54 - 36


class _Layout:
    """Places blocks on pages. Each page is a list of drawing operations for ``_paint``.

    Headings stay with what follows them; paragraphs that carry facts are never split, so
    every fact sentence lies on one page; other paragraphs may break across pages.
    """

    def __init__(self) -> None:
        self.pages: list[list[tuple]] = []
        self._new_page()

    def _new_page(self) -> None:
        self.pages.append([])
        self.y = float(TOP)

    @property
    def _page_empty(self) -> bool:
        return not self.pages[-1]

    def run(self, blocks: list[Block]) -> list[list[tuple]]:
        for i, block in enumerate(blocks):
            if isinstance(block, PageBreak):
                if not self._page_empty:
                    self._new_page()
            elif isinstance(block, StatementTable):
                self._table(block)
            elif isinstance(block, TocEntry):
                self._toc(block)
            else:
                self._text(blocks, i)
        return self.pages

    def _lines(self, block: Text) -> tuple[str, ...]:
        style = STYLES[block.style]
        return _wrap(block.text, style.font, style.size, CONTENT_W)

    def _splittable(self, block: Text) -> bool:
        """Plain paragraphs of four or more lines may break, leaving two or more lines each side."""
        return not block.facts and not STYLES[block.style].keep_with_next and len(self._lines(block)) >= 4

    def _lead(self, blocks: list[Block], i: int) -> float:
        """Height that must fit on a page for block ``i`` to start there."""
        if i >= len(blocks):
            return 0.0
        block = blocks[i]
        if isinstance(block, StatementTable):
            return block.height
        if not isinstance(block, Text):
            return 0.0
        style = STYLES[block.style]
        lines = len(self._lines(block))
        height = style.before + style.leading * (min(lines, 2) if self._splittable(block) else lines)
        return height + (style.after + self._lead(blocks, i + 1) if style.keep_with_next else 0.0)

    def _text(self, blocks: list[Block], i: int) -> None:
        block = blocks[i]
        style = STYLES[block.style]
        lines = self._lines(block)
        take = len(lines)  # lines that go on the current page
        if not self._page_empty:
            needed = len(lines) * style.leading
            if style.keep_with_next:
                needed += style.after + self._lead(blocks, i + 1)
            room = BOTTOM - self.y - style.before
            fit = int(room // style.leading)
            if needed > room:
                if self._splittable(block) and fit >= 2:
                    take = min(fit, len(lines) - 2)
                else:
                    self._new_page()
        if not self._page_empty:
            self.y += style.before
        block.page = len(self.pages)
        top, segment = self.y, []
        for n, line in enumerate(lines):
            if n == take or self.y + style.leading > BOTTOM:
                if block.facts:
                    raise ValueError(f"paragraph with facts is taller than a page: {block.text[:60]}")
                self._emit(segment, top, style)
                self._new_page()
                top, segment = self.y, []
            segment.append(line)
            self.y += style.leading
        self._emit(segment, top, style)
        self.y += style.after

    def _emit(self, lines: list[str], top: float, style: Style) -> None:
        """One drawing operation per run of left-aligned lines, one per centred line."""
        if style.align != "center":
            if lines:
                self.pages[-1].append(("text", LEFT, top + style.size, tuple(lines), style.font, style.size,
                                       style.leading))
            return
        for k, line in enumerate(lines):
            x = LEFT + (CONTENT_W - _width(line, style.font, style.size)) / 2
            self.pages[-1].append(("text", x, top + style.size + k * style.leading, (line,), style.font,
                                   style.size, style.leading))

    def _table(self, table: StatementTable) -> None:
        if self.y + table.height > BOTTOM and not self._page_empty:
            self._new_page()
        table.page = len(self.pages)
        self.pages[-1].append(("table", table, self.y))
        self.y += table.height + 12

    def _toc(self, entry: TocEntry) -> None:
        lines = _wrap(entry.title, "tiro", 10, TOC_TITLE_W)
        if self.y + 13 * len(lines) > BOTTOM:
            raise ValueError("table of contents does not fit on one page")
        if entry.label:
            self.pages[-1].append(("text", LEFT, self.y + 10, (entry.label,), "tiro", 10, 13))
        self.pages[-1].append(("text", TOC_TITLE_X, self.y + 10, lines, "tiro", 10, 13))
        self.y += 13 * len(lines)
        self.pages[-1].append(("pageref", entry.target, self.y - 3))
        self.y += 2


def _draw_table(shape: pymupdf.Shape, table: StatementTable, top: float) -> None:
    """A fully ruled grid (so ``find_tables`` sees it), shaded header, right-aligned figures."""
    bottom = top + table.height
    shape.draw_rect(pymupdf.Rect(LEFT, top, RIGHT, top + ROW_H))
    shape.finish(color=None, fill=(0.88, 0.88, 0.88), width=0)
    for row in range(len(table.rows) + 2):
        y = top + row * ROW_H
        shape.draw_line((LEFT, y), (RIGHT, y))
    for x in TABLE_COLS:
        shape.draw_line((x, top), (x, bottom))
    shape.finish(color=(0, 0, 0), width=0.6)
    for r, cells in enumerate([table.header, *table.rows]):
        baseline = top + r * ROW_H + 10.2
        font = "tibo" if r == 0 else "tiro"
        for c, text in enumerate(cells):
            if c == 0:
                x = TABLE_COLS[0] + 4
            else:
                x = TABLE_COLS[c + 1] - 4 - _width(text, font, 9)
            shape.insert_text((x, baseline), text, fontname=font, fontsize=9)


def _paint(pages: list[list[tuple]], metadata: dict[str, str]) -> bytes:
    """Draw the laid-out pages. One shape per page, committed once, keeps this fast."""
    doc = pymupdf.open()
    for number, operations in enumerate(pages, start=1):
        page = doc.new_page(width=PAGE_W, height=PAGE_H)
        shape = page.new_shape()
        for op in operations:
            if op[0] == "text":
                _, x, y, lines, font, size, leading = op
                shape.insert_text((x, y), list(lines), fontname=font, fontsize=size, lineheight=leading / size)
            elif op[0] == "table":
                _draw_table(shape, op[1], op[2])
            else:  # "pageref": the target's page number, right-aligned
                number_text = str(op[1].page)
                shape.insert_text((RIGHT - _width(number_text, "tiro", 10), op[2]), number_text,
                                  fontname="tiro", fontsize=10)
        if number > 1:
            label = str(number)
            shape.insert_text(((PAGE_W - _width(label, "tiro", 9)) / 2, FOOTER_Y), label,
                              fontname="tiro", fontsize=9)
        shape.commit()
    doc.set_metadata(metadata)
    data = doc.tobytes(garbage=3, deflate=True, no_new_id=True)
    doc.close()
    return data
