"""What a question mentions: companies (names, tickers, aliases, misspellings), fiscal periods,
dates and the filing types its words point at, read deterministically (routing's extraction
step; ``retrieval.routing.router`` resolves them to filings)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from rapidfuzz.distance import DamerauLevenshtein

from finrag.retrieval.routing.calendars import DateMention, read_periods
from finrag.retrieval.routing.companies import Company, CompanyTable, default_table, normalize_name
from finrag.retrieval.routing.intent import Intent, read_intent

# How strongly each match kind identifies a company; a routing's status is its weakest link.
STRENGTH = ("exact", "alias", "name_match", "regex")
# Upper-case words of financial questions that are not tickers (some are tickers elsewhere).
_NOT_TICKERS = frozenset("""
    A I AM AN AS AT BE BY DO GO IF IN IS IT ME MY NO OF ON OR SO TO UP WE OK
    FY FQ CY YOY YTD QTD TTM LTM USD EUR GBP JPY CAD US USA UK EU SEC GAAP IFRS EPS DPS
    CEO CFO COO CTO CAPEX OPEX EBIT EBITDA PPE PPNE COGS SGA ROA ROE ROI ROIC ROCE DPO DSO DIO
    CCC FCF NI AR AP PP RD NOI FFO AFFO NAV AUM VAR IPO LBO ESG KPI EV PE PEG NII NIM CET TBV
    FX LIFO FIFO QTR HQ LLC INC CORP LTD PLC NA NM TBD USDM MM BN NYSE NASDAQ ETF ADR
    Q H DEF PDF HTML XBRL API AI IT ON ALL NOW KEY MAIN REAL BIG FAST HAS CAN WELL
""".split())
_US_STATES = frozenset("""
    AL AK AZ AR CA CO CT DE FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM
    NY NC ND OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY DC
