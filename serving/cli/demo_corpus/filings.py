"""The filings of the corpus: which exist, their wording context, and their 10-K/10-Q text."""

from __future__ import annotations

import calendar
import random
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from finrag.serving.cli.demo_corpus.companies import (COMPANIES, COMPANY_BY_KEY, FISCAL_YEARS, PROFILES,
                                               QUARTERLY_FILINGS, Company, _long_date,
                                               _weekday_on_or_after, fiscal_quarter_end,
                                               fiscal_year_end)
from finrag.serving.cli.demo_corpus.figures import (IncomeStatement, _cell, _change, _operating_data,
                                             _usd, quarter_statement)
from finrag.serving.cli.demo_corpus.layout import (Block, Fact, PageBreak, StatementTable, Text, TocEntry,
                                            _Layout, _paint)
from finrag.serving.cli.demo_corpus.wording import (COMMON, COMMON_RISKS, INDUSTRY_RISKS, ITEM_5, ITEM_9,
                                             ITEM_9C, MARKET_RISK, MDNA, PART_III, QUARTER_WORDS,
                                             RISK_CLOSERS, RISK_GROUPS, WORDING)


@dataclass(frozen=True)
class Filing:
    company: Company
    doc_type: str  # "10-K" | "10-Q"
    fiscal_year: int
    fiscal_quarter: int | None
    period_end: date
    filing_date: date

    @property
    def doc_id(self) -> str:
        if self.fiscal_quarter:
            return f"{self.company.key}_{self.fiscal_year}Q{self.fiscal_quarter}_10Q"
        return f"{self.company.key}_{self.fiscal_year}_10K"

    @property
    def legal_name(self) -> str:
        return self.company.legal_name(self.filing_date)

    def metadata(self) -> dict[str, Any]:
        c = self.company
        return {
            "doc_id": self.doc_id, "company": c.name, "ticker": c.ticker, "aliases": c.aliases,
            "doc_type": self.doc_type, "fiscal_year": self.fiscal_year,
            "fiscal_quarter": self.fiscal_quarter, "period_end": self.period_end.isoformat(),
            "filing_date": self.filing_date.isoformat(), "sector": c.sector,
            "fiscal_year_end": f"{c.fye_month:02d}-{calendar.monthrange(2001, c.fye_month)[1]:02d}",
        }


def plan_filings(seed: int) -> list[Filing]:
    filings = []
    for company in COMPANIES:
        rng = random.Random(f"{seed}:{company.key}:filing-dates")
        for year in FISCAL_YEARS:
            end = fiscal_year_end(company, year)
            filed = _weekday_on_or_after(end + timedelta(days=rng.randint(44, 57)))
            filings.append(Filing(company, "10-K", year, None, end, filed))
    for key, year, quarter in QUARTERLY_FILINGS:
        company = COMPANY_BY_KEY[key]
        end = fiscal_quarter_end(company, year, quarter)
        filed = _weekday_on_or_after(end + timedelta(days=random.Random(f"{seed}:{key}:q").randint(32, 39)))
        filings.append(Filing(company, "10-Q", year, quarter, end, filed))
    return sorted(filings, key=lambda f: f.doc_id)


