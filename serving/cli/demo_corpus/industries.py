"""The per-industry text templates of the filings (software, retail, industrial): each
industry's business description, products, competition, seasonality and the other wording its
filings draw on. ``wording`` holds what every filing shares, and
each industry's own risk factors.
"""

from __future__ import annotations

from typing import Any

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
