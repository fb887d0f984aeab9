"""The text templates of the filings: shared boilerplate, risk factors, per-industry wording.

Each entry is a tuple of variants; a filing picks one with its own seeded RNG, so filings share
wording without being identical. Placeholders are filled from the filing's context.
"""

from __future__ import annotations

from typing import Any

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

SOFTWARE: dict[str, Any] = {
    "overview": (
        "{name} (\"{short},\" the \"Company,\" \"we,\" \"us\" or \"our\") provides cloud-based software that "
        "helps finance teams plan, close and analyze the performance of their organizations. Our platform "
        "brings budgeting, forecasting, financial close, consolidation and reporting into a single "
        "subscription service that customers access through a web browser and mobile applications. We "
        "were incorporated in {state} in {founded} and are headquartered in {hq_city}.",
        "{name} (together with its subsidiaries, \"{short},\" \"we\" or \"our\") is a provider of "
        "subscription software for the office of the chief financial officer. Customers use our cloud "
        "platform to build budgets and forecasts, manage the monthly close, consolidate results across "
        "legal entities and report to management and boards. The Company was incorporated in {state} in "
        "{founded}, and our principal executive offices are located in {hq_city}.",
    ),
    "strategy": (
        "Our strategy is to expand within our existing customer base, win new customers in the "
        "mid-market and enterprise segments, and extend the platform into adjacent finance workflows. "
        "We sell multi-year subscriptions that are typically invoiced annually in advance, which gives "
        "us visibility into future revenue. In fiscal {fy} we continued to invest in product "
        "development, with a particular focus on forecasting features that use machine learning to "
        "suggest drivers and flag anomalies in plans.",
        "We grow by adding new customers, by selling additional products and seats to existing "
        "customers, and by expanding internationally. Subscriptions are generally sold for terms of one "
        "to three years and billed annually in advance. During fiscal {fy}, our product investments "
        "concentrated on predictive forecasting, automated account reconciliation and embedded "
        "analytics, and we expanded our partner ecosystem of systems integrators.",
    ),
    "business_outline": (
        ("Our Platform", ("product1", "product2", "product3")),
        ("Customers", ("customers",)),
        ("Competition", ("competition",)),
        ("Seasonality", ("seasonality",)),
        ("Intellectual Property", ("ip",)),
        ("Government Regulation", ("regulation",)),
    ),
    "product1": (
        "{p1} supports budgeting, rolling forecasts, workforce and capital planning, and scenario "
        "modeling. Finance teams use {p1} to replace spreadsheet-based processes with a governed model "
        "that business owners can update directly, and to compare plans with actual results as soon as "
        "the books are closed.",
        "{p1} is our planning product. It enables customers to build driver-based budgets and rolling "
        "forecasts, model headcount and capital expenditures, and evaluate alternative scenarios, with "
        "audit trails and approval workflows that satisfy the controls of public companies.",
    ),
    "product2": (
        "{p2} automates the financial close, including account reconciliations, intercompany "
        "eliminations, journal entry workflow and consolidation across currencies and legal entities. "
        "Customers use {p2} to shorten the close and to document controls for their auditors.",
        "{p2} manages the period-end close. It matches transactions, prepares account reconciliations, "
        "routes journal entries for approval and consolidates subsidiaries that report in different "
        "currencies, giving controllers a single view of close status.",
    ),
    "product3": (
        "{p3} provides dashboards, management reporting and board-ready packages drawn from the same "
        "data as plans and actual results, so that variances can be traced back to the underlying "
        "transactions.",
        "{p3} delivers reporting and analytics, including management dashboards, narrative variance "
        "analysis and packages for boards and lenders, using the data maintained in our planning and "
        "close products.",
    ),
    "customers": (
        "As of {period_end}, we had approximately {customers} customers in more than {countries} "
        "countries, including {big_customers} customers that each contributed more than $100,000 of "
        "annual recurring revenue. Our customers operate in a wide range of industries, including "
        "technology, healthcare, financial services, manufacturing and the public sector. No single "
        "customer accounted for more than 10% of our revenue in fiscal {fy}, {fy_prev} or {fy_prev2}.",
    ),
    "competition": (
        "The market for financial planning and close software is highly competitive and fragmented. We "
        "compete with large enterprise resource planning vendors that offer planning modules, with "
        "specialized cloud planning and close providers, and with spreadsheets and internally developed "
        "tools. The principal competitive factors in our market include breadth of functionality, ease "
        "of use, speed of implementation, scalability, integration with source systems, total cost of "
        "ownership and brand reputation. We believe we compete favorably on these factors.",
    ),
    "seasonality": (
        "We typically sign a higher proportion of new subscriptions and renewals in the fourth quarter "
        "of our fiscal year, reflecting the budget cycles of our customers. Because subscription "
        "revenue is recognized ratably over the contract term, this seasonality is reflected more "
        "strongly in billings and remaining performance obligations than in revenue.",
    ),
    "ip": (
        "We rely on a combination of copyright, trademark, trade secret and patent laws, "
        "confidentiality procedures and contractual restrictions to protect our intellectual property. "
        "As of {period_end}, we held {patents} issued U.S. patents and had additional applications "
        "pending. {short}, {p1}, {p2} and {p3} are trademarks of {name} or its subsidiaries.",
    ),
    "regulation": (
        "Our business is subject to laws and regulations concerning data privacy and security, "
        "including the EU General Data Protection Regulation and the California Consumer Privacy Act, "
        "as well as export controls and anti-corruption laws. We host customer data with third-party "
        "cloud providers in the United States, Europe and Australia and maintain SOC 1, SOC 2 and "
        "ISO 27001 certifications.",
    ),
    "workforce": (
        "As of {period_end}, we had approximately {employees} full-time employees, approximately "
        "{intl_pct}% of whom were located outside the United States. None of our employees in the "
        "United States is represented by a labor union, and we consider our relations with our "
        "employees to be good.",
    ),
    "properties": (
        "Our corporate headquarters is located in {hq_city}, where we lease office space under a lease "
        "that expires in {lease_end}. We also lease offices in North America, Europe and the "
        "Asia-Pacific region for sales, support and research and development. We believe that our "
        "facilities are adequate for our current needs and that suitable additional space will be "
        "available as needed.",
    ),
    "dividends": (
        "We have never declared or paid cash dividends on our common stock and do not anticipate paying "
        "cash dividends in the foreseeable future.",
    ),
    "mdna_overview": (
        "{short} provides a cloud-based platform for financial planning, close management and "
        "analytics. We generate revenue primarily from subscriptions, which accounted for approximately "
        "{sub_pct}% of total revenue in fiscal {fy}, and from professional services related to "
        "implementation and training. Our operating model emphasizes durable subscription growth and "
        "improving operating margins.",
        "We sell subscriptions to our cloud platform, together with implementation and training "
        "services. Subscription revenue represented approximately {sub_pct}% of total revenue in fiscal "
        "{fy}. Demand for our products is driven by the replacement of spreadsheets and legacy "
        "on-premises tools, and our results depend on new customer wins, renewals and expansion.",
    ),
    "key_metrics": (
        "We monitor annual recurring revenue (\"ARR\"), the number of customers contributing more than "
        "$100,000 of ARR, and dollar-based net revenue retention. ARR was {arr} million as of "
        "{period_end}. We had {big_customers} customers with ARR greater than $100,000, and our "
        "dollar-based net revenue retention rate was {nrr}%.",
        "Key metrics. As of {period_end}, ARR, which we define as the annualized value of subscription "
        "contracts in effect at the end of the period, was {arr} million, and dollar-based net revenue "
        "retention was {nrr}%. Customers contributing more than $100,000 of ARR numbered "
        "{big_customers}.",
    ),
    "revenue_up": (
        "The increase was driven primarily by growth in subscription revenue from new customers and "
        "expansion within our existing customer base, partially offset by lower professional services "
        "revenue as more implementations were delivered by partners.",
        "Growth reflected new customer additions, sales of additional products and seats to existing "
        "customers and price increases on renewals, partially offset by a decline in professional "
        "services revenue.",
    ),
    "revenue_down": (
        "The decrease reflected longer sales cycles and lower expansion within our existing customer "
        "base, as customers scrutinized software spending.",
    ),
    "margin_up": (
        "The improvement reflected the growing share of subscription revenue and lower hosting costs "
        "per customer following the migration of workloads to newer cloud infrastructure.",
    ),
    "margin_down": (
        "The decline reflected higher hosting costs and the amortization of capitalized software "
        "development costs, partially offset by the growing share of subscription revenue.",
    ),
    "rd_driver": (
        "The change reflected additional engineering headcount focused on forecasting and analytics "
        "features and higher stock-based compensation.",
        "The change was driven by investment in engineering personnel and in machine learning "
        "capabilities for our planning products.",
    ),
    "sga_driver": (
        "The change reflected investment in sales capacity and marketing programs, partially offset by "
        "efficiencies in general and administrative functions.",
        "The change was driven by higher sales commissions and marketing events, partially offset by "
        "lower facilities costs.",
    ),
    "critical": (
        "Revenue recognition. We recognize subscription revenue ratably over the contract term "
        "beginning on the date the platform is made available to the customer. For contracts with "
        "multiple performance obligations, we allocate the transaction price based on relative "
        "standalone selling prices, which requires judgment when services are not sold separately.",
        "Capitalized software development costs. We capitalize certain costs of developing software "
        "for our cloud platform during the application development stage and amortize them over an "
        "estimated useful life of three years. Judgment is required in determining when a project "
        "reaches the application development stage and in estimating its useful life.",
    ),
    "interest_risk": (
        "Interest rate risk. Our cash equivalents and marketable securities consist primarily of money "
        "market funds, U.S. Treasury securities and high-grade corporate bonds. A hypothetical 100 "
        "basis point change in interest rates would not have had a material effect on the fair value of "
        "our investment portfolio as of {period_end}. We had no borrowings outstanding under our "
        "revolving credit facility.",
    ),
    "revenue_policy": (
        "Revenue recognition. We derive revenue from subscriptions to our cloud platform and from "
        "professional services. Subscription revenue is recognized ratably over the contract term, "
        "generally one to three years, beginning when the service is made available. Professional "
        "services are recognized as the services are performed.",
    ),
    "equity_plan": "Amended and Restated Equity Incentive Plan",
}