class _Writer:
    """Builds the blocks of one filing, picking wording variants with the filing's own RNG."""

    def __init__(self, filing: Filing, cur: IncomeStatement, prev: IncomeStatement,
                 ctx: dict[str, Any], rng: random.Random) -> None:
        self.filing = filing
        self.cur, self.prev = cur, prev
        self.ctx = ctx
        self.rng = rng
        self.words = WORDING[filing.company.industry]
        self.blocks: list[Block] = []
        self.toc: list[Block] = []

    # -- primitives ---------------------------------------------------------------------------
    def fill(self, template: str) -> str:
        return template.format_map(self.ctx)

    def pick(self, variants: tuple[str, ...] | str) -> str:
        return self.fill(variants if isinstance(variants, str) else self.rng.choice(variants))

    def add(self, text: str, style: str = "body", facts: list[Fact] | None = None) -> Text:
        block = Text(text, style, facts or [])
        self.blocks.append(block)
        return block

    def para(self, key: str, pool: dict[str, Any] | None = None) -> None:
        self.add(self.pick((pool or self.words)[key]))

    def part(self, title: str) -> None:
        self.add(title, "part")
        self.toc.append(Text(title, "toc_part"))

    def item(self, label: str, title: str) -> None:
        block = self.add(f"{label} {title}".strip(), "item")
        self.toc.append(TocEntry(label, title, block))

    def fact(self, metric: str, value: int | float, text: str, source: str = "text") -> Fact:
        unit = "USD" if metric.endswith("eps") else "USD millions"
        return Fact(metric, value, unit, text, self.filing.fiscal_year, self.filing.fiscal_quarter, source)

    # -- shared sections ----------------------------------------------------------------------
    def forward_looking(self) -> None:
        self.add("SPECIAL NOTE REGARDING FORWARD-LOOKING STATEMENTS", "sub")
        self.para("fls", COMMON)
        self.para("fls_risk", COMMON)

    def risk_factors(self) -> None:
        self.para("risk_intro", COMMON)
        for heading, keys in RISK_GROUPS:
            self.add(heading, "sub")
            for key in keys:
                risks = INDUSTRY_RISKS[self.filing.company.industry] if key == "industry" else (COMMON_RISKS[key],)
                for title, body in risks:
                    self.add(self.fill(title), "risk")
                    closer = self.rng.choice(RISK_CLOSERS) if self.rng.random() < 0.5 else ""
                    self.add(f"{self.fill(body)} {closer}".strip())

    def income_table(self, header: tuple[str, str, str]) -> None:
        cur, prev = self.cur, self.prev
        rows = [
            ("Revenue", _cell(cur.revenue, True), _cell(prev.revenue, True), "revenue", cur.revenue),
            ("Cost of revenue", _cell(cur.cost_of_revenue), _cell(prev.cost_of_revenue),
             "cost of revenue", cur.cost_of_revenue),
            ("Gross profit", _cell(cur.gross_profit), _cell(prev.gross_profit), "gross profit", cur.gross_profit),
            ("Research and development", _cell(cur.research_development), _cell(prev.research_development),
             "research and development", cur.research_development),
            ("Selling, general and administrative", _cell(cur.sga), _cell(prev.sga),
             "selling, general and administrative", cur.sga),
            ("Total operating expenses", _cell(cur.operating_expenses), _cell(prev.operating_expenses), "", 0),
            ("Operating income", _cell(cur.operating_income), _cell(prev.operating_income),
             "operating income", cur.operating_income),
            ("Other income (expense), net", _cell(cur.other_income), _cell(prev.other_income), "", 0),
            ("Income before income taxes", _cell(cur.pretax_income), _cell(prev.pretax_income), "", 0),
            ("Provision for income taxes", _cell(cur.income_tax), _cell(prev.income_tax), "", 0),
            ("Net income", _cell(cur.net_income, True), _cell(prev.net_income, True), "net income", cur.net_income),
            ("Basic net income per share", f"${cur.basic_eps:.2f}", f"${prev.basic_eps:.2f}", "", 0),
            ("Diluted net income per share", f"${cur.diluted_eps:.2f}", f"${prev.diluted_eps:.2f}",
             "diluted eps", cur.diluted_eps),
            ("Basic weighted-average shares", f"{cur.basic_shares:.1f}", f"{prev.basic_shares:.1f}", "", 0),
            ("Diluted weighted-average shares", f"{cur.diluted_shares:.1f}", f"{prev.diluted_shares:.1f}", "", 0),
        ]
        facts = [self.fact(metric, value, " ".join(r[:3]), "table") for *r, metric, value in rows if metric]
        self.blocks.append(StatementTable(header, [tuple(r[:3]) for r in rows], facts))

    def results(self, cur_label: str, prev_label: str) -> None:
        """The narrative comparison of the two periods; each figure sentence becomes a fact."""
        cur, prev, pick = self.cur, self.prev, self.rng.choice
        direction, rate = _change(cur.revenue, prev.revenue)
        revenue = pick((
            f"Total revenue {direction} {rate} to {_usd(cur.revenue)} million in {cur_label}, compared "
            f"with {_usd(prev.revenue)} million in {prev_label}.",
            f"Total revenue for {cur_label} was {_usd(cur.revenue)} million, "
            f"{'an increase' if direction == 'increased' else 'a decrease'} of {rate} from "
            f"{_usd(prev.revenue)} million in {prev_label}.",
        ))
        driver = self.pick(self.words["revenue_up" if direction == "increased" else "revenue_down"])
        self.add("Revenue", "sub")
        self.add(f"{revenue} {driver}", facts=[self.fact("revenue", cur.revenue, revenue)])

        gross = (f"Gross profit was {_usd(cur.gross_profit)} million in {cur_label}, compared with "
                 f"{_usd(prev.gross_profit)} million in {prev_label}, and gross margin was "
                 f"{cur.gross_margin:.1f}% compared with {prev.gross_margin:.1f}%.")
        margin = self.pick(self.words["margin_up" if cur.gross_margin >= prev.gross_margin else "margin_down"])
        self.add("Cost of Revenue and Gross Margin", "sub")
        self.add(f"{gross} {margin}", facts=[self.fact("gross profit", cur.gross_profit, gross)])

        self.add("Operating Expenses", "sub")
        for metric, label, now, before, key in (
            ("research and development", "Research and development expense", cur.research_development,
             prev.research_development, "rd_driver"),
            ("selling, general and administrative", "Selling, general and administrative expense", cur.sga,
             prev.sga, "sga_driver"),
        ):
            sentence = (f"{label} was {_usd(now)} million, or {100 * now / cur.revenue:.1f}% of revenue, in "
                        f"{cur_label}, compared with {_usd(before)} million, or "
                        f"{100 * before / prev.revenue:.1f}% of revenue, in {prev_label}.")
            self.add(f"{sentence} {self.pick(self.words[key])}", facts=[self.fact(metric, now, sentence)])

        operating = (f"Operating income was {_usd(cur.operating_income)} million in {cur_label}, or "
                     f"{cur.operating_margin:.1f}% of revenue, compared with {_usd(prev.operating_income)} "
                     f"million, or {prev.operating_margin:.1f}% of revenue, in {prev_label}.")
        self.add("Operating Income", "sub")
        self.add(operating, facts=[self.fact("operating income", cur.operating_income, operating)])

        self.add("Other Income (Expense), Net and Income Taxes", "sub")
        other = "income" if cur.other_income >= 0 else "expense"
        self.add(f"Other {other}, net, was {_usd(abs(cur.other_income))} million in {cur_label}, consisting "
                 f"primarily of interest income on our cash and investments, net of interest expense and "
                 f"foreign exchange gains and losses. Our effective tax rate was {cur.tax_rate:.1f}% in "
                 f"{cur_label} compared with {prev.tax_rate:.1f}% in {prev_label}, reflecting changes in the "
                 f"geographic mix of earnings, research tax credits and excess tax benefits from "
                 f"stock-based compensation.")

        net = pick((
            f"Net income was {_usd(cur.net_income)} million, or ${cur.diluted_eps:.2f} per diluted share, in "
            f"{cur_label}, compared with {_usd(prev.net_income)} million, or ${prev.diluted_eps:.2f} per "
            f"diluted share, in {prev_label}.",
            f"In {cur_label}, net income was {_usd(cur.net_income)} million, or ${cur.diluted_eps:.2f} per "
            f"diluted share, compared with {_usd(prev.net_income)} million, or ${prev.diluted_eps:.2f} per "
            f"diluted share, in {prev_label}.",
        ))
        self.add("Net Income and Earnings per Share", "sub")
        self.add(net, facts=[self.fact("net income", cur.net_income, net),
                             self.fact("diluted eps", cur.diluted_eps, net)])

    def liquidity(self, period_words: str) -> None:
        c = self.ctx
        self.add("Liquidity and Capital Resources", "sub")
        self.add(self.fill(
            "As of {period_end}, we had cash, cash equivalents and marketable securities of {cash} million. "
            f"Net cash provided by operating activities was {{op_cash}} million in {period_words}, and "
            "capital expenditures were {capex} million, consisting primarily of investments in "
            "{capex_use}. We repurchased shares of our common stock for {buyback} million during the period."))
        self.add(self.fill(
            "We have a {revolver} million revolving credit facility that matures in {revolver_maturity}. "
            + ("Borrowings outstanding under our term loan and senior notes totaled {debt} million as of "
               "{period_end}, and we were in compliance with all covenants."
               if "debt" in c else
               "There were no borrowings outstanding under the facility as of {period_end}, and we were in "
               "compliance with all covenants.")))
        self.para("liquidity_outlook", COMMON)


