"""The text templates of the filings: shared boilerplate, risk factors and item titles; the
per-industry wording is in ``industries``.

Each entry is a tuple of variants; a filing picks one with its own seeded RNG, so filings share
wording without being identical. Placeholders are filled from the filing's context.
"""

from __future__ import annotations

from finrag.serving.cli.demo_corpus.industries import INDUSTRIAL, RETAIL, SOFTWARE

COMMON: dict[str, tuple[str, ...]] = {
    "fls": (
        "This {report} contains forward-looking statements within the meaning of Section 27A of the "
        "Securities Act of 1933, as amended, and Section 21E of the Securities Exchange Act of 1934, as "
        "amended (the \"Exchange Act\"). All statements other than statements of historical fact are "
        "forward-looking statements, including statements regarding our future results of operations "
        "and financial position, business strategy, expected demand for our products, planned "
        "investments, and the plans and objectives of management for future operations. Words such as "
        "\"anticipate,\" \"believe,\" \"continue,\" \"could,\" \"estimate,\" \"expect,\" \"intend,\" \"may,\" "
        "\"plan,\" \"project,\" \"should\" and \"will\" are intended to identify forward-looking statements, "
        "although not all forward-looking statements contain these words.",
        "Statements in this {report} that are not historical facts are forward-looking statements within "
        "the meaning of the Private Securities Litigation Reform Act of 1995. These statements relate to, "
        "among other things, our expectations about revenue, margins, operating expenses, capital "
        "allocation, the demand environment and the effect of economic conditions on our customers. "
        "Forward-looking statements can often be identified by terms such as \"aim,\" \"anticipate,\" "
        "\"believe,\" \"estimate,\" \"expect,\" \"forecast,\" \"intend,\" \"outlook,\" \"plan,\" \"target\" and "
        "similar expressions.",
    ),
    "fls_risk": (
        "Forward-looking statements are based on management's current expectations and assumptions and "
        "are subject to risks and uncertainties that could cause actual results to differ materially, "
        "including those described in {risk_ref}, \"Risk Factors.\" You should not place undue reliance on "
        "forward-looking statements, which speak only as of the date of this report. Except as required "
        "by law, {short} undertakes no obligation to update any forward-looking statement to reflect "
        "events or circumstances after the date of this report.",
        "Actual results may differ materially from those expressed or implied by forward-looking "
        "statements because of the risks and uncertainties described in {risk_ref}, \"Risk Factors,\" and "
        "elsewhere in this report. Forward-looking statements reflect our views only as of the date they "
        "are made, and we assume no obligation to revise or update them, whether as a result of new "
        "information, future events or otherwise, except as required by law.",
    ),
    "fiscal_note": (
        "Our fiscal year ends on {fye_month_day}. Unless otherwise stated, references to fiscal {fy}, "
        "fiscal {fy_prev} and fiscal {fy_prev2} refer to the fiscal years ended {fy_end}, {fy_prev_end} "
        "and {fy_prev2_end}, respectively. Amounts in this report are in millions of U.S. dollars unless "
        "otherwise noted, and percentages are calculated from the underlying whole-dollar amounts.",
        "{short} reports on a fiscal year ending {fye_month_day}. In this report, \"fiscal {fy}\" means "
        "the fiscal year ended {fy_end}, \"fiscal {fy_prev}\" means the fiscal year ended {fy_prev_end} "
        "and \"fiscal {fy_prev2}\" means the fiscal year ended {fy_prev2_end}.",
    ),
    "human_capital": (
        "We believe that our success depends on our ability to attract, develop and retain talented "
        "people. We conduct an employee engagement survey each year and review the results with the "
        "Compensation Committee of our Board of Directors. Our compensation programs combine "
        "competitive base pay with annual incentives and, for many employees, equity awards.",
        "Attracting and retaining skilled employees is central to our strategy. The Compensation "
        "Committee of our Board of Directors oversees our human capital programs, including talent "
        "development, succession planning, pay and benefits. We measure employee engagement through an "
        "annual survey.",
    ),
    "available_info": (
        "Our website address is www.{domain}. Our Annual Reports on Form 10-K, Quarterly Reports on "
        "Form 10-Q, Current Reports on Form 8-K and amendments to those reports are available free of "
        "charge on our website as soon as reasonably practicable after we file them with the Securities "
        "and Exchange Commission (the \"SEC\"), and at www.sec.gov. Information on our website is not "
        "incorporated by reference into this report.",
    ),
    "risk_intro": (
        "Investing in our common stock involves a high degree of risk. You should carefully consider "
        "the risks and uncertainties described below, together with the other information in this "
        "{report}, including our consolidated financial statements and related notes, before making an "
        "investment decision. The risks described below are not the only ones we face; additional risks "
        "that we do not currently know about or that we currently believe to be immaterial may also "
        "impair our business.",
        "Our business, financial condition and results of operations are subject to a number of risks. "
        "The following discussion describes the risks that we believe are material to {short} and to "
        "holders of our common stock. These risks should be read together with Management's Discussion "
        "and Analysis of Financial Condition and Results of Operations and the consolidated financial "
        "statements and related notes in this {report}.",
    ),
    "cyber_program": (
        "Risk management and strategy. We maintain a cybersecurity program designed to identify, assess "
        "and manage material risks from cybersecurity threats. The program is integrated into our "
        "enterprise risk management process and is aligned with the NIST Cybersecurity Framework. It "
        "includes vulnerability management, security awareness training, penetration tests performed by "
        "third parties, assessments of the security practices of significant vendors, and an incident "
        "response plan that we test through tabletop exercises. As of the date of this report, we are "
        "not aware of any cybersecurity incident that has materially affected, or is reasonably likely "
        "to materially affect, our business strategy, results of operations or financial condition.",
    ),
    "cyber_governance": (
        "Governance. Our Chief Information Security Officer, who has more than twenty years of "
        "experience in information security, leads the program and reports to our Chief Financial "
        "Officer. The Audit Committee of our Board of Directors oversees risks from cybersecurity "
        "threats and receives reports from the Chief Information Security Officer at least quarterly, "
        "including on significant incidents, the results of assessments and the status of remediation "
        "efforts. The full Board receives an update on the program at least annually.",
        "Governance. Our cybersecurity program is led by our Chief Information Security Officer, who "
        "has held senior security roles at several public companies and reports to our Chief Financial "
        "Officer. Management reports on cybersecurity risk to the Audit Committee of the Board of "
        "Directors each quarter and to the full Board at least once a year, and significant incidents "
        "are escalated to the Audit Committee chair under our incident response plan.",
    ),
    "legal": (
        "From time to time we are involved in legal proceedings and claims arising in the ordinary "
        "course of business, including matters relating to commercial contracts, intellectual property, "
        "employment and product liability. Although the outcome of these matters cannot be predicted "
        "with certainty, we do not believe that the resolution of any pending matter will have a "
        "material adverse effect on our financial position, results of operations or cash flows.",
        "We are subject to various legal proceedings, claims and regulatory inquiries that arise in the "
        "ordinary course of our business. We record accruals for loss contingencies when it is probable "
        "that a liability has been incurred and the amount can be reasonably estimated. We do not "
        "believe that any currently pending proceeding will have a material adverse effect on our "
        "business, financial condition or results of operations.",
    ),
    "market": (
        "Our common stock is listed on the {exchange} under the symbol \"{ticker}.\" As of {record_date}, "
        "there were approximately {holders} holders of record of our common stock. Because many of our "
        "shares are held by brokers and other institutions on behalf of stockholders, we are unable to "
        "estimate the total number of beneficial owners represented by these holders of record.",
    ),
    "repurchases": (
        "Our Board of Directors has authorized a program to repurchase shares of our common stock in "
        "the open market or in privately negotiated transactions. During fiscal {fy}, we repurchased "
        "shares for an aggregate of {buyback} million. The timing and amount of repurchases depend on "
        "market conditions, our cash position and other considerations, and the program may be "
        "suspended or discontinued at any time.",
    ),
    "results_intro": (
        "The following discussion compares our results for fiscal {fy} with fiscal {fy_prev}. A "
        "discussion of fiscal {fy_prev} compared with fiscal {fy_prev2} is included in Part II, Item 7 of "
        "our Annual Report on Form 10-K for fiscal {fy_prev}.",
        "This section discusses our results of operations for fiscal {fy} compared with fiscal {fy_prev}. "
        "For a comparison of fiscal {fy_prev} with fiscal {fy_prev2}, see Item 7 of our Annual Report on "
        "Form 10-K for the fiscal year ended {fy_prev_end}.",
    ),
    "liquidity_outlook": (
        "We believe that our existing cash, cash equivalents and marketable securities, together with "
        "cash provided by operations and amounts available under our revolving credit facility, will be "
        "sufficient to meet our working capital, capital expenditure and other liquidity requirements "
        "for at least the next twelve months and for the foreseeable future thereafter.",
        "Our principal sources of liquidity are cash generated from operations, our cash and "
        "investment balances and our revolving credit facility. We expect these sources to be adequate "
        "to fund our operations, planned capital expenditures, share repurchases and other commitments "
        "over the next twelve months and beyond.",
    ),
    "critical_intro": (
        "The preparation of financial statements in conformity with U.S. generally accepted accounting "
        "principles (\"GAAP\") requires management to make estimates and assumptions that affect the "
        "reported amounts of assets, liabilities, revenue and expenses. We base our estimates on "
        "historical experience and on other assumptions that we believe are reasonable, and actual "
        "results may differ from these estimates. The estimates described below are those that we "
        "believe require the most significant judgment.",
    ),
    "critical_taxes": (
        "Income taxes. We are subject to income taxes in the United States and in foreign "
        "jurisdictions, and significant judgment is required in determining our worldwide provision "
        "for income taxes, evaluating uncertain tax positions and assessing whether deferred tax assets "
        "will be realized. We recognize the tax benefit of an uncertain position only if it is more "
        "likely than not to be sustained on examination by the taxing authorities.",
    ),
    "fx_risk": (
        "Foreign currency risk. A portion of our revenue and operating expenses is denominated in "
        "currencies other than the U.S. dollar, principally the euro, the British pound and the Canadian "
        "dollar. We enter into foreign currency forward contracts from time to time to reduce the "
        "effect of exchange rate changes on certain balance sheet exposures. A hypothetical 10% change "
        "in foreign currency exchange rates would not have had a material effect on our operating "
        "income for fiscal {fy}.",
        "Foreign currency exchange risk. Our international subsidiaries generally use their local "
        "currency as their functional currency, and we are therefore exposed to changes in exchange "
        "rates when we translate their results into U.S. dollars. We do not currently hedge this "
        "translation exposure. We estimate that a 10% adverse change in exchange rates would not have "
        "had a material effect on our results of operations for fiscal {fy}.",
    ),
    "statements_intro": (
        "The following consolidated statements of operations have been audited by {auditor}, our "
        "independent registered public accounting firm.",
    ),
    "note_basis": (
        "{name} and its wholly owned subsidiaries (collectively, \"{short}\" or the \"Company\") prepare "
        "consolidated financial statements in accordance with GAAP. All intercompany balances and "
        "transactions have been eliminated in consolidation. Certain prior-year amounts have been "
        "reclassified to conform to the current-year presentation.",
        "The consolidated financial statements include the accounts of {name} and its wholly owned "
        "subsidiaries and have been prepared in accordance with GAAP. Intercompany transactions and "
        "balances have been eliminated. Preparing financial statements requires management to make "
        "estimates and assumptions that affect the amounts reported, and actual results could differ.",
    ),
    "note_eps": (
        "Basic net income per share is computed by dividing net income by the weighted-average number "
        "of shares of common stock outstanding during the period. Diluted net income per share also "
        "reflects the potential dilution from stock options, restricted stock units and shares issuable "
        "under our employee stock purchase plan, computed using the treasury stock method. "
        "Weighted-average diluted shares outstanding were {dil_shares} million in {cur_label}, compared "
        "with {dil_shares_prev} million in {prev_label}.",
    ),
    "controls": (
        "Evaluation of disclosure controls and procedures. Our management, with the participation of "
        "our Chief Executive Officer and Chief Financial Officer, evaluated the effectiveness of our "
        "disclosure controls and procedures, as defined in Rules 13a-15(e) and 15d-15(e) under the "
        "Exchange Act, as of the end of the period covered by this report. Based on that evaluation, "
        "our Chief Executive Officer and Chief Financial Officer concluded that our disclosure controls "
        "and procedures were effective at the reasonable assurance level as of {period_end}.",
    ),
    "icfr": (
        "Management's annual report on internal control over financial reporting. Management is "
        "responsible for establishing and maintaining adequate internal control over financial "
        "reporting. Under the supervision of our Chief Executive Officer and Chief Financial Officer, "
        "management assessed the effectiveness of our internal control over financial reporting as of "
        "{period_end} based on the criteria in Internal Control - Integrated Framework (2013) issued by "
        "the Committee of Sponsoring Organizations of the Treadway Commission, and concluded that it was "
        "effective. {auditor} has issued an attestation report on the effectiveness of our internal "
        "control over financial reporting.",
    ),
    "controls_change": (
        "Changes in internal control over financial reporting. There were no changes in our internal "
        "control over financial reporting during the quarter ended {period_end} that have materially "
        "affected, or are reasonably likely to materially affect, our internal control over financial "
        "reporting.",
    ),
    "trading_plans": (
        "During the three months ended {period_end}, none of our directors or officers adopted or "
        "terminated a \"Rule 10b5-1 trading arrangement\" or a \"non-Rule 10b5-1 trading arrangement,\" as "
        "those terms are defined in Item 408 of Regulation S-K.",
    ),
    "proxy": (
        "The information required by this item is incorporated by reference to our definitive proxy "
        "statement for the {proxy_year} Annual Meeting of Stockholders, which we expect to file with the "
        "SEC within 120 days after the end of fiscal {fy}.",
    ),
    "proxy_short": (
        "Incorporated by reference to our proxy statement for the {proxy_year} Annual Meeting of "
        "Stockholders.",
        "The information required by this item is incorporated by reference to our {proxy_year} proxy "
        "statement.",
    ),
    "code_of_conduct": (
        "Our Code of Business Conduct and Ethics applies to all directors, officers and employees and "
        "is available on our website, where we will also disclose any amendment or waiver.",
    ),
    "exhibits": (
        "Financial statement schedules have been omitted because they are not required or the "
        "information is shown in the financial statements or notes. Exhibits: Exhibit 3.1, Restated "
        "Certificate of Incorporation; Exhibit "
        "3.2, Amended and Restated Bylaws; Exhibit 10.1, Credit "
        "Agreement among {name}, the lenders party thereto and the administrative agent; Exhibit 10.2, "
        "{equity_plan}; Exhibit 21.1, Subsidiaries of the Registrant; Exhibit 23.1, Consent of {auditor}; "
        "Exhibits 31.1 and 31.2, Certifications pursuant to Rule 13a-14(a); Exhibit 32.1, Certification "
        "pursuant to 18 U.S.C. Section 1350; Exhibit 101, Inline XBRL documents.",
    ),
    "signatures": (
        "Pursuant to the requirements of Section 13 or 15(d) of the Securities Exchange Act of 1934, "
        "the registrant has duly caused this report to be signed on its behalf by the undersigned, "
        "thereunto duly authorized. Registrant: {name} By: /s/ {ceo_name}, Chief Executive Officer; "
        "/s/ {cfo_name}, Chief Financial Officer. Date: {filing_date}.",
    ),
}

