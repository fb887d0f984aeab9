"""Statistics for the benchmarks: bootstrap intervals, paired differences, agreement with human
labels, the judge's score rates, and the choice of a configuration (Pareto front, FACET).

Pure functions over plain Python values; numpy only.

Bootstrap
    ``bootstrap_ci`` resamples the values with replacement ``n`` times (a seeded
    ``numpy.random.default_rng``) and returns the percentile interval: the (1-level)/2 and
    (1+level)/2 quantiles of the statistic over the resamples, beside the statistic of the
    sample itself. ``paired_difference`` does the same for the mean of per-question differences
    ``a[id] - b[id]`` over the ids both systems answered: questions are resampled, so the
    interval accounts for how much the systems' scores vary together.

Agreement
    ``accuracy`` = share of items where the two label lists agree. ``cohen_kappa`` =
    (p_o - p_e) / (1 - p_e), with p_o the observed agreement and p_e = sum over labels of
    P_true(label) * P_pred(label), the agreement expected by chance from each rater's label
    frequencies. Degenerate case: when p_e = 1 (both raters gave every item the same single
    label), kappa is 0/0; it is defined here as 1.0, since the raters then agree on every item
    (p_o = 1) — read such a kappa together with the confusion matrix. Empty inputs give None.

Judge score rates (HDRR paper's rubric, scores 1..10)
    average = mean score; failure_rate = P(s = 1); correctness = P(s >= 8);
    perfect_rate = P(s = 10). ``None`` scores (a judgement that failed) are left out, not
    counted as failures; ``n`` is the number of scores used.

Pareto front
    Row A dominates row B when A is at least as good on every objective (>= on each
    ``maximize`` key, <= on each ``minimize`` key) and strictly better on at least one.
    The front is the rows no other row dominates, in input order. Rows with equal objectives
    do not dominate each other, so ties and duplicates are all kept. A row lacking an
    objective (missing, None or NaN) cannot be compared and is left out.

FACET-style choice (after the PRISM paper's geometric mean of ratios against an SLA)
    An SLA is ``{latency_max, cost_max, quality_min, weights: {latency, cost, quality},
    cap: 2.0}`` (weights default to 1 each, cap to 2.0). For a row with ``latency``, ``cost``
    and ``quality``:

        r_latency = min(cap, latency_max / latency)      (latency = 0 -> cap)
        r_cost    = min(cap, cost_max / cost)            (cost = 0    -> cap)
        r_quality = min(cap, max(0, quality) / quality_min)

        score = exp( sum_d w_d * ln(r_d) / sum_d w_d )   (score = 0 if some r_d = 0 with w_d > 0)

    i.e. the weighted geometric mean of the capped ratios. An SLA with ``energy_max`` (joules
    per answer) adds r_energy = min(cap, energy_max / energy) as a fourth dimension, for rows
    whose energy was measured. A ratio >= 1 means the bound is met
    on that dimension; the cap stops a very fast or very cheap row from buying back quality
    below the floor without limit. The score alone does not decide: ``facet_choice`` keeps only
    rows that meet every bound (latency <= latency_max, cost <= cost_max,
    quality >= quality_min) and picks the highest score among them (the first in input order
    on a tie), or None when no row meets the SLA. Ceilings and the floor must be > 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

DEFAULT_CAP = 2.0


# --- bootstrap -------------------------------------------------------------------------------

def _apply_stat(stat: Callable, samples: np.ndarray) -> np.ndarray:
    """``stat`` over each row of ``samples``: vectorised when it takes ``axis``, else a loop."""
    try:
        out = np.asarray(stat(samples, axis=1), dtype=float)
        if out.shape == (samples.shape[0],):
            return out
    except TypeError:
        pass
    return np.array([float(stat(row)) for row in samples])


def bootstrap_ci(values: Iterable[float], stat: Callable = np.mean, n: int = 2000, seed: int = 0,
                 level: float = 0.95) -> dict[str, float | int | None]:
    """Percentile bootstrap interval of ``stat`` over ``values``.

    Returns ``{"estimate": stat(values), "low", "high", "n": len(values)}``. ``n`` resamples of
    the same size are drawn with replacement from a generator seeded with ``seed``, so a call
    is reproducible. Empty ``values`` give None for the estimate and both bounds; one value
    gives an interval of width 0.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if n < 1:
        raise ValueError(f"n (resamples) must be >= 1, got {n}")
    x = np.asarray(list(values), dtype=float)
    if x.size == 0:
        return {"estimate": None, "low": None, "high": None, "n": 0}
    estimate = float(stat(x))
    rng = np.random.default_rng(seed)
    samples = x[rng.integers(0, x.size, size=(n, x.size))]
    stats = _apply_stat(stat, samples)
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(stats, [alpha, 1.0 - alpha])
    return {"estimate": estimate, "low": float(low), "high": float(high), "n": int(x.size)}