def _context(filing: Filing, cur: IncomeStatement, prev: IncomeStatement, data: dict[str, Any],
             seed: int) -> dict[str, Any]:
    """Placeholder values for one filing's wording."""
    c = filing.company
    fy = filing.fiscal_year
    rng = random.Random(f"{seed}:{filing.doc_id}:context")
    ctx: dict[str, Any] = {
        "name": filing.legal_name, "short": c.short, "ticker": c.ticker, "exchange": c.exchange,
        "state": c.state, "hq_city": c.hq_city, "domain": c.domain, "founded": c.founded,
        "auditor": c.auditor, "ceo_name": c.ceo, "cfo_name": c.cfo,
        "p1": c.products[0], "p2": c.products[1], "p3": c.products[2],
        "fy": fy, "fy_prev": fy - 1, "fy_prev2": fy - 2,
        "fye_month_day": f"{fiscal_year_end(c, fy):%B} {fiscal_year_end(c, fy).day}",
        "fy_end": _long_date(fiscal_year_end(c, fy)), "fy_prev_end": _long_date(fiscal_year_end(c, fy - 1)),
        "fy_prev2_end": _long_date(fiscal_year_end(c, fy - 2)),
        "period_end": _long_date(filing.period_end), "filing_date": _long_date(filing.filing_date),
        "record_date": _long_date(filing.filing_date - timedelta(days=rng.randint(10, 20))),
        "proxy_year": filing.filing_date.year, "lease_end": fy + rng.randint(4, 9),
        "revolver": _usd(PROFILES[c.industry]["revolver"]), "revolver_maturity": fy + rng.randint(2, 5),
        "equity_plan": WORDING[c.industry]["equity_plan"],
        "capex_use": {"software": "data center equipment, capitalized software and office improvements",
                      "retail": "new stores, remodels, technology and distribution center automation",
                      "industrial": "manufacturing equipment, facility consolidation and information systems",
                      }[c.industry],
        "report": "Quarterly Report on Form 10-Q" if filing.fiscal_quarter else "Annual Report on Form 10-K",
        "risk_ref": "Part II, Item 1A" if filing.fiscal_quarter else "Part I, Item 1A",
        "dil_shares": f"{cur.diluted_shares:.1f}", "dil_shares_prev": f"{prev.diluted_shares:.1f}",
        "former": c.former_name or "", "renamed_on": _long_date(c.renamed_on) if c.renamed_on else "",
    }
    for key, value in data.items():
        if key in ("cash", "op_cash", "capex", "buyback", "arr", "orders", "backlog", "debt"):
            ctx[key] = _usd(int(value))
        elif isinstance(value, int):
            ctx[key] = f"{value:,}"
        else:
            ctx[key] = value
    if "stores" in data:
        comp = 100 * (cur.revenue - prev.revenue) / prev.revenue - rng.uniform(0.4, 1.4)
        ctx["comp_phrase"] = f"comparable sales {'increased' if comp >= 0 else 'decreased'} {abs(comp):.1f}%"
    return ctx


