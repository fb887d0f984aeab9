"""Read the inline XBRL embedded in a 10-K/10-Q HTML filing: every numeric fact
(``ix:nonFraction``, hidden or nested ones included) with its context's period and dimensions
and its unit, plus the ``dei:`` facts that say which company, form and fiscal period it is."""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import lxml.etree

from finrag.retrieval.documents import DocumentError
from finrag.retrieval.facts.model import Fact, FactsError
from finrag.retrieval.ingest.html import read_html

_WS_RE = re.compile(r"\s+")
_MONTHS = {m: i for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), start=1)}
_ZERO_FORMATS = frozenset({"fixed-zero", "fixedzero", "zerodash"})
_COMMA_DECIMAL = frozenset({"num-comma-decimal", "numcommadecimal", "numdotcomma", "numspacecomma"})
_DASHES = frozenset({"-", "\u2013", "\u2014", "\u2212"})
_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen".split())}
_WORDS.update({w: 10 * i for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)})
_WORDS.update({"no": 0, "none": 0})


def read_inline_facts(path: str | Path, source: str | None = None) -> tuple[dict[str, Any], list[Fact]]:
    """(filing info, numeric facts) of an inline-XBRL HTML filing; FactsError when the file has
    no inline XBRL or is malformed. info["skipped"] counts facts left out because their context
    or unit is not defined or their displayed value is not a number."""
    path = Path(path)
    root = _parse(path)
    elements: dict[str, list[Any]] = {}
    for el in root.iter(lxml.etree.Element):
        elements.setdefault(_local(el.tag), []).append(el)
    if not elements.get("nonfraction"):
        raise FactsError(f"{path}: no inline XBRL numeric facts (ix:nonFraction) in the file")
    contexts = {el.get("id"): ctx for el in elements.get("context", []) if (ctx := _context(el))}
    units = {el.get("id"): _unit(el) for el in elements.get("unit", [])}
    info = _filing_info(elements.get("nonnumeric", []), elements.get("identifier", []))
    source = source or f"ixbrl:{path.stem}"

    facts: dict[tuple, Fact] = {}  # exact duplicates collapse; filings repeat facts
    skipped = 0
    for el in elements["nonfraction"]:
        attrs = {k.lower(): v for k, v in el.attrib.items()}
        if attrs.get("xsi:nil", "").lower() == "true":
            continue
        context, unit = contexts.get(attrs.get("contextref")), units.get(attrs.get("unitref"))
        try:
            value = _value(el.text_content(), attrs)
        except (ValueError, InvalidOperation):
            value = None
        if context is None or unit is None or value is None:
            skipped += 1
            continue
        start, end, dims = context
        decimals = attrs.get("decimals", "").strip()
        fact = Fact(cik=info["cik"], concept=attrs.get("name", ""), unit=unit, end=end, value=value,
                    start=start, form=info["form"], filing_fy=info["fiscal_year"],
                    filing_fp=info["fiscal_period"], dimensions=dims,
                    decimals=int(decimals) if re.fullmatch(r"-?\d+", decimals) else None, source=source)
        facts.setdefault((fact.concept, unit, start, end, dims, value), fact)
    info["skipped"] = skipped
    return info, list(facts.values())


def _parse(path: Path) -> Any:
    try:
        return read_html(path)
    except DocumentError as err:
        raise FactsError(str(err)) from None


def _local(tag: str) -> str:
    """"ix:nonfraction" (HTML parser) or "{ns}nonFraction" (XML parser) -> "nonfraction"."""
    return re.split(r"[:}]", tag)[-1].lower()


def _text(el: Any) -> str:
    return _WS_RE.sub(" ", el.text_content()).strip()


def _context(el: Any) -> tuple[str | None, str, tuple[tuple[str, str], ...]] | None:
    """(start, end, dimensions) of an xbrli:context; None without a dated period ("forever")."""
    parts: dict[str, str] = {}
    dims = []
    for child in el.iter(lxml.etree.Element):
        name = _local(child.tag)
        if name in ("startdate", "enddate", "instant"):
            parts[name] = _text(child)[:10]  # a dateTime keeps only its date
        elif name in ("explicitmember", "typedmember"):
            dims.append((child.get("dimension") or "", _text(child)))
    if "instant" in parts:
        return None, parts["instant"], tuple(sorted(dims))
    if "startdate" in parts and "enddate" in parts:
        return parts["startdate"], parts["enddate"], tuple(sorted(dims))
    return None


