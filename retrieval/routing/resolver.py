"""Resolution: the catalog doc ids a question's extracted companies, periods, dates and
document types name (``Resolver``). Every id it returns comes from the catalog, never from
text the question or the model wrote, and nothing from a filing is ever shown to the router
LLM. ``retrieval.routing.router`` decides when the router LLM's extraction is asked for."""

from __future__ import annotations

import calendar
import re
import time
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Callable, Sequence

from rapidfuzz import fuzz

from finrag.retrieval.answer import Routing
from finrag.retrieval.routing.calendars import (DateMention, business_days_after, date_period,
                                         end_from_period, fiscal_period,
                                         fiscal_year_of_calendar_year, is_quarter_end)
from finrag.retrieval.routing.companies import CompanyTable, normalize_name
from finrag.retrieval.routing.intent import CUES, settle
from finrag.retrieval.routing.mentions import (STRENGTH, CompanyDictionary, CompanyMention, Mentions,
                                        extract_mentions)

ContentScorer = Callable[[str, list[str]], "str | None"]

ANNUAL_TYPES = frozenset({"10-K", "annual report"})
# Balance-sheet questions: a 10-K shows only the current and prior year-end.
_BALANCE_SHEET = re.compile(
    r"balance\s+sheet|financial\s+position|year[\s-]end\b|end\s+of\s+(?:the\s+)?(?:fiscal\s+)?(?:year|FY|\d{4})|"
    r"cash\s+(?:and\s+cash\s+equivalents|balance|position|on\s+hand)|"
    r"\b(?:drop|increase|decrease|change|rise|fall|decline|growth)\s+in\s+(?:[\w'’&.-]+\s+){0,3}?cash\b"
    r"(?![\s-]+(?:flows?|from|used|provided|generated|dividends?|paid|conversion))|"
    r"total\s+assets|working\s+capital|receivable|payable|inventor(?:y|ies)|PP&?N?E|property,?\s+plant|"
    r"quick\s+ratio|current\s+ratio|liabilit|shareholders'?\s+equity|book\s+value|\bdebt\b", re.I)


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
_TYPE_WORDS = {"10-K": "annual report", "earnings": "earnings release", "8-K": "8-K"}


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
        if mentions.intent.conflict:
            mentions.settled = settle(mentions.intent, list(out.doc_types or []))
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
            if getattr(llm_output, "passage", None) is not None:
                extracted["passage"] = llm_output.passage
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
        if mentions.intent.conflict:
            cues = ", ".join(f"{k} '{w}'" for k, w in mentions.intent.words.items())
            parts.append(f"filing-type cues conflict ({cues}): " + (
                f"the router LLM chose {_TYPE_WORDS[mentions.settled]}" if mentions.settled
                else f"{_TYPE_WORDS[mentions.preferred]} by the order event, release, history"
                if mentions.preferred else "a form named in the question decides"))
        if routed:
            status = max((m.how for m in routed), key=STRENGTH.index)
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

        def choose(cands: list[Any], why: "str | Callable[[Any], str]") -> None:
            rec, how = self._choose(question, cands, bool(types), m)
            chosen.append(rec)
            why = why(rec) if callable(why) else why
            pick.notes.append(f"{_label(rec)}{' ' + why if why else ''}{how}")

        for d in m.dates:
            if not types or types & {"8-K", "earnings"}:
                filings = self._dated_filings(docs, d, fye, week_based, types, m.preferred == "8-K")
                if filings:
                    choose([rec for rec, _ in filings.values()],
                           lambda rec, d=d, filings=filings: _distance(d, filings[rec.doc_id][1]))
                    continue
                if types and types <= {"8-K", "earnings"}:
                    when = (f"on or up to 4 business days after {d.day.isoformat()}"
                            if d.precision == "day" else f"in {d.day:%B %Y}")
                    kinds = " or ".join("earnings release" if t == "earnings" else t
                                        for t in sorted(types))
                    pick.missing.append(f"no {kinds} filed {when} is indexed")
                    continue
            periods.append(date_period(d, fye, week_based))
        if m.preferred == "8-K" and not chosen and not m.dates:
            # an event without a date: the 8-Ks of the years asked (any year when none is)
            years = [y for y, _ in periods if y is not None]
            filings = [r for r in docs if r.doc_type == "8-K"
                       and (not years or any(_eight_k_in_year(r, y) for y in years))]
            if filings:
                choose(filings, f"(an event ('{m.intent.words['event']}'): its 8-K"
                                f"{'' if years else '; no year in the question'})")
                pick.defaulted |= not years
                periods = []
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
        # a quarter compared with a fiscal year (end): each period from the filing that reports
        # it, the quarter's filing first (a form named other than the 10-K, or an outlook
        # given in a quarter for a year, keeps the usual reading)
        spanning = (_quarter_against_year(periods) and not m.outlook
                    and (not types or bool(types & ANNUAL_TYPES)))
        if spanning:
            periods.sort(key=lambda p: p[1] is None)  # stable: newest first within each
        for year, quarter in periods:
            covering = [rec for rec in chosen if _covers(rec, year, quarter, depth)]
            if spanning and quarter is None and not any(map(_is_annual, covering)):
                self._pick_year_end(docs, year, depth, types, covering, choose, pick)
                continue
            if covering:
                continue
            needed = [p for p in periods if p[0] is not None and p[0] <= year]
            self._pick_period(docs, year, quarter, types, m, depth, needed, choose, pick)
        if spanning and {_is_annual(r) for r in chosen} == {True, False}:
            pick.notes.append("a quarter against a year: the quarter's filing first, "
                              "then the annual report")
        if not chosen and not pick.missing and not (m.dates or periods or "8-K" in types):
            self._pick_latest(docs, types, question, m, choose, pick)
        pick.doc_ids = list(dict.fromkeys(r.doc_id for r in chosen))
        return pick

    def _pick_period(self, docs, year, quarter, types, m, depth, needed, choose, pick) -> None:
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
            releases = [r for r in docs if r.doc_type == "earnings" and r.fiscal_year == year]
            if m.preferred == "earnings" and releases and (m.intent.guidance_change or not m.outlook):
                return choose(releases, f"(no annual report of FY{year}: the question asks for "
                                        f"'{m.intent.words['release']}', which its releases carry)")
            later = named(r for r in docs if r.fiscal_year and r.fiscal_year > year
                          and _covers(r, year, None, depth))
            if later:  # the filing reporting most of the years asked; the latest (as restated) on a tie
                best = max((sum(_covers(r, y, q, depth) for y, q in needed), r.fiscal_year) for r in later)
                return choose([r for r in later if (sum(_covers(r, y, q, depth) for y, q in needed),
                                                    r.fiscal_year) == best],
                              f"(FY{year} not indexed: this later filing reports FY{year})")
            if m.outlook:
                prior = named(r for r in docs if r.fiscal_year == year - 1 and _is_annual(r))
                if prior:
                    return choose(prior, f"(outlook for FY{year} is given in FY{year - 1}'s filings)")
            interim = [r for r in docs if r.fiscal_year == year and r.doc_type in ("10-Q", "earnings")]
            if interim and (m.as_of or depth == 1):
                # a state "as of" a year still under way (or a balance): its latest interim filing
                newest = max(r.fiscal_quarter or 0 for r in interim)
                return choose([r for r in interim if (r.fiscal_quarter or 0) == newest],
                              f"(no annual report of FY{year}: its latest filing, as of Q{newest})")
        pick.missing.append(f"no filing for FY{year} is indexed")

    def _pick_year_end(self, docs, year, depth, types, covering, choose, pick) -> None:
        """The fiscal year of a quarter-against-year comparison: its annual report, or a later
        one that reports the year. A 10-Q's balance sheet also shows the last year end, but
        only as its comparative column; the 10-Q (``covering``) stands in for the year only
        when no annual report of it is indexed, and the detail says so."""
        annual = [r for r in docs if _is_annual(r) and (not types or r.doc_type in types)]
        own = [r for r in annual if r.fiscal_year == year]
        if own:
            return choose(own, f"(FY{year}, compared with the quarter)")
        later = [r for r in annual if (r.fiscal_year or 0) > year and _covers(r, year, None, depth)]
        if later:
            latest = max(r.fiscal_year for r in later)
            return choose([r for r in later if r.fiscal_year == latest],
                          f"(no FY{year} annual report indexed: this later one reports FY{year})")
        missing = f"no FY{year} annual report (10-K) is indexed"
        if covering:
            missing += f": FY{year} is read from the {_label(covering[0])} alone"
        pick.missing.append(missing)

    def _pick_latest(self, docs, types, question, m, choose, pick) -> None:
        """No year, quarter or date: the latest filing of the wanted type. With no type named,
        the latest annual report for a question over the years, the latest earnings release for
        guidance or adjusted measures, else the latest periodic report (it supersedes older
        ones), unless an 8-K matches the question's content better: an 8-K reports one event,
        which later reports only summarise."""
        cands = [r for r in docs if not types or r.doc_type in types]
        if not cands:
            pick.missing.append(f"no {'/'.join(sorted(types))} filing is indexed")
            return
        pick.defaulted = True
        prefer = m.preferred
        wanted = [r for r in cands if prefer == "10-K" and r.doc_type in ANNUAL_TYPES
                  or prefer == "earnings" and r.doc_type == "earnings"]
        if wanted:
            newest = max(self._recency(r)[:2] for r in wanted)
            kind = {"10-K": "history", "earnings": "release"}[prefer]
            return choose([r for r in wanted if self._recency(r)[:2] == newest],
                          f"(latest {'annual report' if prefer == '10-K' else 'earnings release'}: "
                          f"no year in the question, which asks for '{m.intent.words[kind]}')")
        periodic = [r for r in cands if r.doc_type != "8-K"] or cands
        newest = max(self._recency(r)[:2] for r in periodic)
        latest = [r for r in periodic if self._recency(r)[:2] == newest]
        events = [r for r in cands if r.doc_type == "8-K" and r not in latest]
        if not types and not prefer and events and self.content_scorer is not None:
            rec, note = self._choose(question, latest, False, m)
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

    def _choose(self, question: str, cands: list[Any], type_named: bool,
                m: Mentions | None = None) -> tuple[Any, str]:
        """One document of several for the same company and period."""
        cands = list({r.doc_id: r for r in cands}.values())
        if len(cands) == 1:
            return cands[0], ""
        note = ""
        prefer = m.preferred if m is not None and not type_named else None
        wanted = [r for r in cands if r.doc_type == prefer
                  or (prefer == "10-K" and r.doc_type in ANNUAL_TYPES)]
        if wanted and len(wanted) < len(cands):
            kind = next(k for k in m.intent.kinds if CUES[k][0] == prefer) if not m.settled else None
            cands = wanted
            note = (f" [{_TYPE_WORDS[prefer]}: the question asks for '{m.intent.words[kind]}']" if kind
                    else f" [{_TYPE_WORDS[prefer]}: the router LLM's choice on conflicting cues "
                         f"({', '.join(f'{k} {w!r}' for k, w in m.intent.words.items())})]")
        annual = [r for r in cands if r.doc_type in ANNUAL_TYPES]
        releases = [r for r in cands if r.doc_type == "earnings"]
        if annual and releases and not type_named:
            # A 10-K holds everything a year-end release does except adjusted (non-GAAP)
            # measures and guidance, which the question would have asked for (above).
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

    def _dated_filings(self, docs, d: DateMention, fye, week_based, types: set[str],
                       event: bool) -> dict[str, tuple[Any, int | None]]:
        """8-Ks (and earnings releases with a known date) filed for a date: on it or up to four
        business days after it (an 8-K's deadline), or in a month named and up to four business
        days after its end; each with its distance in business days (None for a month). A
        quarter-end date that no word ties to a filing or an event ("as of June 30, 2023") is
        read as a balance-sheet date instead."""
        if d.role != "date":
            return {}
        named = bool(types & {"8-K", "earnings"})
        if d.precision == "day" and not (named or event or d.dated) \
                and is_quarter_end(d.day, fye, week_based):
            return {}
        wanted = types & {"8-K", "earnings"} or {"8-K", "earnings"}
        out: dict[str, tuple[Any, int | None]] = {}  # doc id -> (record, business days after)
        for rec in docs:
            filed = _filed(rec)
            if rec.doc_type not in wanted or filed is None:
                continue
            if d.precision == "day":
                after = business_days_after(d.day, filed)
                if after is not None and after <= 4:
                    out[rec.doc_id] = rec, after
            elif (filed.year, filed.month) == (d.day.year, d.day.month):
                out[rec.doc_id] = rec, None
            else:
                month_end = date(d.day.year, d.day.month, calendar.monthrange(*d.day.timetuple()[:2])[1])
                after = business_days_after(month_end, filed)
                if after is not None and 0 < after <= 4:
                    out[rec.doc_id] = rec, None
        return out


