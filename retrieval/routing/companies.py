"""Companies finrag knows: canonical names, tickers (current and former) and aliases.

The table ships as ``retrieval/data/companies.yaml``; users extend it with YAML files of the
same shape, and ingest can ``add`` what it learns. Entries are matched by key or by name: a
later entry for a known company updates it (lists are extended, other fields replaced).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields
from datetime import date
from functools import cache
from pathlib import Path
from typing import Any, Iterable

import yaml
from rapidfuzz import fuzz, process

PACKAGED_YAML = Path(__file__).parents[1] / "data" / "companies.yaml"

# Dropped from the end of a name (and "the" from its start) by normalize_name.
_SUFFIXES = {
    "inc", "incorporated", "corp", "corporation", "company", "co", "plc", "ltd", "limited",
    "llc", "holdings", "and",  # "and" only ever ends a name as in "JPMorgan Chase & Co."
}


def normalize_name(name: str) -> str:
    """Casefolded name without punctuation or legal suffixes: "The Coca-Cola Company" -> "coca cola"."""
    text = name.casefold().replace("&", " and ")
    text = re.sub(r"['’.]", "", text)  # McDonald's -> mcdonalds, J.P. -> jp
    words = re.sub(r"[\W_]+", " ", text).split()
    if len(words) > 1 and words[0] == "the":
        words = words[1:]
    while len(words) > 1 and words[-1] in _SUFFIXES:
        words.pop()
    return " ".join(words)


def make_key(name: str) -> str:
    """File-name key for a company name: "Johnson & Johnson" -> "JOHNSON_JOHNSON"."""
    return re.sub(r"[^A-Z0-9]+", "_", name.upper()).strip("_")


@dataclass
class Company:
    key: str
    name: str
    ticker: str | None = None
    tickers: list[str] = field(default_factory=list)  # every ticker, the primary first
    aliases: list[str] = field(default_factory=list)
    fiscal_year_end: str | None = None  # "MM-DD"
    week_based: bool = False  # 52/53-week year: the real end is within 3 days of fiscal_year_end
    cik: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError("a company needs a name")
        for list_field in ("tickers", "aliases"):
            value = getattr(self, list_field)
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"{list_field} must be a list of strings, got {value!r}")
        if self.ticker is not None and not isinstance(self.ticker, str):
            raise ValueError(f"ticker must be a string, got {self.ticker!r}")
        self.key = make_key(str(self.key)) or make_key(self.name)
        self.ticker = self.ticker.strip().upper() if self.ticker else None
        self.tickers = _unique([self.ticker, *(t.strip().upper() for t in self.tickers)])
        if not self.ticker and self.tickers:
            self.ticker = self.tickers[0]
        self.aliases = _unique(self.aliases)
        if self.fiscal_year_end is not None:
            self.fiscal_year_end = str(self.fiscal_year_end)
            mm_dd = self.fiscal_year_end
            if not re.fullmatch(r"\d\d-\d\d", mm_dd) or not _is_date(f"2000-{mm_dd}"):  # leap year
                raise ValueError(f"fiscal_year_end must be 'MM-DD', got {self.fiscal_year_end!r}")
        if not isinstance(self.week_based, bool):
            raise ValueError(f"week_based must be true or false, got {self.week_based!r}")
        if self.cik is not None:
            self.cik = str(self.cik).strip()
            if not self.cik.isdigit() or len(self.cik) > 10:
                raise ValueError(f"cik must be up to 10 digits, got {self.cik!r}")
            self.cik = self.cik.zfill(10)

    @property
    def names(self) -> list[str]:
        return [self.name, *self.aliases]

    def to_dict(self) -> dict[str, Any]:
        """The fields worth writing out (no empty ones, no ``tickers`` that only repeat ``ticker``)."""
        data = {k: v for k, v in asdict(self).items() if v not in (None, [], False)}
        if self.tickers == [self.ticker]:
            data.pop("tickers", None)
        return data


FIELDS = {f.name for f in fields(Company)}


class CompanyConflict(ValueError):
    """What one source says about a company contradicts what an earlier one recorded (a staged
    table's settled company): another name, ticker, calendar or CIK. The message names only
    the values the source itself gave."""


class CompanyTable:
    """Companies indexed by key, ticker and normalised name/alias."""

    def __init__(self, companies: Iterable[Company | dict[str, Any]] = ()) -> None:
        self._by_key: dict[str, Company] = {}
        self._by_ticker: dict[str, Company] = {}
        self._by_name: dict[str, Company] = {}  # normalised name or alias
        self._by_compact: dict[str, Company] = {}  # the same without spaces ("cocacola")
        self._settled: frozenset[str] = frozenset()  # a staged table's keys it may not change
        for company in companies:
            self.add(company)

    def staged(self) -> CompanyTable:
        """A copy for one untrusted source (an upload) to learn into; ``adopt`` it once the
        source is accepted, or drop it. In the copy every company of this table is settled: what
        it records (name, tickers, aliases, calendar, CIK) cannot be changed or added to, only
        a field it leaves empty filled; nor may a new company take a settled one's name, alias,
        ticker or CIK. Any of that raises ``CompanyConflict``."""
        copy = CompanyTable()
        copy._by_key = dict(self._by_key)  # Company entries are replaced, never changed in place
        copy._settled = frozenset(self._by_key)
        copy._reindex()
        return copy

    def adopt(self, staged: CompanyTable) -> list[Company]:
        """Take what a staged copy of this table learned (new companies, empty fields filled);
        returns the entries added or changed."""
        changed = [c for key, c in staged._by_key.items() if self._by_key.get(key) != c]
        for company in changed:
            self._by_key[company.key] = company
        if changed:
            self._reindex()
        return changed

    @classmethod
    def load(
        cls, user_files: str | Path | Iterable[str | Path] = (), *, packaged: bool = True
    ) -> CompanyTable:
        """The packaged table (unless ``packaged=False``) extended by each user file in turn."""
        if isinstance(user_files, (str, Path)):
            user_files = [user_files]
        table = cls()
        for path in ([PACKAGED_YAML] if packaged else []) + [Path(p) for p in user_files]:
            table.load_yaml(path)
        return table

    def load_yaml(self, path: str | Path) -> None:
        """Add the entries of a YAML file: a list of companies, or a mapping with a ``companies`` list."""
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        entries = data.get("companies") if isinstance(data, dict) else data
        if entries is None:
            return
        if not isinstance(entries, list):
            raise ValueError(f"{path}: expected a list of companies (or a 'companies:' list)")
        for number, entry in enumerate(entries, 1):
            try:
                self.add(entry)
            except (TypeError, ValueError) as err:
                raise ValueError(f"{path}: company #{number}: {err}") from None

    def add(self, entry: Company | dict[str, Any] | None = None, **values: Any) -> Company:
        """Add a company, or update the one with the same key or name; returns the stored entry.

        Given values replace the stored ones, except ``tickers`` and ``aliases``, which are
        extended; a name only replaces the canonical one when the entry was matched by key
        (the old name is kept as an alias).
        """
        data = entry.to_dict() if isinstance(entry, Company) else dict(entry or {})
        data.update(values)
        unknown = set(data) - FIELDS
        if unknown:
            raise ValueError(f"unknown field(s) {sorted(unknown)}; known: {sorted(FIELDS)}")
        data = {k: v for k, v in data.items() if v is not None}

        existing = self.by_key(str(data["key"])) if "key" in data else None
        matched_by_key = existing is not None
        if existing is None and "name" in data:
            existing = self.by_name(str(data["name"]))
            if existing and "key" in data and make_key(str(data["key"])) != existing.key:
                raise ValueError(f"{data['name']!r} is already the company with key {existing.key!r}")

        if existing is not None and existing.key in self._settled:
            self._check_settled(existing, data, matched_by_key)
        if existing is None:
            if "name" not in data:
                raise ValueError(f"no company with key {data.get('key')!r}; a new company needs a name")
            company = Company(**{"key": data["name"], **data})
        else:
            merged = asdict(existing)
            for name, value in data.items():
                if name in ("tickers", "aliases"):
                    merged[name] = merged[name] + list(value)
                elif name != "name" or matched_by_key:
                    merged[name] = value
            if merged["name"] != existing.name:
                merged["aliases"].append(existing.name)
            if existing.ticker:
                merged["tickers"].append(existing.ticker)  # a replaced primary stays findable
            merged["key"] = existing.key
            company = Company(**merged)
        if self._settled:
            self._check_taken(company)
        self._by_key[company.key] = company
        self._reindex()
        return company

    def _check_settled(self, company: Company, data: dict[str, Any], by_key: bool) -> None:
        """A settled company may only have its empty fields filled."""
        if by_key and "name" in data and self.by_name(str(data["name"])) is not company:
            raise CompanyConflict(f"the name {data['name']!r} is not one the company table "
                                  f"records for this company")
        for alias in data.get("aliases") or []:
            if self.by_name(alias) is not company:
                raise CompanyConflict(f"the name {alias!r} is not one the company table records "
                                      f"for this company; new names for a known company are "
                                      f"the operator's to add")
        tickers = [t.strip().upper() for t in (data.get("ticker"), *(data.get("tickers") or []))
                   if isinstance(t, str) and t.strip()]
        for ticker in tickers:
            if company.tickers and ticker not in company.tickers:
                raise CompanyConflict(f"the ticker {ticker} is not one the company table "
                                      f"records for this company")
        for name in ("fiscal_year_end", "cik"):
            value = data.get(name)
            if value is None or getattr(company, name) is None:
                continue
            value = str(value).strip()
            if (value.zfill(10) if name == "cik" else value) != getattr(company, name):
                raise CompanyConflict(f"{name} {value!r} is not the one the company table "
                                      f"records for this company")
        if ("week_based" in data and company.fiscal_year_end is not None
                and bool(data["week_based"]) != company.week_based):
            raise CompanyConflict("a 52/53-week calendar is not the one the company table "
                                  "records for this company")

    def _check_taken(self, company: Company) -> None:
        """No name, ticker or CIK of ``company`` may be a settled other company's."""
        for other in self._by_key.values():
            if other.key == company.key or other.key not in self._settled:
                continue
            if company.cik and company.cik == other.cik:
                raise CompanyConflict(f"CIK {company.cik} is another company's in the company "
                                      f"table")
            if taken := set(company.tickers) & set(other.tickers):
                raise CompanyConflict(f"the ticker {sorted(taken)[0]} is another company's in "
                                      f"the company table")
            names = {normalize_name(n) for n in other.names}
            if taken := [n for n in company.names if normalize_name(n) in names]:
                raise CompanyConflict(f"the name {taken[0]!r} is another company's in the "
                                      f"company table")

    def _reindex(self) -> None:
        self._by_ticker.clear()
        self._by_name.clear()
        self._by_compact.clear()
        for company in self._by_key.values():
            for ticker in company.tickers:
                self._by_ticker[ticker] = company
            for name in company.names:
                normal = normalize_name(name)
                self._by_name[normal] = company
                self._by_compact[normal.replace(" ", "")] = company

    def by_key(self, key: str) -> Company | None:
        return self._by_key.get(make_key(key))

    def by_ticker(self, ticker: str) -> Company | None:
        return self._by_ticker.get(ticker.strip().upper())

    def by_name(self, name: str) -> Company | None:
        """The company whose name or an alias normalises to the same text (spaces aside)."""
        normal = normalize_name(name)
        return self._by_name.get(normal) or self._by_compact.get(normal.replace(" ", ""))

    def fuzzy(self, name: str, threshold: float = 90.0) -> Company | None:
        """``by_name``, else the closest name or alias scoring at least ``threshold`` (0-100)."""
        if found := self.by_name(name):
            return found
        best = process.extractOne(
            normalize_name(name), list(self._by_name), scorer=fuzz.ratio, score_cutoff=threshold
        )
        return self._by_name[best[0]] if best else None

    def all(self) -> list[Company]:
        return list(self._by_key.values())

    def __len__(self) -> int:
        return len(self._by_key)

    def to_yaml(self) -> str:
        rows = [company.to_dict() for company in self.all()]
        return yaml.safe_dump({"companies": rows}, sort_keys=False, allow_unicode=True)


@cache
def default_table() -> CompanyTable:
    """The packaged table, loaded once and shared: pass your own table to keep it untouched."""
    return CompanyTable.load()


def _is_date(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _unique(items: Iterable[str | None]) -> list[str]:
    return list(dict.fromkeys(i for i in items if i))