# -- 10-K --------------------------------------------------------------------------------------


def _ten_k_body(w: _Writer) -> None:
    f, words = w.filing, w.words
    fy = f.fiscal_year
    w.forward_looking()
    w.part("PART I")
    w.item("Item 1.", "Business")
    w.add("Overview", "sub")
    w.para("overview")
    if f.company.former_name and f.legal_name == f.company.name:
        w.para("rename")
    w.para("strategy")
    w.para("fiscal_note", COMMON)
    for heading, keys in words["business_outline"]:
        w.add(heading, "sub")
        for key in keys:
            w.para(key)
    w.add("Human Capital", "sub")
    w.para("workforce")
    w.para("human_capital", COMMON)
    w.add("Available Information", "sub")
    w.para("available_info", COMMON)

    w.item("Item 1A.", "Risk Factors")
    w.risk_factors()
    w.item("Item 1B.", "Unresolved Staff Comments")
    w.add("None.")
    w.item("Item 1C.", "Cybersecurity")
    w.para("cyber_program", COMMON)
    w.para("cyber_governance", COMMON)
    w.item("Item 2.", "Properties")
    w.para("properties")
    w.item("Item 3.", "Legal Proceedings")
    w.para("legal", COMMON)
    w.item("Item 4.", "Mine Safety Disclosures")
    w.add("Not applicable.")

    w.part("PART II")
    w.item("Item 5.", ITEM_5)
    w.para("market", COMMON)
    w.para("dividends")
    w.para("repurchases", COMMON)
    w.item("Item 6.", "[Reserved]")
    w.item("Item 7.", MDNA)
    w.add("Overview", "sub")
    w.para("mdna_overview")
    w.para("key_metrics")
    w.add("Results of Operations", "sub")
    w.para("results_intro", COMMON)
    w.results(f"fiscal {fy}", f"fiscal {fy - 1}")
    w.liquidity(f"fiscal {fy}")
    w.add("Critical Accounting Estimates", "sub")
    w.para("critical_intro", COMMON)
    for text in words["critical"]:
        w.add(w.fill(text))
    w.para("critical_taxes", COMMON)
    w.item("Item 7A.", MARKET_RISK)
    w.para("interest_risk")
    w.para("fx_risk", COMMON)

    w.item("Item 8.", "Financial Statements and Supplementary Data")
    w.para("statements_intro", COMMON)
    w.add(f"{f.legal_name.upper()} CONSOLIDATED STATEMENTS OF OPERATIONS", "caption")
    w.add(f"(In millions, except per share data; fiscal years ended {w.ctx['fye_month_day']})", "caption_note")
    w.income_table(("(In millions, except per share data)", f"Fiscal {fy}", f"Fiscal {fy - 1}"))
    _notes(w, f"fiscal {fy}", f"fiscal {fy - 1}", annual=True)

    w.item("Item 9.", ITEM_9)
    w.add("None.")
    w.item("Item 9A.", "Controls and Procedures")
    w.para("controls", COMMON)
    w.para("icfr", COMMON)
    w.para("controls_change", COMMON)
    w.item("Item 9B.", "Other Information")
    w.para("trading_plans", COMMON)
    w.item("Item 9C.", ITEM_9C)
    w.add("Not applicable.")

    w.part("PART III")
    for label, title in PART_III:
        w.item(label, title)
        if label == "Item 10.":
            w.para("proxy", COMMON)
            w.para("code_of_conduct", COMMON)
        else:
            w.para("proxy_short", COMMON)
    w.part("PART IV")
    w.item("Item 15.", "Exhibits and Financial Statement Schedules")
    w.para("exhibits", COMMON)
    w.item("Item 16.", "Form 10-K Summary")
    w.add("None.")
    w.item("", "Signatures")
    w.para("signatures", COMMON)