RISK_CLOSERS = (
    "Any of these developments could adversely affect our business, financial condition and results "
    "of operations.",
    "If any of these risks were to occur, our revenue, operating results and cash flows could be "
    "materially harmed.",
    "As a result, our results of operations could fluctuate significantly, and the trading price of "
    "our common stock could decline.",
    "These factors could have a material adverse effect on our business and financial results.",
)

COMMON_RISKS: dict[str, tuple[str, str]] = {
    "macro": (
        "Adverse macroeconomic conditions, including inflation and higher interest rates, could reduce "
        "demand for our products and increase our costs.",
        "Our results depend on the level of spending by our customers, which is affected by general "
        "economic conditions in the United States and abroad. Periods of elevated inflation, rising "
        "interest rates, reduced access to credit, bank failures, geopolitical conflict or recession "
        "fears have in the past caused, and may in the future cause, customers to delay or reduce "
        "purchases. At the same time, inflation in wages, freight, materials and services has increased "
        "our costs, and we may not be able to offset these increases through pricing or productivity.",
    ),
    "international": (
        "Our international operations subject us to additional risks, including fluctuations in "
        "foreign currency exchange rates.",
        "We generate a portion of our revenue outside the United States and have operations and "
        "employees in several countries. International operations expose us to currency fluctuations, "
        "differing legal and regulatory requirements, trade restrictions and sanctions, potentially "
        "adverse tax consequences, difficulties in staffing and managing foreign operations, and "
        "political and economic instability. A stronger U.S. dollar reduces the dollar value of revenue "
        "that we earn in other currencies.",
    ),
    "cyber": (
        "A cyberattack or other security incident could disrupt our operations, compromise "
        "confidential information and damage our reputation.",
        "We rely on information technology systems to process transactions, manage our operations and "
        "report our financial results, and we store confidential information about our customers, "
        "employees and business partners. Threat actors, including organized criminal groups and "
        "nation-state actors, regularly attempt to gain unauthorized access to systems like ours "
        "through ransomware, phishing and the exploitation of software vulnerabilities, including "
        "vulnerabilities in products supplied by our vendors. Although we maintain security controls "
        "and incident response plans, these measures may not prevent or detect every incident, and the "
        "costs of investigating and remediating an incident, notifying affected parties and responding "
        "to litigation or regulatory inquiries could be significant.",
    ),
    "personnel": (
        "We depend on our senior management team and on our ability to attract and retain qualified "
        "personnel.",
        "Our success depends on the continued service of our executive officers and other key "
        "employees, including {ceo_name}, our Chief Executive Officer. The loss of one or more key "
        "employees could disrupt our operations, and competition for experienced engineers, sales "
        "personnel and managers is intense. If we are unable to hire, train and retain qualified "
        "personnel, or if our compensation costs increase significantly to do so, our ability to "
        "execute our strategy could be impaired.",
    ),
    "tax": (
        "Changes in tax laws, or unanticipated tax liabilities, could adversely affect our effective tax "
        "rate and results of operations.",
        "We are subject to income and other taxes in the United States and in foreign jurisdictions. "
        "Our effective tax rate could be affected by changes in the mix of earnings among jurisdictions "
        "with different statutory rates, changes in the valuation of deferred tax assets, the outcome of "
        "tax examinations and changes in tax laws, including the global minimum tax under the OECD "
        "Pillar Two framework and the requirement to capitalize and amortize research and "
        "experimental expenditures.",
    ),
    "controls": (
        "If we fail to maintain effective internal control over financial reporting, investors could "
        "lose confidence in the accuracy of our financial statements.",
        "Section 404 of the Sarbanes-Oxley Act requires us to evaluate and report on our internal "
        "control over financial reporting and requires our independent registered public accounting "
        "firm to attest to its effectiveness. Designing and maintaining effective controls requires "
        "significant resources, particularly as we implement new systems and integrate acquired "
        "businesses. If we identify a material weakness, we could be required to restate prior period "
        "financial statements, and the market price of our common stock could decline.",
    ),
    "debt": (
        "Our credit agreement contains restrictive covenants, and we may not be able to obtain "
        "additional financing on favorable terms.",
        "We are party to a revolving credit agreement that provides for borrowings of up to {revolver} "
        "million. The agreement contains covenants that limit our ability to incur additional "
        "indebtedness, create liens, make certain investments and pay dividends, and it requires us to "
        "maintain a maximum leverage ratio. A breach of these covenants could result in an event of "
        "default that permits the lenders to accelerate any outstanding borrowings. Higher interest "
        "rates have also increased the cost of borrowing, and future financing may not be available "
        "when needed or on acceptable terms.",
    ),
    "stock": (
        "The market price of our common stock has been and may continue to be volatile.",
        "The trading price of our common stock may fluctuate significantly in response to our quarterly "
        "results, changes in financial estimates by securities analysts, announcements by us or our "
        "competitors, changes in the valuation of comparable companies, sales of shares by insiders and "
        "general market conditions. Securities class action litigation has often followed periods of "
        "volatility in the market price of a company's securities, and such litigation could result in "
        "substantial costs and divert management's attention.",
    ),
}

