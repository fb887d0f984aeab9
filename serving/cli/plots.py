"""Plots the CLI draws for a person: a metric's values per period from a facts answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def plot_facts(facts: list[dict[str, Any]], path: str | Path, title: str = "") -> bool:
    """One line per (company, metric) over its periods; False when there is nothing to draw."""
    series: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for f in facts:
        series.setdefault((f["company"], f["label"]), []).append(f)
    if not any(len(points) > 1 for points in series.values()):
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    units = {f["unit"] for f in facts}
    scale, unit_label = (1e9, "USD billions") if units == {"USD"} else (1.0, ", ".join(sorted(units)))
    for (company, label), points in series.items():
        points = sorted(points, key=lambda f: f["end"])
        names = [f"FY{f['fiscal_year']}" + (f" Q{f['fiscal_quarter']}" if f["period"] == "Q" else "")
                 for f in points]
        values = [f["value"] / scale for f in points]
        ax.plot(names, values, marker="o", label=f"{company}: {label}")
        for x, y, f in zip(names, values, points):
            ax.annotate(f"{y:,.1f}" + ("*" if f.get("derived") else ""), (x, y),
                        textcoords="offset points", xytext=(0, 6), ha="center", fontsize=8)
    ax.set_ylabel(unit_label)
    ax.set_title(title[:90], fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.text(0.01, 0.01, "Source: SEC XBRL facts; periods on each company's own fiscal calendar"
             + ("; * derived" if any(f.get("derived") for f in facts) else ""), fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True
