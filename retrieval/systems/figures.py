"""Figures written in text, and when two of them are the same figure.

The one matching rule of finrag: the scorer (``benchmarks.scorer``) judges answers with it, and
the pipeline traces each figure of a generated answer to its context with it
(``unsupported``). Figures: numbers with their sign (a minus or parentheses), currency, scale
word (thousand, k, million, mn, m, billion, bn, b, trillion) and percent sign. Years
(1990–2035 written bare), list numbers, dates (``June 30, 2023``) and citation tags
(``[DOC p.N]``) are not figures. Two figures match when, after scale words, they are equal
within ``TOLERANCE`` (1%) of the reference, within the reference's own rounding (half a unit of
its last written digit), or within the candidate's rounding when that is at most 5% of the
reference; a figure without a scale word may stand at any power of 1,000 when the other has
one ("$1,577 million" = "$1.577 billion" = 1577, but 11.2 is not 0.0112), and a percentage
matches the same ratio as a fraction (65.4% = 0.654). Signs are compared only when both
figures carry one explicitly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TOLERANCE = 0.01
_SCALES = {"thousand": 1e3, "k": 1e3, "million": 1e6, "millions": 1e6, "mn": 1e6, "mm": 1e6,
           "m": 1e6, "billion": 1e9, "billions": 1e9, "bn": 1e9, "b": 1e9, "trillion": 1e12}
_NUMBER = re.compile(
    r"(?<![\w.])(?P<sign>[-−–+]\s?)?(?P<paren>\()?\s?(?P<cur>[$€£])?\s?"
    r"(?P<num>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?!\.?\d)"
    r"(?:\s?(?P<pct>%|percent\b|per cent\b)|\s?(?P<scale>thousand|millions?|billions?|trillion"
    r"|mn|mm|bn|k|m|b)\b)?(?P<close>\))?", re.IGNORECASE)
_TAG = re.compile(r"\[[^\[\]]{1,120}?\bp{1,2}\.\s*\d+(?:\s*-\s*\d+)?\s*\]")
_MONTHS = ("jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec|january|february|march|april"
           "|june|july|august|september|october|november|december")
_DATE = re.compile(rf"\b(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b,?(?:\s*\d{{4}})?"
                   rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS})\b"
                   r"|\b\d{1,2}/\d{1,2}/\d{2,4}\b", re.IGNORECASE)
_LIST_MARKER = re.compile(r"(?m)^\s*\(?\d{1,2}[.)]\s")


@dataclass(frozen=True)
class Figure:
    value: float  # scale word applied; a percentage as written (30.8 for 30.8%)
    step: float  # half a unit of the last written digit, in the same units as value
    percent: bool = False
    scaled: bool = False  # a scale word was written
    signed: bool = False  # a sign (+, minus) or parentheses were written


def _clean(text: str) -> str:
    text = _TAG.sub(" ", text or "")
    text = _DATE.sub(" ", text)
    return _LIST_MARKER.sub(" ", text)


def figures(text: str) -> list[Figure]:
    """The figures written in ``text`` (see the module docstring for what is left out)."""
    out = []
    for m in _NUMBER.finditer(_clean(text)):
        raw = m.group("num").replace(",", "")
        decimals = len(raw.split(".")[1]) if "." in raw else 0
        value = float(raw)
        scale_word = (m.group("scale") or "").lower()
        bare = not (m.group("cur") or m.group("pct") or scale_word)
        if bare and decimals == 0 and 1990 <= value <= 2035 and "," not in m.group("num"):
            continue  # a year
        if scale_word in ("m", "b", "k") and not m.group("cur") and decimals == 0 and value < 10:
            scale_word = ""  # "3 m" is more likely a unit of length than a scale
        scale = _SCALES.get(scale_word, 1.0)
        sign = (m.group("sign") or "").strip()
        negative = sign in ("-", "−", "–") or bool(m.group("paren") and m.group("close"))
        out.append(Figure((-1.0 if negative else 1.0) * value * scale,
                          0.5 * 10 ** -decimals * scale, percent=bool(m.group("pct")),
                          scaled=scale != 1.0, signed=negative or sign == "+"))
    return out


def _pairs(ref: Figure, cand: Figure) -> list[tuple[float, float, float]]:
    """(reference, candidate, candidate's rounding step) in comparable units."""
    pairs = [(ref.value, cand.value, cand.step)]
    if ref.percent != cand.percent:  # 65.4% vs 0.654
        pairs.append((ref.value / 100, cand.value, cand.step) if ref.percent
                     else (ref.value, cand.value / 100, cand.step / 100))
    if ref.scaled != cand.scaled and not (ref.percent or cand.percent):
        # one side wrote a scale word, the other's unit is implied by the question
        for power in (1e3, 1e6, 1e9, 1e12):
            pairs += [(ref.value, cand.value / power, cand.step / power),
                      (ref.value, cand.value * power, cand.step * power)]
    return pairs


def match(ref: Figure, cand: Figure) -> bool:
    """Equal within the tolerance or the coarser rounding (module docstring)."""
    both_signed = ref.signed and cand.signed
    for r, c, step in _pairs(ref, cand):
        target = abs(r)
        if target == 0:
            if c == 0:
                return True
            continue
        if both_signed and (r < 0) != (c < 0):
            continue
        # the reference's own rounding always counts (0.0142 is 0.01 to two decimals); the
        # candidate's only when it loses at most 5% of the figure ("1" is no rounding of 0.83)
        ref_step = ref.step * target / abs(ref.value)
        tolerance = max(TOLERANCE * target, ref_step, step if step <= 0.05 * target else 0.0)
        if abs(abs(c) - target) <= tolerance:
            return True
    return False


def found(refs: list[Figure], cands: list[Figure]) -> list[Figure]:
    return [r for r in refs if any(match(r, c) for c in cands)]


def figures_written(text: str) -> list[tuple[str, Figure]]:
    """The figures of ``text`` as written, in order, with their values. A bare count below 10
    ("three segments", "2 customers") is prose, not a figure to trace."""
    out = []
    for m in _NUMBER.finditer(_clean(text)):
        found_here = figures(m.group(0))
        if not found_here:
            continue
        fig = found_here[0]
        if (not (fig.percent or fig.scaled or "$" in m.group(0))
                and float(fig.value).is_integer() and abs(fig.value) < 10):
            continue
        out.append((m.group(0).strip(), fig))
    return out


def unsupported(answer: str, sources: list[str]) -> list[str]:
    """The figures of ``answer`` (as written, each once) that match no figure of ``sources``
    (the passages and facts it was given), by the matching rule above."""
    given = [f for text in sources for f in figures(text)]
    return list(dict.fromkeys(text for text, fig in figures_written(answer)
                              if not any(match(fig, g) for g in given)))



# stricter than the statement pages' own unit rule (facts.statements): a passage's prose may
# say "millions" of anything, so only "in millions" or "(millions" declares a scale
_STATED_SCALE = re.compile(r"(?:\b(?:in|amounts? in|dollars? in|\$ in)\s+|\()"
                           r"(thousands|millions|billions)\b", re.IGNORECASE)
_SCALE_NAMES = {"k": "thousand", "thousand": "thousand", "thousands": "thousand", "m": "million", "mn": "million",
                "mm": "million", "million": "million", "millions": "million", "b": "billion",
                "bn": "billion", "billion": "billion", "billions": "billion"}
_PER_UNIT = re.compile(r"per\s+(?:diluted\s+|basic\s+|common\s+)?share|\bEPS\b|dividend|"
                       r"per\s+(?:unit|employee|customer|store|square)", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?](?:\s|$)")


def _source_scales(number: str, sources: list[str]) -> set[str]:
    """The scales under which the sources write ``number``: a scale word beside it, else the
    one its table or statement declares last before it ("(In millions, except per share
    data)"); "" where none is stated or the figure's row is a per-share or per-unit row. A
    row's label is the words since the figure before it (a table's text may have lost its line
    breaks); a figure right after another is in the same row."""
    digits = number.replace(",", "")
    scales = set()
    for text in sources:
        label, last = "", 0
        for m in _NUMBER.finditer(text or ""):
            between = text[last:m.start()]
            last = m.end()
            if re.search(r"[A-Za-z]", between):  # a header's "(… per share data)" is no label
                label = re.split(r"[\n)]", between)[-1][-80:]
            if m.group("num").replace(",", "") != digits or m.group("pct"):
                continue
            word = (m.group("scale") or "").lower()
            if not word and _PER_UNIT.search(label):  # "except per share data": a row in dollars
                scales.add("")
                continue
            stated = [s.group(1) for s in _STATED_SCALE.finditer(text, 0, m.start())]
            scales.add(_SCALE_NAMES[word] if word else
                       _SCALE_NAMES[stated[-1].lower()] if stated else "")
    return scales


def with_stated_scale(answer: str, sources: list[str]) -> str:
    """``answer`` with the scale word its sources state added to each dollar figure written
    without one: "$3,793" read from a statement "(In millions …)" becomes "$3,793 million".
    A figure stays as written where its sources disagree on the scale or state none, and in a
    sentence about a per-share or per-unit amount."""
    out, last = [], 0
    for m in _NUMBER.finditer(answer):
        if not m.group("cur") or m.group("scale") or m.group("pct"):
            continue
        start = max((s.end() for s in _SENTENCE_END.finditer(answer, 0, m.start())), default=0)
        stop = _SENTENCE_END.search(answer, m.end())
        if _PER_UNIT.search(answer[start:stop.start() if stop else len(answer)]):
            continue
        scales = _source_scales(m.group("num"), sources)
        if len(scales) != 1 or "" in scales:
            continue
        out.append(f"{answer[last:m.end('num')]} {scales.pop()}")
        last = m.end("num")
    return "".join(out) + answer[last:]


_STREAM_CUT = re.compile(r"[.!?]\s")


class ScaledStream:
    """A text stream with ``with_stated_scale`` applied as it goes, so what is streamed is
    what the final answer says: a sentence holding a dollar figure is held back until it ends
    (its per-share words may come after the figure); ``flush()`` sends the rest."""

    def __init__(self, on_text, sources: list[str]):
        self.on_text, self.sources = on_text, sources
        self.raw, self.sent = "", 0

    def __call__(self, piece: str) -> None:
        self.raw += piece
        cut = max((m.end() for m in _STREAM_CUT.finditer(self.raw)), default=0)
        self._send(self.raw if "$" not in self.raw[cut:] else self.raw[:cut])

    def flush(self) -> None:
        self._send(self.raw)

    def _send(self, text: str) -> None:
        out = with_stated_scale(text, self.sources)
        if len(out) > self.sent:
            self.on_text(out[self.sent:])
            self.sent = len(out)