def _notes(w: _Writer, cur_label: str, prev_label: str, annual: bool) -> None:
    w.ctx.update(cur_label=cur_label, prev_label=prev_label)
    cur, prev = w.cur, w.prev
    w.add("Notes to Consolidated Financial Statements" if annual else
          "Notes to Condensed Consolidated Financial Statements (Unaudited)", "sub")
    w.add("Note 1. Description of Business and Basis of Presentation", "sub")
    w.para("note_basis", COMMON)
    if not annual:
        w.add(w.fill(
            "These unaudited interim financial statements should be read in conjunction with the audited "
            "consolidated financial statements in our Annual Report on Form 10-K for the fiscal year ended "
            "{fy_prev_end}. In the opinion of management, they include all adjustments necessary for a fair "
            "statement of the results for the interim period. Results for the {qlabel} are not necessarily "
            "indicative of the results to be expected for the fiscal year ending {fy_end}."))
    w.add("Note 2. Revenue", "sub")
    w.para("revenue_policy")
    w.add("Note 3. Income Taxes", "sub")
    w.add(f"The provision for income taxes was {_usd(cur.income_tax)} million in {cur_label} and "
          f"{_usd(prev.income_tax)} million in {prev_label}, representing effective tax rates of "
          f"{cur.tax_rate:.1f}% and {prev.tax_rate:.1f}%, respectively. The effective tax rate differs "
          f"from the U.S. federal statutory rate of 21% primarily because of state income taxes, the "
          f"foreign rate differential, research tax credits and excess tax benefits from stock-based "
          f"compensation.")
    w.add("Note 4. Net Income per Share", "sub")
    w.para("note_eps", COMMON)