def paired_difference(a: Mapping[Hashable, float], b: Mapping[Hashable, float], n: int = 2000,
                      seed: int = 0, level: float = 0.95) -> dict[str, float | int | None]:
    """Mean of ``a[id] - b[id]`` over the ids in both, with a bootstrap interval that resamples
    the questions (ids). ``None`` values count as missing for that id.

    Returns ``{"mean_diff", "low", "high", "n"}``; ``n`` is the number of shared ids. A
    positive ``mean_diff`` means ``a`` scored higher. No shared id gives None figures.
    """
    shared = [k for k in a if k in b and a[k] is not None and b[k] is not None]
    try:
        shared.sort()
    except TypeError:  # ids of mixed types: keep a's order (still deterministic)
        pass
    diffs = [float(a[k]) - float(b[k]) for k in shared]
    ci = bootstrap_ci(diffs, np.mean, n=n, seed=seed, level=level)
    return {"mean_diff": ci["estimate"], "low": ci["low"], "high": ci["high"], "n": ci["n"]}


# --- agreement -------------------------------------------------------------------------------

def _check_pair(y_true: Sequence, y_pred: Sequence) -> tuple[list, list]:
    y_true, y_pred = list(y_true), list(y_pred)
    if len(y_true) != len(y_pred):
        raise ValueError(f"label lists differ in length: {len(y_true)} vs {len(y_pred)}")
    return y_true, y_pred


def accuracy(y_true: Sequence[Hashable], y_pred: Sequence[Hashable]) -> float | None:
    """Share of positions where the two label lists agree; None when they are empty."""
    y_true, y_pred = _check_pair(y_true, y_pred)
    if not y_true:
        return None
    return sum(t == p for t, p in zip(y_true, y_pred)) / len(y_true)


def _labels(y_true: list, y_pred: list, labels: Sequence[Hashable] | None) -> list:
    if labels is not None:
        labels = list(labels)
        unknown = sorted({str(v) for v in y_true + y_pred if v not in labels})
        if unknown:
            raise ValueError(f"labels not in {labels}: {', '.join(unknown)}")
        return labels
    seen = list(dict.fromkeys(y_true + y_pred))
    try:
        return sorted(seen)
    except TypeError:
        return seen


def confusion_matrix(y_true: Sequence[Hashable], y_pred: Sequence[Hashable],
                     labels: Sequence[Hashable] | None = None) -> dict[Hashable, dict[Hashable, int]]:
    """Counts as ``{true_label: {predicted_label: count}}``, every label in both levels (zeros
    included). ``labels`` fixes the order; by default the sorted labels that occur. A value
    outside ``labels`` raises ValueError."""
    y_true, y_pred = _check_pair(y_true, y_pred)
    labels = _labels(y_true, y_pred, labels)
    matrix = {t: {p: 0 for p in labels} for t in labels}
    for t, p in zip(y_true, y_pred):
        matrix[t][p] += 1
    return matrix


def cohen_kappa(y_true: Sequence[Hashable], y_pred: Sequence[Hashable],
                labels: Sequence[Hashable] | None = None) -> float | None:
    """Cohen's kappa, (p_o - p_e) / (1 - p_e); see the module docstring. None when empty;
    1.0 when p_e = 1 (both raters used one and the same label throughout)."""
    y_true, y_pred = _check_pair(y_true, y_pred)
    if not y_true:
        return None
    matrix = confusion_matrix(y_true, y_pred, labels)
    total = len(y_true)
    p_o = sum(matrix[k][k] for k in matrix) / total
    p_e = sum((sum(matrix[k].values()) / total) * (sum(row[k] for row in matrix.values()) / total)
              for k in matrix)
    if math.isclose(p_e, 1.0):
        return 1.0
    return (p_o - p_e) / (1.0 - p_e)