""".split())
_DOC_TYPE_PATTERNS = (
    ("10-K", r"\b(?:form\s+)?10[\s-]?K\b|\bannual\s+(?:report|filing)s?\b"),
    ("10-Q", r"\b(?:form\s+)?10[\s-]?Q\b|\bquarterly\s+(?:report|filing)s?\b"),
    ("8-K", r"\b(?:form\s+)?8[\s-]?K\b|\bcurrent\s+report\b"),
    ("earnings", r"\b(?:earnings|press|results)\s+(?:release|report|announcement)s?\b"),
)
_OUTLOOK = re.compile(r"\b(?:expect\w*|outlook|guidance|forecast\w*|anticipat\w*|projected)\b", re.I)


@dataclass
class CompanyMention:
    text: str  # as the question (or the router LLM) wrote it
    company: str  # canonical name
    key: str
    how: str  # exact | alias | name_match | regex


@dataclass
class Mentions:
    companies: list[CompanyMention] = field(default_factory=list)
    ambiguous: list[dict[str, Any]] = field(default_factory=list)  # {"text", "candidates"}
    unknown: list[str] = field(default_factory=list)  # company-like names finrag does not know
    periods: list[tuple[int | None, int | None]] = field(default_factory=list)  # (FY, quarter)
    calendar_years: list[int] = field(default_factory=list)
    dates: list[DateMention] = field(default_factory=list)
    doc_types: list[str] = field(default_factory=list)
    outlook: bool = False
    intent: Intent = field(default_factory=Intent)  # filing-type cues (retrieval.routing.intent)
    as_of: bool = False  # "as of FY2024": a state at a point of the year, not the year's total
    settled: str | None = None  # the type the router LLM chose when the cues conflict

    @property
    def preferred(self) -> str | None:
        """The filing type the question's words (or the LLM, on a conflict) point at, unless
        the question names a form itself."""
        if self.doc_types:
            return None
        return self.settled or (self.intent.types[0] if self.intent.kinds else None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "companies": [asdict(c) for c in self.companies],
            "ambiguous": self.ambiguous,
            "unknown_companies": self.unknown,
            "fiscal_years": sorted({y for y, _ in self.periods if y is not None}),
            "periods": [{"fiscal_year": y, "fiscal_quarter": q} for y, q in self.periods],
            "calendar_years": self.calendar_years,
            "dates": [{"date": d.day.isoformat(), "precision": d.precision, "role": d.role}
                      for d in self.dates],
            "doc_types": self.doc_types,
            "outlook": self.outlook,
            "intent": {**self.intent.to_dict(), "settled_by_llm": self.settled,
                       "preferred": self.preferred},
        }


# --- company dictionary ------------------------------------------------------------------------

_TOKEN = re.compile(r"[^\W_]+(?:['’.&][^\W_]+)*['’]?s?|&")


@dataclass
class _Piece:
    form: str
    alt: str | None  # "adobes" for "Adobe's" (the possessive also read as part of the name)
    start: int
    end: int
    raw: str


def _pieces(text: str) -> list[_Piece]:
    """The question as normalised words (as ``normalize_name`` makes them) with their spans."""
    out = []
    for m in _TOKEN.finditer(text):
        raw, base = m.group(), m.group()
        possessive = re.search(r"['’]s?$", raw)
        if possessive:
            base = raw[: possessive.start()]
        words = re.sub(r"[\W_]+", " ", re.sub(r"['’.]", "", base.casefold().replace("&", " and "))).split()
        for i, word in enumerate(words):
            alt = word + "s" if possessive and i == len(words) - 1 and raw[-1] in "sS" else None
            out.append(_Piece(word, alt, m.start(), m.end(), raw))
    return out


class CompanyDictionary:
    """Every name, alias and ticker of the company table plus what the catalog's documents say,
    matched against question text. Built once per resolver; the given table is not modified."""

    def __init__(self, companies: CompanyTable | None = None, documents: Iterable[Any] = ()):
        source = companies if companies is not None else default_table()
        self.table = CompanyTable(source.all())
        self.doc_company: dict[str, str] = {}  # doc_id -> company key
        for rec in documents:
            self.doc_company[rec.doc_id] = self._learn(rec).key
        self.phrases: dict[tuple[str, ...], dict[str, str]] = {}  # words -> {key: name|alias}
        self.compact: dict[str, dict[str, str]] = {}
        self.tickers: dict[str, set[str]] = {}
        self.first_words: dict[str, set[str]] = {}
        for company in self.table.all():
            for i, name in enumerate(company.names):
                words = tuple(normalize_name(name).split())
                if not words:
                    continue
                kind = "name" if i == 0 else "alias"
                self.phrases.setdefault(words, {}).setdefault(company.key, kind)
                self.compact.setdefault("".join(words), {}).setdefault(company.key, kind)
                if len(words) > 1:
                    self.first_words.setdefault(words[0], set()).add(company.key)
            for ticker in company.tickers:
                self.tickers.setdefault(ticker, set()).add(company.key)
        self.longest = max((len(w) for w in self.phrases), default=1)
        self.spellings = {name for company in self.table.all() for name in company.names}

    def _learn(self, rec: Any) -> Company:
        """The table's company for a catalog document, added when the table lacks it."""
        found = self.table.by_name(rec.company) or (rec.ticker and self.table.by_ticker(rec.ticker))
        if found:
            return found
        ticker = rec.ticker if rec.ticker and not self.table.by_ticker(rec.ticker) else None
        aliases = [a for a in (rec.aliases or []) if not self.table.by_name(a)]
        return self.table.add(name=rec.company, ticker=ticker, aliases=aliases)

    def company(self, key: str) -> Company:
        found = self.table.by_key(key)
        assert found is not None
        return found

    # matching -------------------------------------------------------------------------------
    def find(self, question: str) -> tuple[list[CompanyMention], list[dict[str, Any]]]:
        """Company mentions (names, aliases, fuzzy names, upper-case tickers) and mentions that
        fit several companies equally."""
        pieces = _pieces(question)
        cased = any(ch.isupper() for ch in question)
        found: list[CompanyMention] = []
        ambiguous: list[dict[str, Any]] = []
        covered: list[tuple[int, int]] = []
        i = 0
        while i < len(pieces):
            hit = self._phrase_at(question, pieces, i, cased)
            if hit is None:
                i += 1
                continue
            n, keys, how = hit
            span = (pieces[i].start, pieces[i + n - 1].end)
            text = question[span[0]:span[1]]
            covered.append(span)
            if len(keys) > 1:
                ambiguous.append({"text": text, "candidates": sorted(self.company(k).name for k in keys)})
            else:
                key = next(iter(keys))
                found.append(CompanyMention(text, self.company(key).name, key, how))
            i += n
        free = [p for p in pieces if not _inside(p.start, covered)]
        found += self._fuzzy(free, cased, covered, question)
        ambiguous += self._leading_words(free, cased, covered)
        found += self._tickers(question, covered)
        return _dedupe(found), ambiguous

    def _phrase_at(self, question: str, pieces: list[_Piece], i: int, cased: bool):
        for n in range(min(self.longest, len(pieces) - i), 0, -1):
            span = pieces[i:i + n]
            forms = [tuple(p.form for p in span)]
            if span[-1].alt:
                forms.append(forms[0][:-1] + (span[-1].alt,))
            for words in forms:
                keys = self.phrases.get(words)
                how_compact = False
                if keys is None and n <= 3:
                    keys, how_compact = self.compact.get("".join(words)), True
                if not keys:
                    continue
                # one word is written with a capital ("Block", not "a block of shares") or as
                # the company writes it ("salesforce.com")
                word = re.sub(r"['’]s?$", "", span[0].raw)
                if n == 1 and cased and word == word.lower() and word not in self.spellings:
                    continue
                raw = question[span[0].start:span[-1].end]
                return n, set(keys), self._how(keys, raw, how_compact)
        return None

    def _how(self, keys: dict[str, str], raw: str, compact: bool) -> str:
        key, kind = next(iter(keys.items()))
        if kind == "alias":
            return "alias"
        written = re.sub(r"['’]s?$", "", raw).casefold()
        return "exact" if not compact and written == self.company(key).name.casefold() else "name_match"

    def _fuzzy(self, free: list[_Piece], cased: bool, covered, question: str) -> list[CompanyMention]:
        """Misspelt names ("Mircosoft"): capitalised, same first letter, one edit (two from 9 letters)."""
        out = []
        for i, piece in enumerate(free):
            if cased and not piece.raw[:1].isupper():
                continue
            for n in (2, 1):
                span = free[i:i + n]
                if len(span) < n or _inside(span[-1].start, covered):
                    continue
                text = " ".join(p.form for p in span)
                if len(text) < 6:
                    continue
                best = sorted(
                    (DamerauLevenshtein.distance(text, " ".join(words)), words)
                    for words in self.phrases if words[0][:1] == text[:1]
                    and abs(len(" ".join(words)) - len(text)) <= 2
                )
                limit = 2 if len(text) >= 9 else 1
                if best and best[0][0] <= limit and (len(best) == 1 or best[1][0] > best[0][0]):
                    keys = self.phrases[best[0][1]]
                    if len(keys) == 1:
                        key = next(iter(keys))
                        span_text = question[span[0].start:span[-1].end]
                        out.append(CompanyMention(span_text, self.company(key).name, key, "name_match"))
                        covered.append((span[0].start, span[-1].end))
                        break
        return out

    def _leading_words(self, free: list[_Piece], cased: bool, covered) -> list[dict[str, Any]]:
        """A capitalised word that starts the names of several companies ("American")."""
        out = []
        for piece in free:
            if _inside(piece.start, covered) or (cased and not piece.raw[:1].isupper()):
                continue
            keys = self.first_words.get(piece.form, set())
            if len(keys) > 1:
                out.append({"text": piece.raw, "candidates": sorted(self.company(k).name for k in keys)})
        return out

    def _tickers(self, question: str, covered) -> list[CompanyMention]:
        """Known tickers written as upper-case tokens ("JPM's"); "$X" always counts."""
        if not any(ch.islower() for ch in question):  # an all-capitals question has no signal
            return []
        out = []
        for m in re.finditer(r"(?<![\w&/.'’$-])(\$?)([A-Z]{1,5})(?=(?:['’]s?)?(?![\w&/-]))", question):
            dollar, token = m.groups()
            if _inside(m.start(2), covered) or token not in self.tickers:
                continue
            if not dollar and (len(token) == 1 or token in _NOT_TICKERS):
                continue
            if not dollar and token in _US_STATES and re.search(r"\b[A-Z][a-z]+,\s*$", question[:m.start()]):
                continue  # "Miami, FL": a state after a city, not Foot Locker
            keys = self.tickers[token]
            if len(keys) == 1:
                key = next(iter(keys))
                out.append(CompanyMention(m.group(), self.company(key).name, key, "regex"))
        return out

    def lookup(self, name: str) -> tuple[str, str] | None:
        """(key, how) for a name the router LLM gave: dictionary first, then a close fuzzy match."""
        words = tuple(normalize_name(name).split())
        keys = self.phrases.get(words) or self.compact.get("".join(words))
        if keys and len(keys) == 1:
            return next(iter(keys)), self._how(keys, name, words not in self.phrases)
        company = None if keys else self.table.fuzzy(name, threshold=88)
        return (company.key, "name_match") if company else None


