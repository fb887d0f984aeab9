"""Routing: which indexed filings a question is about, and how that was decided.

Two steps. *Extraction* reads companies, fiscal periods, dates and document types from the
question: deterministically (``extract_mentions``) and, when that is not enough, through one
constrained router-LLM call (``models.router_schema``). *Resolution* (``Resolver``) maps what was
extracted to catalog doc ids only: every id it returns comes from the catalog, never from text
the question or the model wrote, and nothing from a filing is ever shown to the router LLM.

``Router.route`` runs the deterministic pass first and only calls the LLM when that pass finds
no company or an ambiguous one (the fast path is counted in ``Router.stats``).
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import date
from typing import Any, Callable, Iterable, Sequence

from rapidfuzz import fuzz
from rapidfuzz.distance import DamerauLevenshtein

from retrieval.answer import LLMCall, Routing
from retrieval.routing.calendars import (DateMention, date_period, end_from_period, fiscal_period,
                                 fiscal_year_of_calendar_year, is_quarter_end, read_periods)
from retrieval.routing.companies import Company, CompanyTable, default_table, normalize_name

ContentScorer = Callable[[str, list[str]], "str | None"]

ANNUAL_TYPES = frozenset({"10-K", "annual report"})
# How strongly each match kind identifies a company; a routing's status is its weakest link.
_STRENGTH = ("exact", "alias", "name_match", "regex")
# Upper-case words of financial questions that are not tickers (some are tickers elsewhere).
_NOT_TICKERS = frozenset("""
    A I AM AN AS AT BE BY DO GO IF IN IS IT ME MY NO OF ON OR SO TO UP WE OK
    FY FQ CY YOY YTD QTD TTM LTM USD EUR GBP JPY CAD US USA UK EU SEC GAAP IFRS EPS DPS
    CEO CFO COO CTO CAPEX OPEX EBIT EBITDA PPE PPNE COGS SGA ROA ROE ROI ROIC ROCE DPO DSO DIO
    CCC FCF NI AR AP PP RD NOI FFO AFFO NAV AUM VAR IPO LBO ESG KPI EV PE PEG NII NIM CET TBV
    FX LIFO FIFO QTR HQ LLC INC CORP LTD PLC NA NM TBD USDM MM BN NYSE NASDAQ ETF ADR
    Q H DEF PDF HTML XBRL API AI IT ON ALL NOW KEY MAIN REAL BIG FAST HAS CAN WELL
