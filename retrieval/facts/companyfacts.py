"""Read SEC's companyfacts JSON (``CIK##########.json``): every fact of every concept and unit,
as filed, with the accession and form of the filing that reported it. companyfacts holds only
facts without dimensions (consolidated figures)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from finrag.retrieval.facts.model import Fact, FactsError

FILE_RE = re.compile(r"^CIK\d{10}\.json$", re.I)


def is_companyfacts_file(path: str | Path) -> bool:
    return bool(FILE_RE.match(Path(path).name))


def read_companyfacts(path: str | Path) -> tuple[dict[str, Any], list[Fact]]:
    """(``{"cik", "entity_name"}``, facts) of one companyfacts file; FactsError if malformed."""
    path = Path(path)
    try:
        data = json.loads(path.read_bytes())
    except OSError as err:
        raise FactsError(f"{path}: cannot read file ({err.strerror or err})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise FactsError(f"{path}: not valid JSON ({err})") from None
    if not isinstance(data, dict) or not isinstance(data.get("facts"), dict) or "cik" not in data:
        raise FactsError(f"{path}: not a companyfacts file (expected 'cik' and 'facts' keys)")
    try:
        cik = str(int(data["cik"])).zfill(10)
    except (TypeError, ValueError):
        raise FactsError(f"{path}: cik {data['cik']!r} is not a number") from None
    facts: list[Fact] = []
    for taxonomy, concepts in data["facts"].items():
        if not isinstance(concepts, dict):
            raise FactsError(f"{path}: facts[{taxonomy!r}] is not an object")
        for name, concept in concepts.items():
            units = concept.get("units") if isinstance(concept, dict) else None
            if not isinstance(units, dict):
                raise FactsError(f"{path}: {taxonomy}:{name} has no 'units' object")
            for unit, rows in units.items():
                for row in rows:
                    facts.append(_fact(path, cik, f"{taxonomy}:{name}", unit, row))
    if not facts:
        raise FactsError(f"{path}: companyfacts file holds no facts")
    return {"cik": cik, "entity_name": str(data.get("entityName") or "")}, facts


def _fact(path: Path, cik: str, concept: str, unit: str, row: Any) -> Fact:
    try:
        value = row["val"]
        end = str(row["end"])
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"val {value!r} is not a number")
        fy = row.get("fy")
        return Fact(cik=cik, concept=concept, unit=unit, end=end, value=float(value),
                    start=row.get("start"), form=row.get("form"), accession=row.get("accn"),
                    filed=row.get("filed"), filing_fy=int(fy) if fy else None,
                    filing_fp=row.get("fp"), source="companyfacts")
    except (KeyError, TypeError, ValueError) as err:
        raise FactsError(f"{path}: {concept} [{unit}]: malformed fact ({err})") from None