RETAIL: dict[str, Any] = {
    "overview": (
        "{name} (\"{short},\" the \"Company,\" \"we\" or \"our\") is a specialty retailer of home "
        "furnishings, kitchenware, bedding and decor. As of {period_end}, we operated {stores} stores in "
        "{states} states and sold merchandise through our website, www.{domain}, and our mobile "
        "application. The Company was founded in {founded} and is headquartered in {hq_city}.",
        "{name} (collectively with its subsidiaries, \"{short},\" \"we\" or \"our\") sells home furnishings, "
        "kitchen and dining products, bedding and seasonal decor through {stores} stores in {states} "
        "states and through our e-commerce channels. We were founded in {founded} and our principal "
        "executive offices are located in {hq_city}.",
    ),
    "strategy": (
        "Our strategy is to offer distinctive, well-priced merchandise for the home, much of it under "
        "our own brands, in an inspiring store environment supported by convenient digital shopping. "
        "Our private-label brands {p2} and {p3} represent a growing share of sales and carry higher "
        "gross margins than national brands. In fiscal {fy} we continued to remodel stores, expand "
        "same-day fulfillment and invest in our loyalty program.",
        "We aim to be the destination for customers furnishing and refreshing their homes. Our "
        "priorities are to grow our owned brands, including {p2} and {p3}, to connect our stores and "
        "digital channels through services such as buy online, pick up in store, and to improve "
        "productivity in our supply chain.",
    ),
    "business_outline": (
        ("Merchandise", ("merchandise",)),
        ("Stores and E-commerce", ("stores_text",)),
        ("Customers and Marketing", ("customers",)),
        ("Sourcing and Distribution", ("sourcing",)),
        ("Competition", ("competition",)),
        ("Seasonality", ("seasonality",)),
        ("Trademarks", ("ip",)),
        ("Government Regulation", ("regulation",)),
    ),
    "merchandise": (
        "Our assortment spans furniture, bedding and bath, kitchen and dining, and decor and seasonal "
        "merchandise. Kitchen and dining, sold primarily under our {p2} brand, is our largest category, "
        "followed by bedding and bath. Owned brands, including {p1}, {p2} and {p3}, accounted for a "
        "majority of net sales in fiscal {fy}.",
        "We organize our merchandise into four categories: furniture; bedding and bath; kitchen and "
        "dining; and decor and seasonal. Our design teams develop products for our owned brands, "
        "including {p2} and {p3}, which we source from manufacturers to our specifications.",
    ),
    "stores_text": (
        "Our stores average approximately 24,000 square feet and are located primarily in suburban "
        "shopping centers and lifestyle centers. During fiscal {fy}, we opened {new_stores} stores and "
        "closed {closed_stores}. E-commerce sales, including orders picked up in our stores, represented "
        "{ecom_pct}% of net sales in fiscal {fy}.",
    ),
    "customers": (
        "Our loyalty program, Finch Rewards, had approximately {members} million active members as of "
        "{period_end}, and members accounted for most of our sales. We reach customers through our "
        "catalog, email, social media, digital advertising and our store associates, who offer design "
        "advice and in-home consultations.",
    ),
    "sourcing": (
        "We purchase merchandise from approximately {vendors} vendors, and a significant portion of our "
        "products is manufactured in Asia, primarily in China, Vietnam and India. Merchandise is "
        "distributed to stores and customers through three regional distribution centers and a network "
        "of third-party carriers.",
        "Our products are sourced from approximately {vendors} vendors in the United States and abroad, "
        "with most owned-brand merchandise produced in Asia. We operate three distribution centers that "
        "replenish our stores and fulfill e-commerce orders, supplemented by third-party logistics "
        "providers during peak periods.",
    ),
    "competition": (
        "The home furnishings market is highly competitive. We compete with department stores, mass "
        "merchants, warehouse clubs, home improvement retailers, specialty retailers and online "
        "marketplaces. We compete on the basis of design, quality, price, assortment, customer service "
        "and the convenience of our stores and digital channels.",
    ),
    "seasonality": (
        "Our business is seasonal, with a higher share of sales and a significantly higher share of "
        "operating income in the fourth fiscal quarter, which includes the holiday selling season from "
        "November through January. Working capital requirements peak in the third quarter as we build "
        "inventory for the holidays.",
    ),
    "ip": (
        "We own registered trademarks for {p1}, {p2}, {p3} and other brand names and logos, which we "
        "consider valuable to our business, and we protect these trademarks in the United States and in "
        "the countries where our products are manufactured.",
    ),
    "regulation": (
        "We are subject to laws and regulations relating to consumer protection, product safety, "
        "including the rules of the U.S. Consumer Product Safety Commission, imports and customs duties, "
        "advertising, data privacy, wage and hour practices and the accessibility of our stores and "
        "digital channels.",
    ),
    "workforce": (
        "As of {period_end}, we had approximately {employees} employees, of whom a majority worked part "
        "time in our stores. Staffing increases during the holiday season. None of our employees is "
        "represented by a labor union, and we consider our employee relations to be good.",
    ),
    "properties": (
        "We lease substantially all of our {stores} store locations under operating leases with initial "
        "terms generally of ten years and renewal options. We own our headquarters campus in {hq_city} "
        "and two of our three distribution centers. We believe our properties are suitable and adequate "
        "for our operations.",
    ),
    "dividends": (
        "We paid quarterly cash dividends totaling ${dividend} per share in fiscal {fy}. Future "
        "dividends are subject to the approval of our Board of Directors and will depend on our "
        "earnings, financial condition and capital requirements.",
    ),
    "mdna_overview": (
        "{short} is a specialty retailer of products for the home. Our results depend on consumer "
        "spending on home goods, which is influenced by housing turnover, household formation, interest "
        "rates and consumer confidence. Management evaluates performance using comparable sales, gross "
        "margin, operating margin and inventory turnover.",
        "We sell home furnishings, kitchenware and decor through stores and e-commerce. Demand in our "
        "categories is sensitive to the housing market and to discretionary spending, and our results "
        "are seasonal, with the largest share of sales and income in the fourth quarter.",
    ),
    "key_metrics": (
        "Comparable sales include sales from stores open for at least fourteen months and from our "
        "digital channels. In fiscal {fy}, {comp_phrase}. E-commerce sales represented {ecom_pct}% of "
        "net sales. We ended the year with {stores} stores.",
        "Key metrics. In fiscal {fy}, {comp_phrase}, and e-commerce sales were {ecom_pct}% of net sales. "
        "We opened {new_stores} stores and closed {closed_stores} during the year.",
    ),
    "revenue_up": (
        "The increase reflected higher comparable sales, led by the kitchen and dining and bedding "
        "categories, and sales from new stores, partially offset by store closures.",
        "Growth was driven by higher transaction counts in stores and online and by new stores, "
        "partially offset by lower average ticket in furniture.",
    ),
    "revenue_down": (
        "The decrease reflected lower comparable sales as customers reduced discretionary purchases of "
        "furniture and decor, partially offset by growth in kitchen and dining.",
        "The decline was driven by lower traffic in our stores and lower average ticket in furniture, "
        "partially offset by sales from new stores.",
    ),
    "margin_up": (
        "The improvement reflected lower inbound freight costs, a higher share of owned-brand "
        "merchandise and fewer promotional markdowns.",
    ),
    "margin_down": (
        "The decline reflected higher promotional markdowns to clear seasonal inventory and higher "
        "occupancy costs, partially offset by lower freight costs.",
    ),
    "rd_driver": (
        "Research and development consists of product design and development for our owned brands; "
        "the change reflected additional design personnel.",
    ),
    "sga_driver": (
        "The change reflected store payroll, marketing and investments in technology, partially offset "
        "by lower incentive compensation.",
        "The change was driven by wage rate increases in stores and distribution centers and higher "
        "digital marketing spending.",
    ),
    "critical": (
        "Inventory valuation. Merchandise inventories are stated at the lower of cost or net realizable "
        "value using the weighted-average cost method. We record reserves for estimated markdowns and "
        "for shrinkage between physical counts, which requires judgment about future demand, "
        "promotional activity and historical shrink rates.",
        "Impairment of store assets. We review store-level long-lived assets, including operating lease "
        "right-of-use assets, for impairment when events indicate that their carrying amounts may not be "
        "recoverable. Estimates of future store cash flows require judgment about sales growth, gross "
        "margin and operating costs.",
    ),
    "interest_risk": (
        "Interest rate risk. Borrowings under our revolving credit facility bear interest at variable "
        "rates. We had no borrowings outstanding as of {period_end}, and a hypothetical 100 basis point "
        "change in interest rates would not have had a material effect on our interest income or "
        "expense.",
    ),
    "revenue_policy": (
        "Revenue recognition. We recognize revenue from store sales at the point of sale and from "
        "e-commerce orders when the merchandise is delivered to or picked up by the customer. Revenue "
        "is recorded net of estimated returns, and revenue from gift cards is recognized when the cards "
        "are redeemed.",
    ),
    "equity_plan": "Long-Term Incentive Plan",
}