""".split())
_DOC_TYPE_PATTERNS = (
    ("10-K", r"\b(?:form\s+)?10[\s-]?K\b|\bannual\s+(?:report|filing)s?\b"),
    ("10-Q", r"\b(?:form\s+)?10[\s-]?Q\b|\bquarterly\s+(?:report|filing)s?\b"),
    ("8-K", r"\b(?:form\s+)?8[\s-]?K\b|\bcurrent\s+report\b"),
    ("earnings", r"\b(?:earnings|press|results)\s+(?:release|report|announcement)s?\b"),
)
# What a year-end earnings release carries and a 10-K does not: adjusted (non-GAAP) measures,
# constant-currency growth and guidance.
_RELEASE_TERMS = re.compile(
    r"\b(?:adjusted|non[\s-]?gaap|guidance|outlook|expect\w*|forecast\w*|constant[\s-]currency|"
    r"organic\s+(?:growth|sales)|exclud\w*\s+(?:the\s+)?(?:impact|effect)s?\s+of\s+"
    r"(?:fx|foreign\s+exchange|currency|currencies))\b", re.I)
# Balance-sheet questions: a 10-K shows only the current and prior year-end.
_BALANCE_SHEET = re.compile(
    r"balance\s+sheet|financial\s+position|year[\s-]end\b|end\s+of\s+(?:the\s+)?(?:fiscal\s+)?(?:year|FY|\d{4})|"
    r"cash\s+(?:and\s+cash\s+equivalents|balance|position|on\s+hand)|"
    r"total\s+assets|working\s+capital|receivable|payable|inventor(?:y|ies)|PP&?N?E|property,?\s+plant|"
    r"quick\s+ratio|current\s+ratio|liabilit|shareholders'?\s+equity|book\s+value|\bdebt\b", re.I)
_OUTLOOK = re.compile(r"\b(?:expect\w*|outlook|guidance|forecast\w*|anticipat\w*|projected)\b", re.I)


# --- what a question mentions ------------------------------------------------------------------


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
        if m.key not in best or _STRENGTH.index(m.how) < _STRENGTH.index(best[m.key].how):
            best[m.key] = m
    order = list(dict.fromkeys(m.key for m in mentions))
    return [best[k] for k in order]


# --- periods, dates and document types ---------------------------------------------------------

def extract_periods(question: str) -> Mentions:
    """Fiscal periods, dates and document types of a question (no companies)."""
    found = read_periods(question)
    doc_types = [kind for kind, pattern in _DOC_TYPE_PATTERNS if re.search(pattern, question, re.I)]
    return Mentions(periods=found.periods, calendar_years=found.calendar_years, dates=found.dates,
                    doc_types=doc_types, outlook=bool(_OUTLOOK.search(question)))


def extract_mentions(question: str, companies: CompanyTable | CompanyDictionary | None = None,
                     documents: Iterable[Any] = ()) -> Mentions:
    """Everything the deterministic pass reads from a question: companies (names, aliases,
    possessives, misspellings, upper-case tickers), fiscal years and quarters, dates and types."""
    dictionary = companies if isinstance(companies, CompanyDictionary) else \
        CompanyDictionary(companies, documents)
    mentions = extract_periods(question)
    mentions.companies, mentions.ambiguous = dictionary.find(question)
    return mentions


# --- resolution --------------------------------------------------------------------------------


def _filed(rec: Any) -> date | None:
    text = rec.filing_date
    if not text and (m := re.search(r"dated[-_](\d{4}-\d{2}-\d{2})", rec.doc_id)):
        text = m.group(1)
    try:
        return date.fromisoformat(text) if text else None
    except ValueError:
        return None


def _is_annual(rec: Any) -> bool:
    return rec.doc_type in ANNUAL_TYPES or (rec.doc_type == "earnings" and rec.fiscal_quarter in (None, 4))


def _label(rec: Any) -> str:
    if rec.doc_type == "8-K":
        filed = _filed(rec)
        return f"8-K filed {filed.isoformat()}" if filed else "8-K"
    period = f"FY{rec.fiscal_year}" + (f" Q{rec.fiscal_quarter}" if rec.fiscal_quarter else "")
    kind = "earnings release" if rec.doc_type == "earnings" else rec.doc_type
    return f"{period} {kind}"


_TYPE_ORDER = ("10-K", "annual report", "earnings", "10-Q", "8-K")


@dataclass
class _Pick:
    doc_ids: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    defaulted: bool = False


class Resolver:
    """Maps extracted entities to catalog doc ids (see the module docstring)."""

    def __init__(self, documents: Sequence[Any], companies: CompanyTable | None = None,
                 content_scorer: ContentScorer | None = None):
        self.documents = list(documents)
        self.dictionary = CompanyDictionary(companies, self.documents)
        self.content_scorer = content_scorer
        self.by_company: dict[str, list[Any]] = {}
        for rec in self.documents:
            self.by_company.setdefault(self.dictionary.doc_company[rec.doc_id], []).append(rec)
        self.doc_ids = {rec.doc_id for rec in self.documents}

    # entities ---------------------------------------------------------------------------------
    def mentions(self, question: str, llm_output: Any = None) -> Mentions:
        mentions = extract_mentions(question, self.dictionary)
        if llm_output is not None:
            self._merge_llm(question, mentions, llm_output)
        return mentions

    def _merge_llm(self, question: str, mentions: Mentions, out: Any) -> None:
        """Add the companies and tickers the router LLM found, keeping only what the question
        itself supports. Years, quarters and types are read from the text alone (the model's
        are kept in ``extracted["llm"]``): a small model adds years it was not given."""
        cased = any(ch.isupper() for ch in question)
        words_q = " " + " ".join(normalize_name(question).split()) + " "
        confirmed: set[str] = set()
        for ticker in out.tickers or []:
            if re.search(rf"\b{re.escape(ticker)}\b", question, 0 if cased else re.I):
                confirmed |= self.dictionary.tickers.get(ticker.upper(), set())
        for name in out.companies or []:
            normal = " ".join(normalize_name(name).split())
            written = len(normal) >= 2 and (f" {normal} " in words_q
                                            or f" {normal}s " in words_q)  # "Tesla's"
            if not written and (len(normal) < 5 or fuzz.partial_ratio(normal, words_q) < 90):
                continue  # not in the question: the model made it up (or copied an example)
            found = self.dictionary.lookup(name)
            if found is None:
                if written and all(normalize_name(m.text) != normal for m in mentions.companies):
                    mentions.unknown.append(name[:60])
                continue
            key, how = found
            confirmed.add(key)
            if all(m.key != key for m in mentions.companies):
                company = self.dictionary.company(key).name
                mentions.companies.append(CompanyMention(name[:60], company, key, how))
        for m in mentions.companies:
            if m.how == "regex" and m.key in confirmed:
                m.how = "exact"  # the ticker the regex saw is one the model read as a company too
        if mentions.companies:
            mentions.ambiguous = []

    # documents --------------------------------------------------------------------------------
    def resolve(self, question: str, llm_output: Any = None) -> Routing:
        if not isinstance(question, str) or not question.strip():
            raise ValueError("empty question: routing needs the text of a question")
        started = time.perf_counter()
        mentions = self.mentions(question, llm_output)
        extracted = mentions.to_dict()
        if llm_output is not None:
            extracted["search_query"] = llm_output.search_query
            extracted["keywords"] = list(llm_output.keywords)
            extracted["llm"] = llm_output.model_dump()
        picks = {m.key: self._pick(m.key, mentions, question) for m in mentions.companies}
        routed = [m for m in mentions.companies if picks[m.key].doc_ids]
        doc_ids = list(dict.fromkeys(d for m in routed for d in picks[m.key].doc_ids))
        assert set(doc_ids) <= self.doc_ids
        parts = []
        for m in mentions.companies:
            pick = picks[m.key]
            said = "; ".join(pick.notes + pick.missing)
            parts.append(f"{m.company} ({m.how} '{m.text}')" + (f": {said}" if said else ""))
        for name in mentions.unknown:
            parts.append(f"'{name}' is not a company finrag knows")
        if routed:
            status = max((m.how for m in routed), key=_STRENGTH.index)
            if any(picks[m.key].defaulted for m in routed):
                status = "default_year"
        elif mentions.companies:
            status = "fallback_not_in_corpus"
        elif mentions.ambiguous:
            status = "fallback_ambiguous"
            parts += [f"'{a['text']}' fits {', '.join(a['candidates'])}" for a in mentions.ambiguous]
        else:  # names the model read as companies but finrag does not know are listed only
            status = "fallback_no_entities"
            parts.append("no company finrag knows is named in the question")
        return Routing(status=status, doc_ids=doc_ids if routed else [], extracted=extracted,
                       detail=" | ".join(parts),
                       latency_ms=(time.perf_counter() - started) * 1000)

    def _company_calendar(self, key: str) -> tuple[str | None, bool]:
        company = self.dictionary.company(key)
        if company.fiscal_year_end:
            return company.fiscal_year_end, company.week_based
        annual = [d for d in self.by_company.get(key, []) if d.doc_type in ANNUAL_TYPES and d.period_end]
        latest = max(annual, key=lambda d: d.period_end, default=None)
        return (end_from_period(latest.period_end) if latest else None), False

    def _pick(self, key: str, m: Mentions, question: str) -> _Pick:
        docs = self.by_company.get(key, [])
        pick = _Pick()
        if not docs:
            pick.missing.append("no filings of this company are indexed")
            return pick
        fye, week_based = self._company_calendar(key)
        types = set(m.doc_types)
        if types & ANNUAL_TYPES:
            types |= ANNUAL_TYPES
        periods = list(m.periods)
        periods += [(fiscal_year_of_calendar_year(y, fye), None) for y in m.calendar_years]
        chosen: list[Any] = []

        def choose(cands: list[Any], why: str) -> None:
            rec, how = self._choose(question, cands, bool(types))
            chosen.append(rec)
            pick.notes.append(f"{_label(rec)}{' ' + why if why else ''}{how}")

        for d in m.dates:
            if not types or "8-K" in types:
                filings = self._eight_ks(docs, d, fye, week_based, "8-K" in types)
                if filings:
                    choose(filings, f"(filed near {d.day.isoformat()})" if d.precision == "day"
                           else f"(filed in {d.day:%B %Y})")
                    continue
                if "8-K" in types:
                    when = (f"near {d.day.isoformat()}" if d.precision == "day"
                            else f"in {d.day:%B %Y}")
                    pick.missing.append(f"no 8-K filed {when} is indexed")
                    continue
            periods.append(date_period(d, fye, week_based))
        if "8-K" in types and not m.dates:
            years = [y for y, _ in periods if y is not None] or [None]
            for year in years:
                filings = [r for r in docs if r.doc_type == "8-K"
                           and (year is None or _eight_k_in_year(r, year))]
                if filings:
                    choose(filings, "" if year else "(latest 8-K: no year in the question)")
                    pick.defaulted |= year is None
                else:
                    pick.missing.append(f"no 8-K{f' of {year}' if year else ''} is indexed")
            periods = [] if types == {"8-K"} else periods
        periods = sorted(set(periods), key=lambda p: (-(p[0] or 9999), p[1] is None, p[1] or 0))
        depth = 1 if _BALANCE_SHEET.search(question) else 2
        for year, quarter in periods:
            if any(_covers(rec, year, quarter, depth) for rec in chosen):
                continue
            needed = [p for p in periods if p[0] is not None and p[0] <= year]
            self._pick_period(docs, year, quarter, types, m.outlook, depth, needed, choose, pick)
        if not chosen and not pick.missing and not (m.dates or periods or "8-K" in types):
            self._pick_latest(docs, types, question, choose, pick)
        pick.doc_ids = list(dict.fromkeys(r.doc_id for r in chosen))
        return pick

    def _pick_period(self, docs, year, quarter, types, outlook, depth, needed, choose, pick) -> None:
        def named(recs):
            return [r for r in recs if not types or r.doc_type in types]

        if year is None:  # a quarter without a year: the latest filing of that quarter
            cands = named(r for r in docs if r.fiscal_quarter == quarter)
            if cands:
                latest = max(r.fiscal_year or 0 for r in cands)
                choose([r for r in cands if r.fiscal_year == latest], "(no year in the question: latest)")
                pick.defaulted = True
            else:
                pick.missing.append(f"no Q{quarter} filing is indexed")
            return
        if quarter is not None:
            cands = named(r for r in docs if r.fiscal_year == year and r.fiscal_quarter == quarter
                          and r.doc_type in ("10-Q", "earnings"))
            if cands:
                return choose(cands, "")
            annual = named(r for r in docs if r.fiscal_year == year and r.doc_type in ANNUAL_TYPES)
            if annual:
                return choose(annual, f"(no Q{quarter} FY{year} filing indexed: the annual report covers it)")
            later = named(r for r in docs if r.fiscal_year == year + 1 and r.fiscal_quarter == quarter
                          and r.doc_type in ("10-Q", "earnings"))
            if later:
                return choose(later, f"(Q{quarter} FY{year} not indexed: reported as the prior-year quarter)")
            pick.missing.append(f"no Q{quarter} FY{year} filing is indexed")
            return
        if types and not types & (ANNUAL_TYPES | {"earnings"}):  # "its 10-Qs of 2023"
            cands = named(r for r in docs if r.fiscal_year == year)
            if cands:
                return choose(cands, "")
        else:
            cands = named(r for r in docs if r.fiscal_year == year and _is_annual(r))
            if cands:
                return choose(cands, "")
            later = named(r for r in docs if r.fiscal_year and r.fiscal_year > year
                          and _covers(r, year, None, depth))
            if later:  # the filing reporting most of the years asked; the latest (as restated) on a tie
                best = max((sum(_covers(r, y, q, depth) for y, q in needed), r.fiscal_year) for r in later)
                return choose([r for r in later if (sum(_covers(r, y, q, depth) for y, q in needed),
                                                    r.fiscal_year) == best],
                              f"(FY{year} not indexed: this later filing reports FY{year})")
            if outlook:
                prior = named(r for r in docs if r.fiscal_year == year - 1 and _is_annual(r))
                if prior:
                    return choose(prior, f"(outlook for FY{year} is given in FY{year - 1}'s filings)")
        pick.missing.append(f"no filing for FY{year} is indexed")

    def _pick_latest(self, docs, types, question, choose, pick) -> None:
        """No year, quarter or date: the latest filing of the wanted type. With no type named,
        the latest periodic report (it supersedes older ones), unless an 8-K matches the
        question's content better: an 8-K reports one event, which later reports only summarise."""
        cands = [r for r in docs if not types or r.doc_type in types]
        if not cands:
            pick.missing.append(f"no {'/'.join(sorted(types))} filing is indexed")
            return
        pick.defaulted = True
        periodic = [r for r in cands if r.doc_type != "8-K"] or cands
        newest = max(self._recency(r)[:2] for r in periodic)
        latest = [r for r in periodic if self._recency(r)[:2] == newest]
        events = [r for r in cands if r.doc_type == "8-K" and r not in latest]
        if not types and events and self.content_scorer is not None:
            rec, note = self._choose(question, latest, False)
            return choose([rec, *events], f"(latest: no year in the question){note}")
        choose(latest, "(latest: no year in the question)")

    def _recency(self, rec: Any) -> tuple:
        filed = _filed(rec)
        if rec.doc_type == "8-K" and filed:
            key = self.dictionary.doc_company[rec.doc_id]
            fye, week_based = self._company_calendar(key)
            year, quarter = fiscal_period(filed, fye, week_based)
            return (year, quarter - 0.5, 0)  # an 8-K falls inside the quarter it was filed in
        rank = 4 if _is_annual(rec) else (rec.fiscal_quarter or 0)
        return (rec.fiscal_year or 0, rank, -_TYPE_ORDER.index(rec.doc_type))

    def _choose(self, question: str, cands: list[Any], type_named: bool) -> tuple[Any, str]:
        """One document of several for the same company and period."""
        cands = list({r.doc_id: r for r in cands}.values())
        if len(cands) == 1:
            return cands[0], ""
        annual = [r for r in cands if r.doc_type in ANNUAL_TYPES]
        releases = [r for r in cands if r.doc_type == "earnings"]
        note = ""
        if annual and releases and not type_named:
            # A 10-K holds everything a year-end release does except adjusted (non-GAAP)
            # measures and guidance, so it wins unless the question asks for those.
            if _RELEASE_TERMS.search(question):
                cands = releases
                note = " [earnings release: the question asks for adjusted figures or guidance]"
            else:
                cands = annual
                note = " [the 10-K reports the full year; no adjusted figures or guidance asked for]"
            if len(cands) == 1:
                return cands[0], note
        if self.content_scorer is not None:
            best = self.content_scorer(question, [r.doc_id for r in cands])
            for rec in cands:
                if rec.doc_id == best:
                    others = ", ".join(r.doc_id for r in cands if r is not rec)
                    return rec, f"{note} [by content over {others}]"
        rec = max(cands, key=lambda r: (self._recency(r)[:2], -_TYPE_ORDER.index(r.doc_type)))
        return rec, f"{note} [latest of {', '.join(r.doc_id for r in cands)}]"

    def _eight_ks(self, docs, d: DateMention, fye, week_based, named: bool) -> list[Any]:
        """8-Ks filed on/near a date (or in a month). A quarter-end date that no word ties to a
        filing ("as of June 30, 2023") is read as a balance-sheet date, not an 8-K's."""
        if d.role != "date":
            return []
        if d.precision == "day" and not (named or d.dated) and is_quarter_end(d.day, fye, week_based):
            return []
        out = []
        for rec in docs:
            filed = _filed(rec)
            if rec.doc_type != "8-K" or filed is None:
                continue
            if d.precision == "day" and abs((filed - d.day).days) <= 3:
                out.append(rec)
            elif d.precision == "month" and (filed.year, filed.month) == (d.day.year, d.day.month):
                out.append(rec)
        return out