def _unit(el: Any) -> str:
    """"iso4217:USD" -> "USD"; a divide -> "USD/shares"."""
    def measures(tag: str) -> str:
        return "*".join(_text(m).split(":")[-1] for m in el.iter(lxml.etree.Element) if _local(m.tag) == tag)

    numerator = measures("unitnumerator")
    if numerator:
        return f"{numerator}/{measures('unitdenominator')}"
    return measures("measure")


def _value(text: str, attrs: dict[str, str]) -> float:
    fmt = attrs.get("format", "").split(":")[-1].lower()
    compact = _WS_RE.sub("", text)
    if fmt in _ZERO_FORMATS or compact in _DASHES:
        number = Decimal(0)
    elif fmt == "numwordsen":
        number = Decimal(_words(text))
    elif fmt in _COMMA_DECIMAL:
        number = Decimal(compact.replace(".", "").replace(",", "."))
    else:
        number = Decimal(compact.replace(",", ""))
    # Decimal keeps 1.25 (scale -2) and 391,035 (scale 6) exact until the final float.
    number = number.scaleb(int(attrs.get("scale") or 0))
    return float(-number if attrs.get("sign") == "-" else number)


def _words(text: str) -> int:
    """"two", "twenty-five", "one hundred", "no" -> the number they spell."""
    total = 0
    for word in re.split(r"[\s-]+", text.strip().lower()):
        if word == "hundred":
            total *= 100
        elif word in _WORDS:
            total += _WORDS[word]
        elif word != "and":
            raise ValueError(f"not a number word: {word!r}")
    return total


def _filing_info(nonnumeric: list[Any], identifiers: list[Any]) -> dict[str, Any]:
    dei: dict[str, str] = {}
    for el in nonnumeric:
        name = el.get("name") or ""
        if name.startswith("dei:") and not dei.get(name[4:]):
            dei[name[4:]] = _text(el)
    cik = dei.get("EntityCentralIndexKey") or next((_text(i) for i in identifiers if _text(i)), "")
    year = dei.get("DocumentFiscalYearFocus", "")
    return {
        "cik": cik.zfill(10) if cik.isdigit() else cik,
        "entity_name": dei.get("EntityRegistrantName", ""),
        "form": dei.get("DocumentType") or None,
        "fiscal_year": int(year) if year.isdigit() else None,
        "fiscal_period": dei.get("DocumentFiscalPeriodFocus", "").upper() or None,
        "period_end": _iso_date(dei.get("DocumentPeriodEndDate", "")),
        "fiscal_year_end": _month_day(dei.get("CurrentFiscalYearEndDate", "")),
    }


def _iso_date(text: str) -> str | None:
    """"January 26, 2025", "Sept. 28, 2024" or "2025-01-26" -> "2025-01-26"."""
    text = _WS_RE.sub(" ", text.replace(",", " ").replace(".", " ")).strip()
    try:
        if m := re.fullmatch(r"(\d{4})-(\d{1,2})-(\d{1,2})", text):
            return date(int(m[1]), int(m[2]), int(m[3])).isoformat()
        if m := re.fullmatch(r"([A-Za-z]{3,}) (\d{1,2}) (\d{4})", text):
            return date(int(m[3]), _MONTHS.get(m[1][:3].lower(), 0), int(m[2])).isoformat()
    except ValueError:
        pass
    return None


def _month_day(text: str) -> str | None:
    """"--01-26", "January 26" or "1/26" -> "01-26"."""
    m = re.fullmatch(r"-*(\d{1,2})[-/](\d{1,2})", text.strip())
    day = _iso_date(f"2000-{m[1]}-{m[2]}" if m else f"{text} 2000")  # 2000: a leap year, 02-29 passes
    return day[5:] if day else None
