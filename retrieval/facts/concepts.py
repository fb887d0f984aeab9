"""The metric table: what questions call a figure, and which XBRL concepts report it.

Ships as ``retrieval/data/concepts.yaml``; users extend it with YAML files of the same shape.
``ConceptTable.find(text)`` reads the metrics a question names, longest phrase first, so
"operating cash flow" is not read as "cash".
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Iterable

import yaml

from finrag.retrieval.facts.formula import FormulaError, names as formula_names, parse as parse_formula

PACKAGED_YAML = Path(__file__).parents[1] / "data" / "concepts.yaml"
KINDS = ("flow", "stock", "per_share", "ratio")
STATEMENTS = ("income", "balance", "cash_flow")
_FORMULA = re.compile(r"^\s*([a-z_][a-z0-9_]*)\s*([-+/])\s*([a-z_][a-z0-9_]*)\s*$")
DISPLAYS = ("percent", "number")


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    concepts: tuple[str, ...] = ()
    phrases: tuple[str, ...] = ()
    formula: str | None = None
    kind: str = "flow"
    statement: str | None = None
    display: str | None = None  # a ratio's default wording: percent (margins) or number (days, turnover)
    better: str = "higher"  # which way is an improvement: lower for days outstanding, leverage
    source: str | None = None  # where a computed measure's definition comes from

    @property
    def formula_names(self) -> list[str]:
        """The metrics the formula reads (``formula`` module language), [] without one."""
        return formula_names(parse_formula(self.formula)) if self.formula else []

    @property
    def operands(self) -> tuple[str, str, str] | None:
        """(left metric, operator, right metric) of the formula."""
        m = _FORMULA.match(self.formula or "")
        return (m.group(1), m.group(2), m.group(3)) if m else None

    @property
    def units(self) -> tuple[str, ...]:
        if self.kind == "per_share":
            return ("USD/shares",)
        if self.key.startswith(("shares", "weighted_shares")):
            return ("shares",)
        return ("USD",) if self.kind in ("flow", "stock") else ("pure",)


@dataclass
class MetricMention:
    metric: Metric
    text: str
    start: int
    end: int


@dataclass
class ConceptTable:
    metrics: dict[str, Metric] = field(default_factory=dict)

    @classmethod
    def load(cls, user_files: str | Path | Iterable[str | Path] = (), *,
             packaged: bool = True) -> "ConceptTable":
        if isinstance(user_files, (str, Path)):
            user_files = [user_files]
        table = cls()
        for path in ([PACKAGED_YAML] if packaged else []) + [Path(p) for p in user_files]:
            table.load_yaml(path)
        return table

    def load_yaml(self, path: str | Path) -> None:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        entries = data.get("metrics") if isinstance(data, dict) else None
        if not isinstance(entries, dict):
            raise ValueError(f"{path}: expected a 'metrics:' mapping of metric name -> fields")
        for key, values in entries.items():
            try:
                self.add(str(key), **(values or {}))
            except (TypeError, ValueError) as err:
                raise ValueError(f"{path}: metric {key!r}: {err}") from None
        for metric in self.metrics.values():
            if metric.formula and not all(op in self.metrics for op in metric.formula_names):
                raise ValueError(f"{path}: metric {metric.key!r}: formula {metric.formula!r} "
                                 f"names a metric the table does not have")
        self._pattern.cache_clear()

    def add(self, key: str, **values: Any) -> Metric:
        """Add a metric, or replace the given fields of a known one."""
        known = {"label", "concepts", "phrases", "formula", "kind", "statement", "display",
                 "better", "source"}
        if unknown := set(values) - known:
            raise ValueError(f"unknown field(s) {sorted(unknown)}; known: {sorted(known)}")
        old = self.metrics.get(key)
        merged: dict[str, Any] = dict(old.__dict__) if old else {"key": key}
        merged.update(values)
        merged["concepts"] = tuple(c if ":" in c else f"us-gaap:{c}"
                                   for c in merged.get("concepts") or ())
        merged["phrases"] = tuple(str(p) for p in merged.get("phrases") or ())
        merged.setdefault("label", key.replace("_", " ").capitalize())
        if merged.get("kind", "flow") not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {merged['kind']!r}")
        if merged.get("statement") not in (None, *STATEMENTS):
            raise ValueError(f"statement must be one of {STATEMENTS}, got {merged['statement']!r}")
        if merged.get("better", "higher") not in ("higher", "lower"):
            raise ValueError(f"better must be higher or lower, got {merged['better']!r}")
        if merged.get("display") not in (None, *DISPLAYS):
            raise ValueError(f"display must be one of {DISPLAYS}, got {merged['display']!r}")
        if merged.get("formula"):
            try:
                parse_formula(merged["formula"])
            except FormulaError as err:
                raise ValueError(f"formula: {err}") from None
        if not merged["concepts"] and not merged.get("formula"):
            raise ValueError("a metric needs concepts or a formula")
        metric = Metric(**merged)
        self.metrics[key] = metric
        self._pattern.cache_clear()
        return metric

    def __getitem__(self, key: str) -> Metric:
        return self.metrics[key]

    def __len__(self) -> int:
        return len(self.metrics)

    def statement(self, name: str) -> list[Metric]:
        """The lines of a statement, in the table's order."""
        return [m for m in self.metrics.values() if m.statement == name]

    @cache  # noqa: B019 - one table object lives as long as the process
    def _pattern(self) -> tuple[re.Pattern, dict[str, Metric]]:
        by_phrase: dict[str, Metric] = {}
        for metric in self.metrics.values():
            for phrase in (metric.key.replace("_", " "), *metric.phrases):
                by_phrase.setdefault(_norm(phrase), metric)
        alternatives = []
        for phrase in sorted(by_phrase, key=len, reverse=True):
            body = r"[\s,\-]+".join(re.escape(w) + "['’]?" for w in phrase.split())
            if phrase.isupper():  # "EPS", "R&D": written in capitals, never as a plain word
                alternatives.append(rf"(?-i:{body})")
            else:
                alternatives.append(body)
        pattern = re.compile(r"(?<![\w&])(?:" + "|".join(alternatives) + r")(?![\w&])", re.I)
        return pattern, by_phrase

    def find(self, text: str) -> list[MetricMention]:
        """The metrics ``text`` names, in order, each once (longest phrase wins)."""
        pattern, by_phrase = self._pattern()
        out: list[MetricMention] = []
        for m in pattern.finditer(text):
            phrase = _norm(m.group(0))
            metric = by_phrase.get(phrase) or by_phrase.get(phrase.casefold())
            if metric and all(o.metric.key != metric.key for o in out):
                out.append(MetricMention(metric, m.group(0), m.start(), m.end()))
        return out

    def scattered(self, text: str) -> list[Metric]:
        """A metric whose phrase's words all appear in ``text``, apart ("how many common shares
        did NVIDIA have outstanding"): the one with the longest such phrase, for a question in
        which ``find`` saw none."""
        words = set(re.findall(r"[\w&]+", _norm(text).casefold()))
        best: tuple[int, Metric] | None = None
        for phrase, metric in self._pattern()[1].items():
            need = re.findall(r"[\w&]+", phrase.casefold())
            if len(need) >= 2 and set(need) <= words and (best is None or len(need) > best[0]):
                best = (len(need), metric)
        return [best[1]] if best else []

    def closest(self, name: str, threshold: float = 85.0) -> Metric | None:
        """A metric named loosely (by a model): its key, a phrase inside it, or the closest
        phrase scoring at least ``threshold`` (0-100)."""
        from rapidfuzz import fuzz, process

        key = name.strip().casefold().replace(" ", "_").replace("-", "_")
        if key in self.metrics:
            return self.metrics[key]
        if found := self.find(name):
            return found[0].metric
        _, by_phrase = self._pattern()
        best = process.extractOne(_norm(name).casefold(), {p: p.casefold() for p in by_phrase},
                                  scorer=fuzz.token_set_ratio, score_cutoff=threshold)
        return by_phrase[best[2]] if best else None

    def __hash__(self) -> int:
        return id(self)


def _norm(phrase: str) -> str:
    words = re.sub(r"[\s,\-]+", " ", re.sub(r"['’]", "", phrase)).strip()
    return words if words.isupper() else words.casefold()


@cache
def default_concepts() -> ConceptTable:
    """The packaged table extended by the YAML files named in ``$FINRAG_CONCEPTS``
    (separated by the path separator, ":" on Linux)."""
    extra = [p for p in os.environ.get("FINRAG_CONCEPTS", "").split(os.pathsep) if p]
    return ConceptTable.load(extra)