def _eight_k_in_year(rec: Any, year: int) -> bool:
    filed = _filed(rec)
    return rec.fiscal_year == year or (filed is not None and filed.year == year)


def _covers(rec: Any, year: int | None, quarter: int | None, depth: int = 2) -> bool:
    """Whether a filing reports a period: a 10-K has three years of income and cash-flow
    statements (``depth`` 2) but two balance sheets (1); an earnings release or 10-Q compares
    with the prior year."""
    if year is None or rec.fiscal_year is None:
        return False
    if quarter is None:
        if rec.doc_type in ANNUAL_TYPES:
            return rec.fiscal_year - depth <= year <= rec.fiscal_year
        return _is_annual(rec) and rec.fiscal_year - 1 <= year <= rec.fiscal_year
    if rec.doc_type in ("10-Q", "earnings") and rec.fiscal_quarter == quarter:
        return rec.fiscal_year - 1 <= year <= rec.fiscal_year
    return False


# --- the router ----------------------------------------------------------------------------------


class Router:
    """Deterministic pass first; one router-LLM call only when that pass finds no company or
    an ambiguous one (``stats`` counts fast-path routes and LLM calls).

    ``llm`` is an engine with ``generate_json`` or a zero-argument function that loads one (it
    is then loaded the first time a question needs it)."""

    def __init__(self, index_or_documents: Any, companies: CompanyTable | None = None,
                 llm: Any = None, content_scorer: ContentScorer | None = None):
        documents = (index_or_documents.documents() if hasattr(index_or_documents, "documents")
                     else index_or_documents)
        self.resolver = Resolver(documents, companies, content_scorer)
        self._llm = llm
        self.stats: Counter[str] = Counter()  # routes, fast_path, llm_calls, llm_errors, …

    @property
    def llm(self) -> Any:
        if self._llm is not None and not hasattr(self._llm, "generate_json"):
            self._llm = self._llm()
        return self._llm

    def route(self, question: str) -> Routing:
        if not isinstance(question, str) or not question.strip():
            raise ValueError("empty question: routing needs the text of a question")
        started = time.perf_counter()
        self.stats["routes"] += 1
        routing = self.resolver.resolve(question)
        # the model could only add a company: not needed when one was found (routed, or known
        # with none of the filings asked for indexed)
        certain = routing.routed or routing.status == "fallback_not_in_corpus"
        if certain or self._llm is None:
            self.stats["fast_path" if certain else "unrouted_without_llm"] += 1
            routing.latency_ms = (time.perf_counter() - started) * 1000
            return routing
        try:
            output, call = self.extract(question)
        except Exception as err:  # a failed call leaves the deterministic answer standing
            self.stats["llm_errors"] += 1
            routing.llm_called = True
            routing.detail += f" | router LLM failed: {type(err).__name__}: {str(err)[:200]}"
            routing.latency_ms = (time.perf_counter() - started) * 1000
            return routing
        routing = self.resolver.resolve(question, output)
        routing.llm_called = True
        routing.usage = [call]
        routing.latency_ms = (time.perf_counter() - started) * 1000
        return routing

    def extract(self, question: str) -> tuple[Any, LLMCall]:
        """The router LLM's one constrained call: (RouterOutput, its cost)."""
        from models.router_schema import RouterOutput, router_messages

        llm = self.llm
        self.stats["llm_calls"] += 1
        [(output, completion)] = llm.generate_json([router_messages(question)], RouterOutput)
        return output, LLMCall("router", getattr(llm, "model_id", "?"), completion.prompt_tokens,
                               completion.completion_tokens, completion.latency_s * 1000)