def _distance(d: DateMention, after: int | None) -> str:
    """How far a filing's date is from the date the question gave, for the routing detail."""
    if d.precision == "month":
        return f"(filed for {d.day:%B %Y})"
    if after == 0:
        return f"(filed on {d.day.isoformat()}: 0 business days after)"
    return f"({after} business day{'s' if after != 1 else ''} after {d.day.isoformat()})"


def _eight_k_in_year(rec: Any, year: int) -> bool:
    filed = _filed(rec)
    return rec.fiscal_year == year or (filed is not None and filed.year == year)


def _quarter_against_year(periods: Sequence[tuple[int | None, int | None]]) -> bool:
    """Whether the periods asked are a fiscal quarter of a year and a whole fiscal year (or
    its end): "between the end of FY2022 and Q2 of FY2023"."""
    return any(y is not None and q is not None for y, q in periods) and \
        any(y is not None and q is None for y, q in periods)


def _covers(rec: Any, year: int | None, quarter: int | None, depth: int = 2) -> bool:
    """Whether a filing reports a period: a 10-K has three years of income and cash-flow
    statements (``depth`` 2) but two balance sheets (1); an earnings release or 10-Q compares
    with the prior year."""
    if year is None or rec.fiscal_year is None:
        return False
    if quarter is None:
        if rec.doc_type in ANNUAL_TYPES:
            return rec.fiscal_year - depth <= year <= rec.fiscal_year
        if depth == 1 and rec.doc_type == "10-Q" and year == rec.fiscal_year - 1:
            return True  # a 10-Q's balance sheet is dated at the quarter and the last year-end
        return _is_annual(rec) and rec.fiscal_year - 1 <= year <= rec.fiscal_year
    if rec.doc_type in ("10-Q", "earnings") and rec.fiscal_quarter == quarter:
        return rec.fiscal_year - 1 <= year <= rec.fiscal_year
    return False