RISK_GROUPS = (
    ("Risks Related to Our Business and Industry", ("industry", "macro", "international")),
    ("Risks Related to Technology and Cybersecurity", ("cyber",)),
    ("Risks Related to Our Workforce, Taxes and Legal Matters", ("personnel", "tax", "controls")),
    ("Risks Related to Our Indebtedness and Common Stock", ("debt", "stock")),
)

INDUSTRY_RISKS: dict[str, tuple[tuple[str, str], ...]] = {
    "software": (
        ("If we are unable to attract new customers and expand sales to existing customers, our revenue "
         "growth would be harmed.",
         "Our future growth depends on our ability to sell subscriptions to new customers and to expand "
         "the use of our platform by existing customers. The decision to adopt a new planning or close "
         "system often involves many stakeholders and a lengthy evaluation, and customers may delay "
         "purchases during periods of budget pressure. If our sales and marketing efforts do not "
         "generate sufficient demand, our revenue growth would slow."),
        ("Our customers may not renew their subscriptions or may reduce the number of users or products "
         "they purchase.",
         "Our customers have no obligation to renew their subscriptions after the initial term, and "
         "renewal rates may decline because of dissatisfaction with our products, pricing, competition, "
         "reductions in customer headcount or budgets, or acquisitions of customers by companies that "
         "use other software. Because we recognize subscription revenue ratably, the effect of lower "
         "renewals may not be fully reflected in our results until future periods."),
        ("We rely on third-party cloud infrastructure providers, and any disruption of their services "
         "could interrupt the delivery of our platform.",
         "We host our platform with third-party cloud providers. Any outage, capacity constraint or "
         "security breach affecting these providers, or any change in their pricing or terms, could "
         "interrupt access to our platform, require service credits and damage our reputation with "
         "customers that depend on our products for their financial close and reporting."),
        ("The markets in which we compete are intensely competitive, and larger companies may bundle "
         "planning and close functionality with their other products.",
         "Some of our competitors have substantially greater financial, technical and marketing "
         "resources, larger customer bases and broader product offerings, and may bundle competing "
         "functionality with their enterprise resource planning systems at little or no additional "
         "cost. Competitive pressure could result in price reductions, fewer customer orders and lower "
         "gross margins."),
    ),
    "retail": (
        ("Our results depend on consumer discretionary spending, which may decline during periods of "
         "economic uncertainty.",
         "Purchases of home furnishings and decor are discretionary and are affected by consumer "
         "confidence, employment, wage growth, housing turnover, mortgage rates and the availability of "
         "consumer credit. A decline in discretionary spending, or a shift in spending from goods to "
         "services, could reduce our sales and require us to take markdowns."),
        ("Our business is highly seasonal, and lower-than-expected sales during the holiday season would "
         "have a disproportionate effect on our results.",
         "We generate a significant share of our net sales and most of our operating income in the "
         "fourth fiscal quarter. Unfavorable weather, competitive promotions, shipping delays or weak "
         "consumer demand during the holiday season could leave us with excess inventory and reduce our "
         "full-year results."),
        ("We depend on foreign manufacturers, and disruptions in international trade, shipping costs or "
         "tariffs could increase our costs.",
         "Most of our owned-brand merchandise is manufactured outside the United States. Tariffs, trade "
         "restrictions, port congestion, higher ocean freight rates, currency fluctuations and "
         "political instability in sourcing countries could delay deliveries and increase the cost of "
         "our merchandise."),
        ("If we fail to manage inventory effectively, we may be required to take markdowns that reduce "
         "our gross margin.",
         "We purchase merchandise months in advance of the selling season based on our forecasts of "
         "customer demand. If demand is lower than expected, or if we misjudge trends in home design, we "
         "may need to sell excess inventory at reduced prices; if demand is higher, we may lose sales."),
    ),
    "industrial": (
        ("Demand for our products depends on capital spending in cyclical end markets.",
         "A substantial portion of our revenue comes from customers in the energy, chemical and general "
         "industrial markets, whose capital spending is cyclical and sensitive to commodity prices, "
         "interest rates and economic growth. Municipal water spending depends on public budgets and "
         "infrastructure funding. Declines in spending in these markets could reduce our orders and "
         "revenue."),
        ("Increases in the cost or disruptions in the supply of steel, castings and electronic "
         "components could reduce our margins.",
         "We depend on suppliers for steel, alloy castings and electronic components, some of which are "
         "available from a limited number of sources. Price increases that we cannot pass on to "
         "customers, or supply interruptions that delay our shipments, could reduce our margins and "
         "damage customer relationships."),
        ("Our backlog may not be indicative of future revenue, and orders may be delayed or cancelled.",
         "Backlog consists of orders that we expect to ship in future periods, but customers may delay or "
         "cancel orders, particularly for large projects, and the timing of shipments may shift between "
         "periods. Fixed-price contracts for engineered products also expose us to cost overruns."),
        ("We are exposed to product liability, warranty and environmental claims.",
         "Our products are used in demanding applications where failures can cause property damage, "
         "environmental releases or personal injury, and we are subject to warranty and product "
         "liability claims. We are also subject to environmental laws at current and former "
         "manufacturing sites, and the cost of remediation could exceed our accruals."),
    ),
}

WORDING = {"software": SOFTWARE, "retail": RETAIL, "industrial": INDUSTRIAL}

# Long item titles of Regulation S-K, used by both forms.
MDNA = "Management's Discussion and Analysis of Financial Condition and Results of Operations"
MARKET_RISK = "Quantitative and Qualitative Disclosures About Market Risk"
ITEM_5 = ("Market for Registrant's Common Equity, Related Stockholder Matters and Issuer Purchases of "
          "Equity Securities")
ITEM_9 = "Changes in and Disagreements with Accountants on Accounting and Financial Disclosure"
ITEM_9C = "Disclosure Regarding Foreign Jurisdictions that Prevent Inspections"
PART_III = (
    ("Item 10.", "Directors, Executive Officers and Corporate Governance"),
    ("Item 11.", "Executive Compensation"),
    ("Item 12.", "Security Ownership of Certain Beneficial Owners and Management and Related Stockholder "
                 "Matters"),
    ("Item 13.", "Certain Relationships and Related Transactions, and Director Independence"),
    ("Item 14.", "Principal Accountant Fees and Services"),
)

QUARTER_WORDS = {1: "first", 2: "second", 3: "third", 4: "fourth"}
