"""Answers from the facts store: one value, a series, a statement, or several companies.

Every value names the concept it came from, its period on the company's own fiscal calendar,
the filing (form, accession, EDGAR link) and whether it was derived (Q4 = FY − nine months to
date, or a formula) or restated (the latest filing answers; the first filed value is kept
beside it). What the facts do not hold is said plainly; no number is ever made up.
"""

from __future__ import annotations

from typing import Any, Protocol

from finrag.retrieval.routing.calendars import date_period, fiscal_year_of_calendar_year
from finrag.retrieval.facts.classify import FactQuery
from finrag.retrieval.facts.concepts import ConceptTable, Metric
from finrag.retrieval.facts.formula import Missing, evaluate
from finrag.retrieval.facts.formula import parse as parse_formula
from finrag.retrieval.facts.model import edgar_url
from finrag.retrieval.facts.store import FactCompany, FactLookup, FactStore, StoredFact
from finrag.retrieval.facts.judgements import judged
from finrag.retrieval.facts.trends import verdict
from finrag.retrieval.facts import wording as W
from finrag.retrieval.facts.units import in_requested_unit
from finrag.retrieval.facts.values import FactsResult, FactValue, table_concept, table_source

_FORMULA_DEPTH = 3
class FactsSource(Protocol):
    """The facts answerer of an index: its concept table, its store, and the answer to a
    classified question for some companies."""

    concepts: Any
    store: FactLookup

    def answer(self, query: Any, companies: list[Any]) -> Any:
        ...

    def scoped(self, readable: frozenset[str], public: bool) -> "FactsSource":
        """The facts a caller who may read only ``readable`` doc ids may read (SEC
        companyfacts only with ``public``)."""
        ...


