"""Context assembly under a token budget, the generation prompt, and citations.

The context is a list of blocks, each one chunk (or one part of a whole document for SFR),
headed ``[doc_id p.N]`` so the generator can cite it the same way. Inside a block a page break
is marked ``[p.N]``: chunks keep pages joined by a newline, so every newline in a chunk's
text is a page boundary (page text itself has its whitespace collapsed at chunking).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from finrag.retrieval.answer import Citation

NOT_FOUND = "Not found in the provided filings."

# Small models over-use a scripted refusal ("reply exactly: not found") even when the answer is
# in the context, so the prompt only asks them to say so; the question is given before and
# after the context, which keeps a small model on it across a long context. They also copy a
# placeholder tag such as "[DOC_ID p.N]" literally, so the example tag is a real-looking one.
SYSTEM_PROMPT = (
    "You answer questions about companies' SEC filings using only the context passages below. "
    "State the answer in your first sentence. "
    "When the question asks for a ratio, a margin or a change, take each figure from the "
    "passages, write the calculation in one line and give the result rounded as asked. Cite "
    "the passages you use by copying the tag in square brackets that starts each one, e.g. "
    "[3M_2018_10K p.60]. Answer in one to three sentences. If the passages do not contain the "
    "answer, say so."
)


@dataclass
class Block:
    doc_id: str
    first_page: int
    last_page: int
    text: str  # with [p.N] markers at page breaks
    tokens: int
    chunk_id: int | None = None  # None for an SFR part of a whole document

    @property
    def tag(self) -> str:
        return f"[{self.doc_id} p.{self.first_page}]"

    def render(self) -> str:
        return f"{self.tag}\n{self.text}"


def mark_pages(text: str, first_page: int) -> str:
    """Insert ``[p.N]`` where a chunk crosses into page N."""
    parts = text.split("\n")
    return "".join(part if i == 0 else f" [p.{first_page + i}] {part}"
                   for i, part in enumerate(parts))


def truncate_to_tokens(text: str, tokens: int, count: Callable[[str], int]) -> str:
    """The longest prefix of ``text`` (cut at a space) that fits in ``tokens``."""
    if tokens <= 0:
        return ""
    if count(text) <= tokens:
        return text
    lo, hi = 0, len(text)
    while lo < hi:  # binary search on characters; token counts are monotone enough in length
        mid = (lo + hi + 1) // 2
        if count(text[:mid]) <= tokens:
            lo = mid
        else:
            hi = mid - 1
    cut = text.rfind(" ", 0, lo)
    return text[: cut if cut > 0 else lo]


def fair_shares(total: int, demands: list[int]) -> list[int]:
    """Split ``total`` tokens between documents: each gets an equal share, and what one needs
    less than its share is handed on to the others (water-filling). Shares sum to at most
    ``total`` and no document gets more than it asked for."""
    shares = [0] * len(demands)
    left = total
    open_ = [i for i, d in enumerate(demands) if d > 0]
    while open_ and left > 0:
        each = max(left // len(open_), 1)
        for i in open_:
            give = min(each, demands[i] - shares[i], left)
            shares[i] += give
            left -= give
        open_ = [i for i in open_ if shares[i] < demands[i]]
    return shares


@dataclass
class Span:
    """Neighbouring chunks of one document joined into one passage (chunks overlap by half, so
    two neighbours shown apart would repeat a quarter of the context)."""

    chunk_id: int | None  # the best-ranked chunk's
    doc_id: str
    first_page: int
    last_page: int
    text: str
    ids: tuple[int, int]  # the lowest and highest chunk id joined


_OVERLAP_PROBE = 80  # characters of the later chunk looked up in the earlier one


def _join(earlier: str, later: str) -> str | None:
    """``earlier`` continued by ``later`` where ``later`` starts inside it; None otherwise."""
    at = earlier.find(later[:_OVERLAP_PROBE])
    if at < 0:
        return None
    return earlier if at + len(later) <= len(earlier) else earlier[:at] + later


def merge_neighbours(chunks: list) -> list[Span]:
    """Chunks (best first) as spans: a chunk whose id is next to a span's of the same document
    and whose text overlaps it is joined to that span, which keeps its place in the order."""
    spans: list[Span] = []
    for c in chunks:
        joined = False
        for i, sp in enumerate(spans):
            cid = getattr(c, "chunk_id", None)
            if sp.doc_id != c.doc_id or cid is None or sp.chunk_id is None:
                continue
            if cid == sp.ids[1] + 1:
                text = _join(sp.text, c.text)
            elif cid == sp.ids[0] - 1:
                text = _join(c.text, sp.text)
            else:
                continue
            if text is None:
                continue
            spans[i] = Span(sp.chunk_id, sp.doc_id, min(sp.first_page, c.first_page),
                            max(sp.last_page, c.last_page), text,
                            (min(sp.ids[0], cid), max(sp.ids[1], cid)))
            joined = True
            break
        if not joined:
            cid = getattr(c, "chunk_id", None)
            spans.append(Span(cid, c.doc_id, c.first_page, c.last_page, c.text,
                              (cid, cid) if cid is not None else (-1, -1)))
    return spans


def build_blocks(chunks: list, count: Callable[[str], int], budget: int) -> list[Block]:
    """Blocks from chunks (anything with chunk_id, doc_id, first_page, last_page, text), in the
    order given, neighbours of one document joined (``merge_neighbours``), while they fit in
    ``budget`` tokens (``fit``)."""
    return fit(all_blocks(chunks, count), budget, count)


def all_blocks(chunks: list, count: Callable[[str], int]) -> list[Block]:
    """Every chunk as a block, neighbours joined, each with its tokens counted: what
    ``fit`` then cuts to a budget (one count per block, whatever the budgets tried)."""
    out = []
    for c in merge_neighbours(chunks):
        text = mark_pages(c.text, c.first_page)
        out.append(Block(c.doc_id, c.first_page, c.last_page, text,
                         count(f"[{c.doc_id} p.{c.first_page}]\n{text}"), c.chunk_id))
    return out


def fit(blocks: list[Block], budget: int, count: Callable[[str], int]) -> list[Block]:
    """The blocks, in order, while they fit in ``budget`` tokens; the first one that does
    not fit whole is cut to the room left (if at least 64 tokens are)."""
    out: list[Block] = []
    used = 0
    for b in blocks:
        if used + b.tokens > budget:
            header = f"{b.tag}\n"
            room = budget - used - count(header)
            if room >= 64:
                cut = truncate_to_tokens(b.text, room, count)
                out.append(Block(b.doc_id, b.first_page, b.last_page, cut, count(header + cut),
                                 b.chunk_id))
            break
        out.append(b)
        used += b.tokens
    return out


# Asked of every question, "Yes or No first" made the 0.5B generator open with "No" on questions
# that ask for a figure or a reason (tune split, HDRR: 6 of 7 such answers; 0 of 6 without the
# line), so it is asked only of questions that are themselves yes/no questions.
YES_NO_RULE = " The question asks yes or no: begin with Yes or No, then say why."
# the auxiliary verb may follow a short framing clause: "As of Q2'2023, is Pfizer ...",
# "Looking at VaR, did the risk ..."
_YES_NO = re.compile(r"^\W*(?:[^?,;]{1,60},\s*)?(?:is|are|was|were|does|do|did|has|have|had|can|"
                     r"could|will|would|should|may)\b", re.I)


def is_yes_no(question: str) -> bool:
    """A question that opens with an auxiliary verb ("Does 3M ...", "Is Adobe ..."), perhaps
    after a framing clause ("As of Q2'2023, is Pfizer ...")."""
    return bool(_YES_NO.match(question))


def answer_messages(question: str, blocks: list[Block], *,
                    yes_no: bool | None = None) -> list[dict]:
    """The answer prompt; ``yes_no`` (default: ``is_yes_no(question)``) adds the yes/no rule."""
    context = "\n\n".join(b.render() for b in blocks)
    yes_no = is_yes_no(question) if yes_no is None else yes_no
    system = SYSTEM_PROMPT + (YES_NO_RULE if yes_no else "")
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": f"Question: {question.strip()}\n\nContext:\n{context}\n\n"
                                    f"Question: {question.strip()}\nAnswer (with citations):"},
    ]


_TAG = re.compile(r"\[\s*([A-Za-z0-9][\w.\-]*)\s+p{1,2}\.\s*(\d+)(?:\s*-\s*\d+)?\s*\]")
_ANY_TAG = re.compile(r"\[[^\[\]]{0,80}\]")
_PAGE_REF = re.compile(r"\b(?:pages?|pp?)\.?\s*\d+(?:\s*-\s*\d+)?\b", re.I)
# what the answer prompt's "if the passages do not contain the answer, say so" comes out as
_DECLINES = re.compile(
    r"\b(?:passages?|context|excerpts?|texts?|filings?|documents?|parts?|information)\b[^.]{0,40}"
    r"\b(?:does|do|did) not (?:contain|include|provide|mention|state|specify|give|disclose|say)"
    r"|\bnot (?:found|available|provided|mentioned|stated|given|specified|disclosed) in\b"
    r"|\b(?:there is|there's|contains?|provides?|gives?) no (?:specific |direct )?"
    r"(?:information|mention|data|figures?|details?)\b"
    r"|\b(?:cannot|can't|can not|unable to) (?:be )?(?:determine|answer|find|provide|calculate)",
    re.I)


def states_nothing(answer: str) -> bool:
    """An answer that says the passages lack the answer (within its first sentence or two), or
    says nothing outside citation tags and page references ("[ACME_2023_10K p.4] p.4")."""
    text = (answer or "").strip()
    if text.startswith(NOT_FOUND[:20]) or _DECLINES.search(text[:300]):
        return True
    return not re.search(r"[^\W_]", _PAGE_REF.sub(" ", _ANY_TAG.sub(" ", text)))


def cite(text: str, blocks: list[Block], snippet_chars: int = 200) -> list[Citation]:
    """Citations for an answer: the ``[doc_id p.N]`` tags it wrote that point into a context
    block (a tag naming anything that was not in the context is dropped). When it wrote no
    valid tag, the blocks it was given are cited, best first — the answer came from them."""
    out: list[Citation] = []
    seen = set()
    for doc_id, page in _TAG.findall(text):
        page = int(page)
        block = next((b for b in blocks
                      if b.doc_id == doc_id and b.first_page <= page <= b.last_page), None)
        if block is None or (doc_id, page) in seen:
            continue
        seen.add((doc_id, page))
        out.append(Citation(doc_id, page, block.chunk_id, _snippet(block.text, snippet_chars)))
    if not out and not text.strip().startswith(NOT_FOUND[:20]):
        for b in blocks:
            if (b.doc_id, b.first_page) not in seen:
                seen.add((b.doc_id, b.first_page))
                out.append(Citation(b.doc_id, b.first_page, b.chunk_id,
                                    _snippet(b.text, snippet_chars)))
    return out


def _snippet(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