def make_content_scorer(index: Any, embedder: Any = None, k: int = 10) -> ContentScorer:
    """Content disambiguation: a hybrid search of the question scoped to the candidate
    documents; the document that owns the best-ranked passage wins. ``embedder`` may be a
    zero-argument function that loads one on first use; without one the search is FTS only."""
    loaded: list[Any] = []

    def score(question: str, doc_ids: list[str]) -> str | None:
        if embedder is not None and not loaded:
            loaded.append(embedder if hasattr(embedder, "encode") else embedder())
        vector = loaded[0].encode([question])[0] if loaded else None
        hits = index.search(question, vector, k=k, doc_ids=list(doc_ids))
        return hits[0].doc_id if hits else None

    return score


# --- evaluation ----------------------------------------------------------------------------------


def evaluate_routing(router: Router, questions: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Route FinanceBench-style questions (``question``, ``doc_name``, ``pdf_present``) and count
    how many with their filing indexed were routed to exactly that filing."""
    rows, statuses = [], Counter()
    for q in questions:
        gold = q.get("doc_name") or q.get("doc_id")  # FinanceBench's or finrag's own files
        routing = router.route(q["question"])
        statuses[routing.status] += 1
        rows.append({"question": q["question"], "doc_name": gold,
                     "pdf_present": bool(q.get("pdf_present", True)),
                     "status": routing.status, "doc_ids": routing.doc_ids, "detail": routing.detail,
                     "exact": routing.routed and routing.doc_ids == [gold],
                     "llm_called": routing.llm_called})
    present = [r for r in rows if r["pdf_present"]]
    exact = sum(r["exact"] for r in present)
    return {"questions": len(rows), "present": len(present), "exact": exact,
            "exact_rate": exact / len(present) if present else None,
            "statuses": dict(statuses), "router_stats": dict(router.stats),
            "misses": [r for r in present if not r["exact"]], "rows": rows}
