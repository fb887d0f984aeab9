"""What the router LLM must return: the entities that pick the filing(s), the rewritten
search query and keywords, and the SEC design's route and metric — routing, query rewriting and
route classification in ONE constrained call."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

# Enumerated rather than ge/le bounds: a JSON-schema grammar enforces an enum token by token,
# while numeric bounds are only checked after the fact (a small model writes "FY20" as 20).
Year = Literal[tuple(range(1990, 2100))]  # type: ignore[valid-type]
Quarter = Literal[1, 2, 3, 4]
DocType = Literal["10-K", "10-Q", "8-K", "earnings", "annual report"]
Route = Literal["metric_lookup", "timeseries", "full_statement", "narrative", "hybrid"]


class RouterOutput(BaseModel):
    """Field order is generation order: the entities that pick filings come first."""

    model_config = ConfigDict(extra="forbid")

    companies: list[Annotated[str, Field(max_length=60)]] = Field(
        max_length=3,
        description="company names as the question writes them")
    fiscal_years: list[Year] = Field(max_length=4)
    fiscal_quarters: list[Quarter] = Field(max_length=4)
    doc_types: list[DocType] = Field(max_length=2)
    tickers: list[Annotated[str, Field(pattern=r"^[A-Z]{1,5}$")]] = Field(
        max_length=3, description="stock tickers if the question gives them")
    search_query: Annotated[str, Field(max_length=200)] = Field(
        description="the question rewritten as a search query, without company or year")
    keywords: list[Annotated[str, Field(max_length=40)]] = Field(max_length=6)
    route: Route = "narrative"
    metric: Annotated[str, Field(max_length=40)] = Field(
        "", description="the financial metric asked for, e.g. revenue, net income, capex")


ROUTER_SYSTEM_PROMPT = """You read a question about SEC filings and extract, as JSON:
- companies: the company names mentioned (as written), at most 3
- fiscal_years: 4-digit fiscal years mentioned (FY2022 -> 2022, FY21 -> 2021), else []
- fiscal_quarters: quarter numbers mentioned (Q2 -> 2), else []
- doc_types: "10-K", "10-Q", "8-K", "earnings" or "annual report" if the question names one,
  else the one that answers it ("8-K" for an event, "earnings" for guidance or adjusted figures)
- tickers: stock tickers written in the question in capitals (e.g. AAPL), else []
- search_query: the question as a short search query without the company and year
- keywords: up to 6 financial terms to search for
- route: "metric_lookup" (one reported figure), "timeseries" (a figure over several periods),
  "full_statement" (a whole income statement, balance sheet or cash flow statement),
  "hybrid" (a figure and why it changed), or "narrative" (anything else)
- metric: the financial metric asked for (e.g. "revenue", "capex", "share repurchases"), else ""
Answer with the JSON only."""

ROUTER_EXAMPLES = [
    ("What was Best Buy's operating income in Q2 FY2024 according to its 10-Q?",
     '{"companies": ["Best Buy"], "fiscal_years": [2024], "fiscal_quarters": [2], '
     '"doc_types": ["10-Q"], "tickers": [], "search_query": "operating income second quarter", '
     '"keywords": ["operating income"], "route": "metric_lookup", "metric": "operating income"}'),
    ("Using the cash flow statement, how much did NVDA and Intel spend on capex in FY2021 "
     "and FY2022?",
     '{"companies": ["NVDA", "Intel"], "fiscal_years": [2021, 2022], "fiscal_quarters": [], '
     '"doc_types": [], "tickers": ["NVDA"], "search_query": "capital expenditures cash flow '
     'statement", "keywords": ["capital expenditures", "purchases of property and equipment"], '
     '"route": "timeseries", "metric": "capital expenditures"}'),
]


def _chat(system: str, examples: list[tuple[str, str]], question: str) -> list[dict]:
    messages = [{"role": "system", "content": system}]
    for q, a in examples:
        messages += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
    messages.append({"role": "user", "content": question.strip()[:2000]})
    return messages


def router_messages(question: str) -> list[dict]:
    """Chat messages for one routing call (the question is data, never instructions)."""
    return _chat(ROUTER_SYSTEM_PROMPT, ROUTER_EXAMPLES, question)