SECTION_13 = "PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934"


def _ten_k_cover(w: _Writer) -> list[Block]:
    f, c, ctx = w.filing, w.filing.company, w.ctx
    midyear = fiscal_quarter_end(c, f.fiscal_year, 2)
    shares = round(w.cur.basic_shares * 1e6 * w.rng.uniform(0.985, 1.0))
    market_value = w.cur.diluted_eps * w.rng.uniform(22, 34) * w.cur.basic_shares / 1000
    a_year_before = c.legal_name(f.filing_date - timedelta(days=366))
    renamed_since_last = f.legal_name != a_year_before
    blocks = [
        Text("UNITED STATES", "cover_bold"), Text("SECURITIES AND EXCHANGE COMMISSION", "cover_bold"),
        Text("Washington, D.C. 20549", "cover"), Text("FORM 10-K", "cover_form"),
        Text(f"[X] ANNUAL REPORT {SECTION_13}", "cover"),
        Text(f"Annual Report on Form 10-K for the fiscal year ended {ctx['period_end']}", "cover_bold"),
        Text("OR", "cover"),
        Text(f"[ ] TRANSITION REPORT {SECTION_13}", "cover"),
        Text(f"Commission File Number {c.file_number}", "cover"),
        Text(f.legal_name, "cover_name"),
        Text("(Exact name of registrant as specified in its charter)", "cover_note"),
    ]
    if renamed_since_last:
        blocks += [Text(a_year_before, "cover"), Text("(Former name, if changed since last report)", "cover_note")]
    blocks += [
        Text(f"{c.state} | I.R.S. Employer Identification No. {c.ein}", "cover"),
        Text("(State or other jurisdiction of incorporation or organization)", "cover_note"),
        Text(c.hq, "cover"), Text("(Address of principal executive offices, including zip code)", "cover_note"),
        Text(f"Registrant's telephone number, including area code: {c.phone}", "cover"),
        Text("Securities registered pursuant to Section 12(b) of the Act:", "cover_bold"),
        Text(f"Title of each class: Common Stock, par value $0.01 per share | Trading symbol: {c.ticker} | "
             f"Name of each exchange on which registered: {c.exchange}", "cover"),
        Text("Indicate by check mark if the registrant is a well-known seasoned issuer, as defined in Rule "
             "405 of the Securities Act. Yes [X] No [ ]. Indicate by check mark whether the registrant (1) "
             "has filed all reports required to be filed by Section 13 or 15(d) of the Securities Exchange "
             "Act of 1934 during the preceding 12 months and (2) has been subject to such filing "
             "requirements for the past 90 days. Yes [X] No [ ]. Large accelerated filer [X] Accelerated "
             "filer [ ] Non-accelerated filer [ ] Smaller reporting company [ ] Emerging growth company [ ]. "
             "Indicate by check mark whether the registrant is a shell company. Yes [ ] No [X].", "cover_text"),
        Text(f"The aggregate market value of the registrant's common stock held by non-affiliates, based on "
             f"the closing price on {_long_date(midyear)}, the last business day of the registrant's most "
             f"recently completed second fiscal quarter, was approximately ${market_value:.1f} billion. As "
             f"of {ctx['record_date']}, the registrant had {shares:,} shares of common stock outstanding.",
             "cover_text"),
        Text("DOCUMENTS INCORPORATED BY REFERENCE", "cover_bold"),
        Text(f"Portions of the registrant's definitive proxy statement for its {ctx['proxy_year']} Annual "
             f"Meeting of Stockholders are incorporated by reference into Part III of this Annual Report on "
             f"Form 10-K.", "cover_text"),
    ]
    return blocks