class FactsAnswerer(FactsSource):
    def __init__(self, store: FactStore, concepts: ConceptTable):
        self.store = store
        self.concepts = concepts

    def scoped(self, readable: frozenset[str], public: bool) -> "FactsAnswerer":
        return FactsAnswerer(FactStore(self.store.db, readonly=True, readable=readable,
                                       public=public), self.concepts)

    # one value --------------------------------------------------------------------------
    def value(self, company: FactCompany, metric: Metric, year: int, quarter: int | None,
              depth: int = 0) -> tuple[FactValue | None, str]:
        """The metric for a fiscal year (quarter None) or quarter; (None, why) when absent."""
        if metric.kind == "stock":
            rows = self._rows(company, metric, ("instant",), year, quarter or 4)
            found = self._latest(company, metric, rows)
        elif quarter is None:
            found = self._latest(company, metric, self._rows(company, metric, ("FY",), year))
        else:
            found = self._latest(company, metric, self._rows(company, metric, ("Q",), year, quarter))
            if found is None and quarter == 4:
                return self._q4(company, metric, year)
        if found is None and metric.formula and depth < _FORMULA_DEPTH:
            return self._formula(company, metric, year, quarter, depth)
        if found is None:
            return None, f"no {metric.label.lower()} for {W.period_words(year, quarter)}"
        return found, ""

    def _rows(self, company: FactCompany, metric: Metric, periods: tuple[str, ...], year: int,
              quarter: int | None = None) -> list[StoredFact]:
        return self.store.lookup(company.cik, [*metric.concepts, table_concept(metric)],
                                 periods=periods, fiscal_years=[year], fiscal_quarter=quarter)

    def _latest(self, company: FactCompany, metric: Metric,
                rows: list[StoredFact]) -> FactValue | None:
        """The first concept (in the table's order) with a value; its latest filing answers.
        Periodic reports (10-K, 10-Q and their amendments) count before other forms (a proxy
        statement repeats figures). The citation is the first filing that reported the value
        the latest one states; a value that changed keeps its first filed figure beside it."""
        for concept in (*metric.concepts, table_concept(metric)):  # XBRL before PDF tables
            mine = [r for r in rows if r.concept == concept and r.unit in metric.units]
            periodic = [r for r in mine if r.form.startswith(("10-K", "10-Q"))]
            mine = periodic or mine
            if not mine:
                continue
            # one period per answer: the span most filings report (a transition period aside)
            spans: dict[tuple, list[StoredFact]] = {}
            for r in mine:
                spans.setdefault((r.start, r.end), []).append(r)
            filed = max(spans.values(), key=len)
            first, last = filed[0], filed[-1]
            cited = next(r for r in filed if W.same(r.value, last.value))
            value = self._make(company, metric, cited)
            if not W.same(first.value, last.value):
                value.first_filed = {"value": first.value, "accession": first.accession,
                                     "filed": first.filed, "form": first.form}
            return value
        return None

    def _make(self, company: FactCompany, metric: Metric, r: StoredFact) -> FactValue:
        doc_id, page = table_source(r.source)
        return FactValue(company.name, company.ticker, company.cik, metric.key, metric.label,
                         r.concept, r.value, r.unit, "instant" if r.period == "instant" else r.period,
                         r.fiscal_year, r.fiscal_quarter, r.start, r.end, r.form, r.accession,
                         r.filed, edgar_url(company.cik, r.accession), doc_id=doc_id, page=page)

    def _q4(self, company: FactCompany, metric: Metric, year: int) -> tuple[FactValue | None, str]:
        """Q4 of a flow = the fiscal year minus the nine months to date (or minus Q1-Q3), all
        from the same concept."""
        if metric.kind != "flow":
            return None, (f"Q{4} {metric.label.lower()} is not reported and cannot be derived: "
                          f"{'per-share figures are not additive' if metric.kind == 'per_share' else 'not a flow'}")
        for concept in metric.concepts:
            one = Metric(metric.key, metric.label, (concept,), kind=metric.kind)
            fy = self._latest(company, one, self._rows(company, one, ("FY",), year))
            if fy is None:
                continue
            ytd = self._latest(company, one, self._rows(company, one, ("YTD9",), year, 3))
            if ytd is not None:
                parts, how = [ytd], "FY − nine months to date"
            else:
                parts = [self._latest(company, one, self._rows(company, one, ("Q",), year, q))
                         for q in (1, 2, 3)]
                if any(p is None for p in parts):
                    continue
                how = "FY − Q1 − Q2 − Q3"
            q4 = FactValue(**{**fy.to_dict(), "first_filed": None})
            q4.value = fy.value - sum(p.value for p in parts)
            q4.period, q4.fiscal_quarter, q4.derived = "Q", 4, True
            q4.start = W.day_after(parts[-1].end)
            q4.formula = (f"{how}: {W.num(fy.value, fy.unit)} − "
                          + " − ".join(W.num(p.value, p.unit) for p in parts))
            return q4, ""
        return None, f"no Q4 {metric.label.lower()} for FY{year}, and no FY and nine-month values to derive it"

    def _formula(self, company, metric, year, quarter, depth) -> tuple[FactValue | None, str]:
        """A metric by its formula over other metrics (``formula`` module language); the
        answer states the formula and every input it read."""
        node = parse_formula(metric.formula)
        inputs: dict[tuple[str, int], FactValue] = {}

        def lookup(key: str, back: int) -> float:
            if key not in self.concepts.metrics:
                raise Missing(key, back, f"{key} is not a metric of the table")
            if (key, back) not in inputs:
                v, why = self.value(company, self.concepts[key], year - back, quarter, depth + 1)
                if v is None:
                    raise Missing(key, back, why)
                inputs[(key, back)] = v
            return inputs[(key, back)].value

        try:
            result = evaluate(node, lookup)
        except Missing as gap:
            return None, (f"no {metric.label.lower()} for {W.period_words(year, quarter)} "
                          f"(its formula {metric.formula} lacks: {gap.why})")
        except ZeroDivisionError as err:
            return None, f"{metric.formula}: {err}"
        first = next((v for (_, back), v in inputs.items() if back == 0),
                     inputs[next(iter(inputs))])  # dated by an input of the asked year
        v = FactValue(**{**first.to_dict(), "first_filed": None})
        v.metric, v.label, v.value, v.derived = metric.key, metric.label, result, True
        used = list(inputs.values())
        v.concept = " ".join(dict.fromkeys(u.concept for u in used))
        if metric.kind == "ratio" or metric.kind == "per_share":
            v.unit = "pure" if metric.kind == "ratio" else "USD/shares"
        if metric.kind != "stock" and first.period == "instant" and quarter is None:
            v.period, v.fiscal_quarter, v.start = "FY", None, None  # a ratio of a year
        v.fiscal_year = year
        if any(u.doc_id for u in used):
            cited = max((u for u in used if u.doc_id), key=lambda u: u.fiscal_year)
            v.doc_id, v.page = cited.doc_id, cited.page
        v.formula = f"{metric.formula}: " + "; ".join(
            f"{u.metric} {W.period_words(u.fiscal_year, u.fiscal_quarter)} = "
            f"{W.num(u.value, u.unit, display=self._display(u.metric))}{W.source(u)}"
            for u in used)
        return v, ""

    def _cagr(self, company: FactCompany, metric: Metric, periods: list[tuple[int, int | None]],
              q: FactQuery) -> tuple[FactValue | None, str, str]:
        """The compound annual growth rate from the first to the last fiscal year asked:
        (end / start)^(1/years) − 1, years = end FY − start FY. A span the question gives with
        one year ("the 3-year CAGR as of FY2023", "over the last 3 years") counts back from it.
        Returns (value, what the facts lack, why the rate is not defined from what they hold)."""
        label = metric.label[0].lower() + metric.label[1:]
        years = sorted({y for y, _ in periods})
        if q.span and (len(years) == 1 or q.last_n):
            years = [years[-1] - q.span, years[-1]]
        if len(years) < 2:
            return None, (f"a compound annual growth rate of {label} needs a first and a last "
                          f"fiscal year; the question names only FY{years[0]}"), ""
        first, last = years[0], years[-1]
        n = last - first
        ends, absent = [], []
        for year in (first, last):
            v, why = self.value(company, metric, year, None)
            ends.append(v)
            if v is None:
                absent.append(why)
        if absent:
            return None, (f"no {n}-year compound annual growth rate of {label} "
                          f"(FY{first}–FY{last}): " + "; ".join(absent)), ""
        start, end = ends
        display = self._display(metric.key) or metric.display
        stated = "; ".join(f"{label} FY{v.fiscal_year} = {W.num(v.value, v.unit, display=display)}"
                           f"{W.source(v)}" for v in ends)
        if start.value <= 0 or end.value <= 0:
            return None, "", (f"a {n}-year compound annual growth rate of {label} "
                              f"(FY{first}–FY{last}) cannot be computed: it is defined only "
                              f"between two positive values, and {stated}.")
        v = FactValue(**{**end.to_dict(), "first_filed": None})
        v.metric, v.label = f"{metric.key}_cagr", f"{n}-year compound annual growth rate of {label}"
        v.value = (end.value / start.value) ** (1 / n) - 1
        v.unit, v.derived, v.first_year, v.start = "pure", True, first, start.start
        v.period, v.fiscal_quarter = "FY", None
        v.concept = " ".join(dict.fromkeys((start.concept, end.concept)))
        v.formula = (f"(end / start)^(1/years) − 1, years = FY{last} − FY{first} = {n}: "
                     f"{stated}")
        return v, "", ""

    def _unsupported_metric(self, company: FactCompany, metric: Metric) -> str | None:
        """When a metric's inputs include a line the company reports in no year the facts
        hold ("operating income" of a card issuer), say the statements do not support it."""
        leaves: list[Metric] = []

        def walk(m: Metric, depth: int = 0) -> None:
            for k in m.formula_names if depth < _FORMULA_DEPTH else []:
                inner = self.concepts.metrics.get(k)
                if inner is None or inner in leaves:
                    continue
                if inner.concepts:
                    leaves.append(inner)
                else:
                    walk(inner, depth + 1)
        walk(metric)
        absent = [m for m in leaves if not self._reported(company, m)]
        years = self.store.fiscal_years(company.cik)
        if not absent or not years:
            return None
        lines = " or ".join(m.label.lower() for m in absent)
        return (f"{metric.label} is not a useful metric for {company.name} on its own "
                f"statements: they report no {lines} line in any year the facts hold "
                f"(FY{years[0]}–FY{years[-1]}); the measure does not apply to them.")

    def _reported(self, company: FactCompany, metric: Metric, depth: int = 0) -> bool:
        """Whether the company reports the metric's line in a year the facts hold, or every
        input of its formula, from which it is derived (gross profit: revenue and cost of
        revenue)."""
        if metric.concepts and self._years(company, metric):
            return True
        if not metric.formula or depth >= _FORMULA_DEPTH:
            return False
        inputs = [self.concepts.metrics.get(k) for k in metric.formula_names]
        return all(m is not None and self._reported(company, m, depth + 1) for m in inputs)

    def _display(self, key: str) -> str | None:
        metric = self.concepts.metrics.get(key)
        return metric.display if metric else None

    # periods ------------------------------------------------------------------------------
    def periods_for(self, company: FactCompany, q: FactQuery,
                    metric: Metric | None) -> tuple[list[tuple[int, int | None]], str]:
        """The (fiscal year, quarter) pairs the question asks of this company, oldest first,
        and a note when the period was not given (the latest year answers)."""
        fye, week = company.fiscal_year_end, company.week_based
        periods = [p for p in q.periods if p[0] is not None]
        loose_quarters = [qq for y, qq in q.periods if y is None and qq]
        for d in q.dates:
            periods.append(date_period(d, fye, week))
        for y in q.calendar_years:
            periods.append((fiscal_year_of_calendar_year(y, fye), None))
        years = self._years(company, metric)
        note = ""
        if q.last_n:
            n, unit = q.last_n
            if unit.startswith("year"):
                periods = [(y, None) for y in years[-n:]]
            else:
                periods = self._last_quarters(company, metric, n)
            note = f"the last {n} {unit} in the facts"
        elif not periods and years:
            latest = years[-1]
            periods = [(latest, qq) for qq in loose_quarters] or [(latest, None)]
            note = f"no period named: the latest fiscal year in the facts, FY{latest}"
        periods = sorted(set(periods), key=lambda p: (p[0], p[1] or 5))
        return periods, note

    def _years(self, company: FactCompany, metric: Metric | None) -> list[int]:
        if metric is None or not metric.concepts:
            return self.store.fiscal_years(company.cik)
        kinds = ("instant",) if metric.kind == "stock" else ("FY",)
        rows = self.store.lookup(company.cik, [*metric.concepts, table_concept(metric)],
                                 periods=kinds,
                                 fiscal_quarter=4 if metric.kind == "stock" else None)
        return sorted({r.fiscal_year for r in rows if r.form.startswith("10-K")})

    def _last_quarters(self, company, metric, n) -> list[tuple[int, int | None]]:
        if metric is None or not metric.concepts:
            return []
        kinds = ("instant",) if metric.kind == "stock" else ("Q",)
        rows = self.store.lookup(company.cik, list(metric.concepts), periods=kinds)
        quarters = sorted({(r.fiscal_year, r.fiscal_quarter) for r in rows})
        return quarters[-n:]

    # the routes ---------------------------------------------------------------------------
    def answer(self, q: FactQuery, companies: list[FactCompany]) -> FactsResult:
        if q.route == "full_statement":
            return self._statement(q, companies)
        lines, values, missing, requested, verdicts = [], [], [], 0, []
        metrics = q.metrics or []
        for company in companies:
            for metric in metrics:
                periods, note = self.periods_for(company, q, metric)
                if q.trend is not None:
                    periods = q.trend.periods(periods)
                if q.average and q.span and len(periods) == 1:  # "the 3-year average as of FY2019"
                    year, quarter = periods[0]
                    periods = [(year - back, quarter) for back in range(q.span - 1, -1, -1)]
                if not periods:
                    missing.append(f"{company.name}: no {metric.label.lower()} in the facts")
                    requested += 1
                    continue
                found: list[FactValue] = []
                if q.cagr:
                    requested += 1
                    v, why, said_instead = self._cagr(company, metric, periods, q)
                    found = [v] if v is not None else []
                    if why:
                        missing.append(f"{company.name}: {why}")
                    if said_instead:  # the endpoints are in the facts; the rate is not defined
                        lines.append(f"{company.name}: {said_instead}")
                    metric = W.cagr_metric(metric, found[0].label if found else "")  # said as a rate
                else:
                    for year, quarter in periods:
                        requested += 1
                        v, why = self.value(company, metric, year, quarter)
                        if v is None:
                            missing.append(f"{company.name}: {why}")
                        else:
                            found.append(v)
                series = q.route == "timeseries" and not q.cagr
                if q.average and len(periods) > 1:
                    if len(found) < len(periods):  # a mean of some of the years is not asked
                        found = []
                    else:
                        found, series = [W.mean(found, metric, self._display(metric.key))], False
                values += found
                lines += W.describe(company, metric, found, note, series=series, request=q.unit)
                def shown(v, metric=metric):
                    return (in_requested_unit(v.value, v.unit, q.unit, metric.display)
                            or W.num(v.value, v.unit, display=metric.display))
                said = None
                if q.judgement is not None and found:
                    last = found[-1]
                    when = (f"Q{last.fiscal_quarter} FY{last.fiscal_year}"
                            if last.fiscal_quarter not in (None, 4) else f"FY{last.fiscal_year}")
                    said = judged(q.judgement, metric, last, shown, when)
                elif q.judgement is not None:
                    said = (f"Cannot judge: the facts hold no {metric.label[0].lower()}"
                            f"{metric.label[1:]} for {company.name} in the period asked; a "
                            f"measure whose lines the company does not report may not be a "
                            f"meaningful one for it.")
                if q.trend is not None and found:
                    said = verdict(q.trend, metric, found, shown)
                if not found and q.asks_relevance:
                    said = self._unsupported_metric(company, metric) or said
                if said:
                    if len(companies) > 1:
                        said = f"{company.name}: {said}"
                    verdicts.append(said)
        if len(companies) > 1 and values:
            lines.append(W.calendars_line(companies))
            lines += W.comparison(values)
        if q.definition and values:
            lines.insert(0, f"As the question defines it: {q.definition}.")
        elif q.definition_error and values:
            lines.insert(0, f"The question's own definition does not read "
                            f"({q.definition_error}); the metric table's definition answers.")
        lines[:0] = verdicts  # the verdict first: the answer opens with it
        text = "\n".join(lines)
        if missing:
            text += ("\n" if text else "") + W.not_in(companies) + "; ".join(missing) + "."
        return FactsResult(q.route, text.strip(), values, missing, requested, verdicts)

    def _statement(self, q: FactQuery, companies: list[FactCompany]) -> FactsResult:
        name = q.statement or "income"
        lines, values, missing, requested = [], [], [], 0
        for company in companies:
            metrics = self.concepts.statement(name)
            anchor = metrics[0] if metrics else None
            periods, note = self.periods_for(company, q, anchor)
            for year, quarter in periods[-1:] if not q.periods else periods:
                got = []
                for metric in metrics:  # the lines the company reports (no formula lines)
                    v, _ = self.value(company, metric, year, quarter, depth=_FORMULA_DEPTH)
                    if v is not None:
                        got.append(v)
                requested += 1
                if not got:
                    missing.append(f"{company.name}: no {name.replace('_', ' ')} statement lines "
                                   f"for {W.period_words(year, quarter)}")
                    continue
                title = {"income": "Income statement", "balance": "Balance sheet",
                         "cash_flow": "Cash flow statement"}[name]
                lines.append(f"{company.name} — {title}, {got[0].period_label}"
                             + (f" [{note}]" if note else "") + ":")
                lines += [f"- {v.label}: {W.num(v.value, v.unit)}"
                          + (f" (derived: {v.formula})" if v.derived else "")
                          + f" [{v.concept}]" for v in got]
                lines.append(f"  Source: {got[0].form} filed {got[0].filed}"
                             + (f", {got[0].url}" if got[0].url else ""))
                values += got
        text = "\n".join(lines)
        if missing:
            text += ("\n" if text else "") + W.not_in(companies) + "; ".join(missing) + "."
        return FactsResult("full_statement", text.strip(), values, missing, requested)
