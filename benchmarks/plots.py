"""Two small plots every benchmark comparison uses (matplotlib, Agg backend; the ``bench`` extra).

- :func:`ratio_bars`: each system's score divided by the baseline's, as horizontal bars around a line at 1×;
- :func:`cost_quality`: cost (seconds per question or topic, log scale) against a quality score, one numbered
  point per system named in a key, the baseline drawn apart.

Both write a PNG of a few tens of KiB (small figure, 90 dpi) and return its path.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DPI = 90
BASE_COLOUR = "#8a93a6"
UP_COLOUR = "#1c7c54"
DOWN_COLOUR = "#b42318"
POINT_COLOUR = "#1f5fbf"


@dataclass(frozen=True)
class Ratio:
    """One bar: ``value / baseline`` of a system under ``label`` (``group`` names the measure when several)."""

    label: str
    value: float
    baseline: float
    group: str = ""

    @property
    def ratio(self) -> float | None:
        return self.value / self.baseline if self.baseline else None


@dataclass(frozen=True)
class Point:
    label: str
    cost: float
    quality: float
    baseline: bool = False


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, out: Path) -> Path:
    plt = _pyplot()
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=DPI, metadata={"Software": None})  # no version stamp: reruns give the same bytes
    plt.close(fig)
    return out


def _wrap(text: str, width: int = 44) -> str:
    return "\n".join(textwrap.wrap(text, width)) or text


def ratio_bars(bars: Sequence[Ratio], out: Path, *, title: str, xlabel: str) -> Path:
    """Horizontal bars of ``value / baseline`` (a bar without a baseline is left out), one row per bar,
    labelled with the ratio and the raw score; bars of several ``group``s are coloured by group."""
    shown = [b for b in bars if b.ratio is not None]
    if not shown:
        raise ValueError(f"nothing to plot for {out.name}: no bar has a non-zero baseline")
    plt = _pyplot()
    groups = list(dict.fromkeys(b.group for b in shown))
    palette = plt.get_cmap("tab10")
    labels = [_wrap(f"{b.label} · {b.group}" if len(groups) > 1 else b.label) for b in shown]
    rows = sum(max(1, lab.count("\n") + 1) for lab in labels)
    fig, ax = plt.subplots(figsize=(8.5, 1.0 + 0.2 * rows + 0.12 * len(shown)), dpi=DPI)
    ys = list(range(len(shown)))[::-1]
    for y, b in zip(ys, shown, strict=True):
        r = b.ratio or 0.0
        colour = palette(groups.index(b.group)) if len(groups) > 1 else (UP_COLOUR if r >= 1 else DOWN_COLOUR)
        ax.barh(y, r - 1, left=1, height=0.62, color=colour, alpha=0.85)
        ax.annotate(f"{r:.2f}× ({b.value:.3f})", (max(r, 1), y), xytext=(4, 0), textcoords="offset points",
                    va="center", fontsize=7)
    ax.axvline(1.0, color="#333", linewidth=0.8)
    ax.set_yticks(ys, labels, fontsize=7)
    lo = min(1.0, *(b.ratio or 1.0 for b in shown))
    hi = max(1.0, *(b.ratio or 1.0 for b in shown))
    span = max(hi - lo, 0.2)
    ax.set_xlim(max(0.0, lo - 0.08 * span), hi + 0.4 * span)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_title(_wrap(title, 90), fontsize=9, loc="left")
    ax.tick_params(axis="x", labelsize=7)
    ax.grid(True, axis="x", alpha=0.3)
    return _save(fig, out)


def cost_quality(points: Sequence[Point], out: Path, *, title: str, xlabel: str, ylabel: str) -> Path:
    """A scatter of cost (log x) against quality; each point is numbered and named in the key on the right,
    baselines in grey."""
    if not points:
        raise ValueError(f"nothing to plot for {out.name}: no points")
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8.5, 4.0), dpi=DPI)
    for i, p in enumerate(points, start=1):
        x = max(p.cost, 1e-6)
        ax.scatter([x], [p.quality], s=30, marker="s" if p.baseline else "o",
                   color=BASE_COLOUR if p.baseline else POINT_COLOUR, zorder=3,
                   label=_wrap(f"{i}  {p.label}" + (" (baseline)" if p.baseline else ""), 46))
        ax.annotate(str(i), (x, p.quality), xytext=(4, 3), textcoords="offset points", fontsize=7, color="#3d4656")
    ax.set_xscale("log")
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.set_title(_wrap(title, 70), fontsize=9, loc="left")
    ax.tick_params(labelsize=7)
    ax.grid(True, which="both", alpha=0.3)
    qs = [p.quality for p in points]
    pad = max(0.01, 0.12 * (max(qs) - min(qs)))
    ax.set_ylim(min(qs) - pad, max(qs) + pad)
    cs = [max(p.cost, 1e-6) for p in points]
    ax.set_xlim(min(cs) / 2, max(cs) * 2)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=6.5, frameon=False, handletextpad=0.3,
              labelspacing=0.5)
    return _save(fig, out)