# --- judge scores ----------------------------------------------------------------------------

def score_rates(scores: Iterable[float | None]) -> dict[str, float | int | None]:
    """The HDRR rubric's summary of 1..10 scores: ``average``, ``failure_rate`` P(s=1),
    ``correctness`` P(s>=8), ``perfect_rate`` P(s=10) and ``n``. None scores are skipped;
    no scores give None rates and n = 0."""
    s = np.asarray([float(v) for v in scores if v is not None], dtype=float)
    if s.size == 0:
        return {"average": None, "failure_rate": None, "correctness": None,
                "perfect_rate": None, "n": 0}
    return {"average": float(s.mean()), "failure_rate": float(np.mean(s <= 1)),
            "correctness": float(np.mean(s >= 8)), "perfect_rate": float(np.mean(s >= 10)),
            "n": int(s.size)}


# --- choosing a configuration ----------------------------------------------------------------

def _number(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


def _dominates(a: Sequence[float], b: Sequence[float]) -> bool:
    """a, b already oriented so that larger is better on every position."""
    return all(x >= y for x, y in zip(a, b)) and any(x > y for x, y in zip(a, b))


def pareto_front(rows: Iterable[Mapping[str, Any]], maximize: Sequence[str] = ("quality",),
                 minimize: Sequence[str] = ("cost", "latency")) -> list[Mapping[str, Any]]:
    """The rows no other row dominates, in input order (ties and duplicates all kept; rows
    lacking an objective left out). See the module docstring for the dominance rule."""
    keys = [(k, 1.0) for k in maximize] + [(k, -1.0) for k in minimize]
    if not keys:
        raise ValueError("no objectives given")
    usable: list[tuple[Mapping[str, Any], list[float]]] = []
    for row in rows:
        values = [_number(row.get(k)) for k, _ in keys]
        if any(v is None for v in values):
            continue
        usable.append((row, [sign * v for (_, sign), v in zip(keys, values)]))
    return [row for row, point in usable
            if not any(_dominates(other, point) for _, other in usable)]


def _dims(sla: Mapping[str, Any]) -> tuple[str, ...]:
    """The SLA's dimensions: latency, cost, quality, and energy when it sets ``energy_max``."""
    return ("latency", "cost", "quality") + (("energy",) if sla.get("energy_max") is not None
                                             else ())


def _sla_terms(sla: Mapping[str, Any]) -> tuple[float, float, float, dict[str, float], float]:
    bounds = []
    for key in ("latency_max", "cost_max", "quality_min") + (
            ("energy_max",) if "energy" in _dims(sla) else ()):
        value = _number(sla.get(key))
        if value is None or value <= 0:
            raise ValueError(f"SLA needs {key} > 0, got {sla.get(key)!r}")
        bounds.append(value)
    given = sla.get("weights") or {}
    weights = {d: float(given.get(d, 1.0)) for d in _dims(sla)}
    if any(w < 0 for w in weights.values()) or sum(weights.values()) <= 0:
        raise ValueError(f"SLA weights must be >= 0 and not all 0, got {weights}")
    cap = _number(sla.get("cap", DEFAULT_CAP))
    if cap is None or cap < 1:
        raise ValueError(f"SLA cap must be >= 1, got {sla.get('cap')!r}")
    return bounds[0], bounds[1], bounds[2], weights, cap


def _row_metrics(row: Mapping[str, Any]) -> tuple[float, float, float]:
    values = []
    for key in ("latency", "cost", "quality"):
        value = _number(row.get(key))
        if value is None:
            raise ValueError(f"row has no numeric {key!r}: {dict(row)!r}")
        values.append(value)
    latency, cost, quality = values
    if latency < 0 or cost < 0:
        raise ValueError(f"negative latency or cost in row {dict(row)!r}")
    return latency, cost, quality


def facet_ratios(row: Mapping[str, Any], sla: Mapping[str, Any]) -> dict[str, float]:
    """The capped ratios ``{latency, cost, quality}`` of a row against an SLA (formula in the
    module docstring); a ratio >= 1 means that bound is met."""
    latency_max, cost_max, quality_min, _, cap = _sla_terms(sla)
    latency, cost, quality = _row_metrics(row)
    out = {"latency": cap if latency == 0 else min(cap, latency_max / latency),
           "cost": cap if cost == 0 else min(cap, cost_max / cost),
           "quality": min(cap, max(0.0, quality) / quality_min)}
    if "energy" in _dims(sla):
        energy = _energy(row)
        out["energy"] = cap if energy == 0 else min(cap, float(sla["energy_max"]) / energy)
    return out


def _energy(row: Mapping[str, Any]) -> float:
    value = _number(row.get("energy"))
    if value is None or value < 0:
        raise ValueError(f"the SLA has energy_max but the row has no measured energy: "
                         f"{dict(row)!r}")
    return value


def facet_score(row: Mapping[str, Any], sla: Mapping[str, Any]) -> float:
    """Weighted geometric mean of the row's capped SLA ratios (module docstring); 0 when a
    dimension with a positive weight has ratio 0 (quality 0)."""
    _, _, _, weights, _ = _sla_terms(sla)
    ratios = facet_ratios(row, sla)
    total = sum(weights.values())
    log_sum = 0.0
    for dim, w in weights.items():
        if w == 0:
            continue
        if ratios[dim] <= 0:
            return 0.0
        log_sum += w * math.log(ratios[dim])
    return math.exp(log_sum / total)


def meets_sla(row: Mapping[str, Any], sla: Mapping[str, Any]) -> bool:
    """latency <= latency_max, cost <= cost_max and quality >= quality_min."""
    latency_max, cost_max, quality_min, _, _ = _sla_terms(sla)
    latency, cost, quality = _row_metrics(row)
    energy_ok = "energy" not in _dims(sla) or _energy(row) <= float(sla["energy_max"])
    return latency <= latency_max and cost <= cost_max and quality >= quality_min and energy_ok


def facet_choice(rows: Iterable[Mapping[str, Any]], sla: Mapping[str, Any]) -> dict[str, Any]:
    """Score every row against the SLA and choose among the rows that meet every bound.

    Returns ``{"best": row | None, "scored": [{"row", "score", "ratios", "meets_sla"}, ...]}``
    with ``scored`` in input order. ``best`` is the highest-scoring row meeting the SLA (the
    first one on a tie), None when no row meets it (or there are no rows).
    """
    scored = [{"row": row, "score": facet_score(row, sla), "ratios": facet_ratios(row, sla),
               "meets_sla": meets_sla(row, sla)} for row in rows]
    best = None
    for entry in scored:
        if entry["meets_sla"] and (best is None or entry["score"] > best["score"]):
            best = entry
    return {"best": None if best is None else best["row"], "scored": scored}


def agreement_ci(human: Sequence[Hashable], judged: Sequence[Hashable],
                 clusters: Sequence[Hashable], labels: Sequence[Hashable] | None = None,
                 n: int = 2000, seed: int = 0, level: float = 0.95) -> dict[str, dict]:
    """Accuracy and Cohen's kappa of two label lists with percentile bootstrap intervals that
    resample whole clusters (e.g. questions: the answers of one question are not independent).

    Returns ``{"accuracy": {estimate, low, high, n}, "kappa": {…}}``; ``n`` counts rows."""
    human, judged = _check_pair(human, judged)
    if len(clusters) != len(human):
        raise ValueError(f"{len(clusters)} clusters for {len(human)} rows")
    by: dict[Hashable, list[int]] = {}
    for i, c in enumerate(clusters):
        by.setdefault(c, []).append(i)
    groups = list(by.values())
    out = {"accuracy": accuracy(human, judged), "kappa": cohen_kappa(human, judged, labels)}
    if not human:
        return {k: {"estimate": None, "low": None, "high": None, "n": 0} for k in out}
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float]] = {k: [] for k in out}
    for _ in range(n):
        idx = [i for g in rng.integers(0, len(groups), size=len(groups)) for i in groups[g]]
        h = [human[i] for i in idx]
        j = [judged[i] for i in idx]
        draws["accuracy"].append(accuracy(h, j))
        k = cohen_kappa(h, j, labels)
        if k is not None:
            draws["kappa"].append(k)
    alpha = (1.0 - level) / 2.0
    result = {}
    for key, estimate in out.items():
        vals = np.asarray(draws[key], dtype=float)
        low, high = (np.quantile(vals, [alpha, 1 - alpha]) if vals.size else (None, None))
        result[key] = {"estimate": estimate, "low": None if low is None else float(low),
                       "high": None if high is None else float(high), "n": len(human)}
    return result