INDUSTRIAL: dict[str, Any] = {
    "overview": (
        "{name} (\"{short},\" the \"Company,\" \"we\" or \"our\") designs, manufactures and services pumps, "
        "valves and flow-measurement instruments used to move and control liquids and gases in water, "
        "energy, chemical and general industrial applications. The Company was founded in {founded} and "
        "is headquartered in {hq_city}.",
        "{name} (together with its subsidiaries, \"{short},\" \"we\" or \"our\") is a global manufacturer of "
        "flow-control equipment, including pumps, control valves and instrumentation, together with the "
        "aftermarket parts and services that keep them running. We were founded in {founded}, and our "
        "principal executive offices are located in {hq_city}.",
    ),
    "strategy": (
        "Our strategy is to grow in attractive end markets such as water infrastructure and energy "
        "transition, to expand our aftermarket and digital monitoring services, and to improve margins "
        "through pricing discipline and our lean operating system. In fiscal {fy} we continued to "
        "consolidate manufacturing facilities and to invest in products that reduce energy consumption.",
        "We focus on engineered products in which reliability and efficiency matter to our customers, "
        "on a growing installed base that generates aftermarket revenue, and on operational excellence. "
        "During fiscal {fy} we launched new energy-efficient pump models and expanded the FlowSight "
        "remote monitoring service.",
    ),
    "rename": (
        "On {renamed_on}, we changed our corporate name from {former} to {name} to reflect the "
        "broader flow-control and instrumentation portfolio that we have built. Our common stock "
        "continues to trade on the {exchange} under the symbol \"{ticker}.\"",
    ),
    "business_outline": (
        ("Segments and Products", ("segments", "product1", "product2")),
        ("Customers and End Markets", ("customers",)),
        ("Backlog", ("backlog_text",)),
        ("Raw Materials", ("materials",)),
        ("Competition", ("competition",)),
        ("Seasonality", ("seasonality",)),
        ("Intellectual Property", ("ip",)),
        ("Environmental and Other Regulation", ("regulation",)),
    ),
    "segments": (
        "We report two segments. Fluid Handling designs and manufactures {p1} and related aftermarket "
        "parts. Flow Control designs and manufactures {p2} and {p3}. Aftermarket parts and services "
        "accounted for approximately {aftermarket_pct}% of revenue in fiscal {fy}.",
    ),
    "product1": (
        "{p1} include centrifugal, positive-displacement and submersible pumps used in municipal water "
        "and wastewater systems, oil and gas production, chemical processing and industrial plants. "
        "Many of our pumps are engineered to customer specifications and have service lives of twenty "
        "years or more.",
    ),
    "product2": (
        "{p2} regulate the flow and pressure of liquids and gases in process plants, pipelines and "
        "power generation facilities. {p3} measure flow, pressure and level and transmit data to "
        "control systems and to our cloud-based monitoring service.",
        "Our Flow Control segment sells {p2}, actuators and positioners, together with {p3}, which "
        "measure flow rates and detect leaks and equipment wear, enabling predictive maintenance.",
    ),
    "customers": (
        "We sell to municipalities, engineering and construction firms, original equipment "
        "manufacturers and end users in the water and wastewater, energy, chemical and general "
        "industrial markets, both directly and through independent distributors. No single customer "
        "accounted for more than 10% of our revenue in fiscal {fy}.",
    ),
    "backlog_text": (
        "Backlog, which consists of firm orders that have not yet been shipped, was {backlog} million "
        "as of {period_end}. We expect to ship approximately 85% of this backlog within the next twelve "
        "months. Orders were {orders} million in fiscal {fy}, for a book-to-bill ratio of "
        "{book_to_bill}.",
    ),
    "materials": (
        "The principal raw materials we use are carbon and stainless steel, iron and specialty alloy "
        "castings, and electronic components. We purchase these materials from multiple suppliers and "
        "generally have not experienced significant shortages, although lead times and prices for "
        "castings and electronic components increased in recent years.",
    ),
    "competition": (
        "Our markets are competitive and include large multinational manufacturers as well as regional "
        "companies and specialists. We compete on the basis of product performance and reliability, "
        "energy efficiency, application engineering, delivery times, the breadth of our aftermarket "
        "service network and price.",
    ),
    "seasonality": (
        "Our business is moderately seasonal. Revenue is typically highest in the fourth quarter, when "
        "customers complete capital projects before year end, and lowest in the first quarter.",
    ),
    "ip": (
        "We hold approximately {patents} patents worldwide and numerous trademarks, including {short}, "
        "Tessel and FlowSight. While we consider our intellectual property important, we do not believe "
        "that the loss of any single patent or trademark would materially affect our business.",
    ),
    "regulation": (
        "Our operations are subject to environmental, health and safety laws, including laws governing "
        "air emissions, wastewater discharges and the handling and disposal of hazardous materials. We "
        "are also subject to export control and sanctions regulations. We do not expect compliance "
        "costs to have a material effect on our capital expenditures or results of operations.",
    ),
    "workforce": (
        "As of {period_end}, we had approximately {employees} employees, approximately {intl_pct}% of "
        "whom were located outside the United States. Approximately 20% of our employees are covered by "
        "collective bargaining agreements or works councils, and we consider our employee relations to "
        "be good.",
    ),
    "properties": (
        "We operate {plants} manufacturing facilities in {plant_countries} countries, as well as service "
        "centers and sales offices. Our principal manufacturing facilities are located in Pennsylvania, "
        "Texas, Germany, Italy and China. We own our headquarters in {hq_city}. We believe our "
        "facilities are suitable and adequate for our current needs.",
    ),
    "dividends": (
        "We paid quarterly cash dividends totaling ${dividend} per share in fiscal {fy}. Our Board of "
        "Directors reviews the dividend each quarter, and future dividends will depend on our earnings, "
        "cash flows and financial condition.",
    ),
    "mdna_overview": (
        "{short} is a manufacturer of pumps, valves and flow instruments. Demand for our products is "
        "tied to capital and maintenance spending in the water, energy, chemical and general industrial "
        "markets. We measure performance using orders, backlog, organic revenue growth, segment "
        "operating margin and free cash flow.",
        "We design and manufacture flow-control equipment and provide aftermarket parts and services. "
        "Our results are influenced by industrial production, infrastructure investment and energy "
        "prices, and by our ability to offset material and labor inflation through pricing.",
    ),
    "key_metrics": (
        "Orders were {orders} million in fiscal {fy}, and the book-to-bill ratio was {book_to_bill}. "
        "Backlog at {period_end} was {backlog} million. Aftermarket revenue represented approximately "
        "{aftermarket_pct}% of total revenue.",
        "Key metrics. Orders in fiscal {fy} totaled {orders} million, a book-to-bill ratio of "
        "{book_to_bill}, and backlog at year end was {backlog} million.",
    ),
    "revenue_up": (
        "The increase was driven by higher shipments in our Flow Control segment, pricing actions "
        "implemented to offset cost inflation and growth in aftermarket services.",
        "Growth reflected price realization, higher volume in water and wastewater and energy markets, "
        "and growth in aftermarket parts, partially offset by unfavorable foreign currency translation.",
    ),
    "revenue_down": (
        "The decrease reflected lower project shipments in the chemical market and unfavorable foreign "
        "currency translation, partially offset by pricing.",
    ),
    "margin_up": (
        "The improvement reflected price realization, a favorable mix of aftermarket revenue and "
        "productivity from facility consolidations.",
    ),
    "margin_down": (
        "The decline reflected higher costs for castings and labor and an unfavorable mix of large "
        "project shipments, partially offset by pricing.",
    ),
    "rd_driver": (
        "The change reflected development of energy-efficient pump designs and FlowSight monitoring "
        "features.",
    ),
    "sga_driver": (
        "The change reflected higher compensation costs and investment in our aftermarket sales "
        "organization, partially offset by restructuring savings.",
        "The change was driven by wage inflation and higher selling costs associated with increased "
        "volume.",
    ),
    "critical": (
        "Revenue recognition for engineered products. For certain engineered-to-order contracts, we "
        "recognize revenue over time using the ratio of costs incurred to total estimated costs. "
        "Estimating total contract costs requires judgment about labor productivity, material costs and "
        "the timing of completion.",
        "Goodwill. We test goodwill for impairment annually in the fourth quarter, or more frequently if "
        "indicators are present, by comparing the fair value of each reporting unit with its carrying "
        "amount. Fair value is estimated using discounted cash flows, which depend on assumptions about "
        "revenue growth, margins and discount rates.",
    ),
    "interest_risk": (
        "Interest rate risk. As of {period_end}, we had {debt} million of debt outstanding, of which a "
        "portion bears interest at floating rates. A hypothetical 100 basis point increase in interest "
        "rates would have increased our annual interest expense by less than $5 million.",
    ),
    "revenue_policy": (
        "Revenue recognition. We recognize revenue for standard products and aftermarket parts when "
        "control transfers to the customer, generally on shipment, and for certain engineered-to-order "
        "contracts over time as work is performed. Service revenue is recognized as services are "
        "rendered.",
    ),
    "equity_plan": "Omnibus Incentive Plan",
}

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