# -- 10-Q --------------------------------------------------------------------------------------


def _ten_q_body(w: _Writer) -> None:
    f = w.filing
    cur_label, prev_label = w.ctx["qlabel"], w.ctx["qlabel_prev"]
    w.forward_looking()
    w.part("PART I - FINANCIAL INFORMATION")
    w.item("Item 1.", "Financial Statements")
    w.add(f"{f.legal_name.upper()} CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS", "caption")
    w.add(f"(Unaudited; in millions, except per share data; three months ended {w.ctx['period_end']} "
          f"and {w.ctx['prev_period_end']})", "caption_note")
    q = f.fiscal_quarter
    w.income_table(("(In millions, except per share data)", f"Q{q} fiscal {f.fiscal_year}",
                    f"Q{q} fiscal {f.fiscal_year - 1}"))
    _notes(w, cur_label, prev_label, annual=False)

    w.item("Item 2.", MDNA)
    w.add("Overview", "sub")
    w.para("mdna_overview")
    w.add(w.fill("Our fiscal year ends on {fye_month_day}. References to the {qlabel} are to the three "
                 "months ended {period_end}, and references to the {qlabel_prev} are to the three months "
                 "ended {prev_period_end}."))
    w.add("Results of Operations", "sub")
    w.results(cur_label, prev_label)
    w.liquidity(f"the {cur_label}")
    w.add("Critical Accounting Estimates", "sub")
    w.add(w.fill("There have been no material changes to our critical accounting estimates from those "
                 "described in our Annual Report on Form 10-K for the fiscal year ended {fy_prev_end}."))
    w.item("Item 3.", MARKET_RISK)
    w.add(w.fill("There have been no material changes in our market risk exposures from those described "
                 "in Part II, Item 7A of our Annual Report on Form 10-K for the fiscal year ended "
                 "{fy_prev_end}."))
    w.para("interest_risk")
    w.item("Item 4.", "Controls and Procedures")
    w.para("controls", COMMON)
    w.para("controls_change", COMMON)

    w.part("PART II - OTHER INFORMATION")
    w.item("Item 1.", "Legal Proceedings")
    w.para("legal", COMMON)
    w.item("Item 1A.", "Risk Factors")
    w.add(w.fill("The risk factors below supplement and update those described in Part I, Item 1A of our "
                 "Annual Report on Form 10-K for the fiscal year ended {fy_prev_end}. Except as described "
                 "below, there have been no material changes to those risk factors."))
    w.risk_factors()
    w.item("Item 2.", "Unregistered Sales of Equity Securities and Use of Proceeds")
    w.add(w.fill("During the {qlabel}, we repurchased shares of our common stock for {buyback} million "
                 "under our publicly announced repurchase program. We did not sell any unregistered equity "
                 "securities during the period."))
    w.item("Item 3.", "Defaults Upon Senior Securities")
    w.add("None.")
    w.item("Item 4.", "Mine Safety Disclosures")
    w.add("Not applicable.")
    w.item("Item 5.", "Other Information")
    w.para("trading_plans", COMMON)
    w.item("Item 6.", "Exhibits")
    w.add(w.fill("Exhibits 31.1 and 31.2, Certifications pursuant to Rule 13a-14(a); Exhibit 32.1, "
                 "Certification pursuant to 18 U.S.C. Section 1350; Exhibit 101, Inline XBRL documents; "
                 "Exhibit 104, Cover Page Interactive Data File."))
    w.item("", "Signatures")
    w.para("signatures", COMMON)