def _inside(pos: int, spans: list[tuple[int, int]]) -> bool:
    return any(a <= pos < b for a, b in spans)


def _dedupe(mentions: list[CompanyMention]) -> list[CompanyMention]:
    """One mention per company, keeping its strongest evidence, in order of appearance."""
    best: dict[str, CompanyMention] = {}
    for m in mentions:
        if m.key not in best or STRENGTH.index(m.how) < STRENGTH.index(best[m.key].how):
            best[m.key] = m
    order = list(dict.fromkeys(m.key for m in mentions))
    return [best[k] for k in order]


# --- periods, dates and document types ---------------------------------------------------------

def extract_periods(question: str) -> Mentions:
    """Fiscal periods, dates and document types of a question (no companies)."""
    found = read_periods(question)
    doc_types = [kind for kind, pattern in _DOC_TYPE_PATTERNS if re.search(pattern, question, re.I)]
    return Mentions(periods=found.periods, calendar_years=found.calendar_years, dates=found.dates,
                    doc_types=doc_types, outlook=bool(_OUTLOOK.search(question)),
                    intent=read_intent(question), as_of=bool(re.search(r"\bas\s+of\b", question, re.I)))


def extract_mentions(question: str, companies: CompanyTable | CompanyDictionary | None = None,
                     documents: Iterable[Any] = ()) -> Mentions:
    """Everything the deterministic pass reads from a question: companies (names, aliases,
    possessives, misspellings, upper-case tickers), fiscal years and quarters, dates and types."""
    dictionary = companies if isinstance(companies, CompanyDictionary) else \
        CompanyDictionary(companies, documents)
    mentions = extract_periods(question)
    mentions.companies, mentions.ambiguous = dictionary.find(question)
    return mentions