def _ten_q_cover(w: _Writer) -> list[Block]:
    f, c, ctx = w.filing, w.filing.company, w.ctx
    shares = round(w.cur.basic_shares * 1e6 * w.rng.uniform(0.985, 1.0))
    return [
        Text("UNITED STATES", "cover_bold"), Text("SECURITIES AND EXCHANGE COMMISSION", "cover_bold"),
        Text("Washington, D.C. 20549", "cover"), Text("FORM 10-Q", "cover_form"),
        Text(f"[X] QUARTERLY REPORT {SECTION_13}", "cover"),
        Text(f"Quarterly Report on Form 10-Q for the quarterly period ended {ctx['period_end']}", "cover_bold"),
        Text("OR", "cover"),
        Text(f"[ ] TRANSITION REPORT {SECTION_13}", "cover"),
        Text(f"Commission File Number {c.file_number}", "cover"),
        Text(f.legal_name, "cover_name"),
        Text("(Exact name of registrant as specified in its charter)", "cover_note"),
        Text(f"{c.state} | I.R.S. Employer Identification No. {c.ein}", "cover"),
        Text(c.hq, "cover"), Text("(Address of principal executive offices, including zip code)", "cover_note"),
        Text(f"Registrant's telephone number, including area code: {c.phone}", "cover"),
        Text(f"Title of each class: Common Stock, par value $0.01 per share | Trading symbol: {c.ticker} | "
             f"Name of each exchange on which registered: {c.exchange}", "cover"),
        Text("Indicate by check mark whether the registrant (1) has filed all reports required to be filed "
             "by Section 13 or 15(d) of the Securities Exchange Act of 1934 during the preceding 12 months "
             "and (2) has been subject to such filing requirements for the past 90 days. Yes [X] No [ ]. "
             "Large accelerated filer [X] Accelerated filer [ ] Non-accelerated filer [ ] Smaller reporting "
             "company [ ] Emerging growth company [ ].", "cover_text"),
        Text(f"As of {ctx['record_date']}, the registrant had {shares:,} shares of common stock outstanding.",
             "cover_text"),
    ]


# -- assembly ----------------------------------------------------------------------------------


def _toc_blocks(w: _Writer) -> list[Block]:
    return [Text("TABLE OF CONTENTS", "toc_title"), *w.toc]


def compose(filing: Filing, annual: dict[int, IncomeStatement], seed: int) -> _Writer:
    c, fy, q = filing.company, filing.fiscal_year, filing.fiscal_quarter
    if q:
        cur = quarter_statement(c, annual[fy], fy, q, seed)
        prev = quarter_statement(c, annual[fy - 1], fy - 1, q, seed)
        period = f"{fy}Q{q}"
    else:
        cur, prev, period = annual[fy], annual[fy - 1], str(fy)
    data = _operating_data(c, cur, period, seed)
    ctx = _context(filing, cur, prev, data, seed)
    if q:
        ctx.update(qlabel=f"{QUARTER_WORDS[q]} quarter of fiscal {fy}",
                   qlabel_prev=f"{QUARTER_WORDS[q]} quarter of fiscal {fy - 1}",
                   prev_period_end=_long_date(fiscal_quarter_end(c, fy - 1, q)))
    w = _Writer(filing, cur, prev, ctx, random.Random(f"{seed}:{filing.doc_id}:wording"))
    if q:
        cover = _ten_q_cover(w)
        _ten_q_body(w)
    else:
        cover = _ten_k_cover(w)
        _ten_k_body(w)
    w.blocks = cover + [PageBreak()] + _toc_blocks(w) + [PageBreak()] + w.blocks
    return w


def render_filing(filing: Filing, annual: dict[int, IncomeStatement], seed: int) -> tuple[bytes, list[Fact], int]:
    """PDF bytes, the facts with their pages, and the page count of one filing."""
    w = compose(filing, annual, seed)
    pages = _Layout().run(w.blocks)
    facts = []
    for block in w.blocks:
        for fact in getattr(block, "facts", []):
            fact.page = block.page
            facts.append(fact)
    stamp = f"D:{filing.filing_date:%Y%m%d}090000Z"
    title = (f"{filing.legal_name} Form {filing.doc_type} for the period ended {_long_date(filing.period_end)}")
    metadata = {"title": title, "author": filing.legal_name, "subject": f"Form {filing.doc_type}",
                "keywords": f"{filing.company.ticker}, {filing.doc_id}", "creator": "finrag demo corpus",
                "producer": "finrag demo corpus", "creationDate": stamp, "modDate": stamp}
    return _paint(pages, metadata), facts, len(pages)
