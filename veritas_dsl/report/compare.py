"""The report of ``ver compare``: a table of engines per query, and a plot of anytime bounds."""

from __future__ import annotations

import math
from pathlib import Path

from veritas_dsl.compare import Comparison
from veritas_dsl.errors import UserError
from veritas_dsl.result import Result


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.6g}"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}s"


def time_to_first(result: Result, kind: str) -> float | None:
    """When the engine first had a solution: a finite bound on the solution's side."""
    if kind in ("find", "prove"):
        return result.time_s if result.witnesses else None
    side = "lower" if kind == "maximize" else "upper"
    for point in result.trace:
        if math.isfinite(getattr(point, side)):
            return point.time_s
    value = getattr(result, side)
    return result.time_s if value is not None and math.isfinite(value) else None


def time_to_exact(result: Result) -> float | None:
    """When the bounds met (or the engine proved its answer), or None if they never did."""
    if not result.exact:
        return None
    for point in result.trace:
        if point.lower == point.upper:
            return point.time_s
    return result.time_s


def table(comparisons: list[Comparison]) -> str:
    header = ["query", "engine", "status", "lower", "upper", "first", "exact", "time"]
    rows = []
    for comparison in comparisons:
        name = comparison.name
        for engine, result in comparison.results.items():
            rows.append(
                [
                    name,
                    engine,
                    result.termination.value,
                    _fmt(result.lower),
                    _fmt(result.upper),
                    _seconds(time_to_first(result, comparison.kind)),
                    _seconds(time_to_exact(result)),
                    _seconds(result.time_s),
                ]
            )
            name = ""
        for engine, reason in comparison.skipped.items():
            rows.append([name, engine, "unsupported", "-", "-", "-", "-", reason])
            name = ""
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows, strict=True)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines += [
        "  ".join(str(x).ljust(w) for x, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]
    return "\n".join(lines)


def plot(comparisons: list[Comparison], path: str | Path, title: str = "") -> int:
    """Draw lower (solid) and upper (dashed) bounds over time, a panel per query with bounds,
    under ``title`` (the spec's path).

    Returns the number of panels drawn. Needs matplotlib (``pip install 'veritas-dsl[plot]'``).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import NullFormatter
    except ImportError:
        raise UserError("plotting needs matplotlib: pip install 'veritas-dsl[plot]'") from None
    panels = [c for c in comparisons if c.kind not in ("find", "prove") and _finite(c)]
    if not panels:
        return 0
    columns = min(3, len(panels))
    rows = math.ceil(len(panels) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(5 * columns, 4.2 * rows), squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for axis, comparison in zip(axes.flat, panels, strict=False):
        for k, (engine, result) in enumerate(comparison.results.items()):
            times, lower, upper = _series(result)
            if all(math.isnan(v) for v in lower + upper):
                continue  # nothing known before the limit: nothing to draw
            colour = colours[k % len(colours)]
            axis.step(times, lower, where="post", color=colour, label=f"{engine} lower")
            axis.step(
                times, upper, where="post", color=colour, linestyle="--", label=f"{engine} upper"
            )
            # The final answer as markers, so that an engine without a trace still shows.
            axis.plot(times[-1:], lower[-1:], marker="^", color=colour, linestyle="none")
            axis.plot(times[-1:], upper[-1:], marker="v", color=colour, linestyle="none")
        limits = y_limits(comparison)
        if limits is not None:
            axis.set_ylim(*limits)
        axis.ticklabel_format(axis="y", useOffset=False)  # values as written, no "1e-15+0.16"
        axis.set_xscale("log")
        axis.xaxis.set_minor_formatter(NullFormatter())
        axis.set_title(f"query {comparison.name}", fontsize=10)
        axis.set_xlabel("time (s)")
        axis.set_ylabel("bound")
        # below the axes, out of the curves' way
        axis.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=2)
    for axis in list(axes.flat)[len(panels) :]:
        axis.set_visible(False)
    if title:
        figure.suptitle(title, fontsize=11)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return len(panels)


#: The y-axis shows bounds up to this many final gaps beyond the final answers.
_GAPS_SHOWN = 10.0


def y_limits(comparison: Comparison) -> tuple[float, float] | None:
    """The y-range of a panel, or None when no engine has a finite bound.

    An early bound far from the answer (MILP's first LP bound, say) would squash the curves
    where they converge, so the axis stops ``_GAPS_SHOWN`` final gaps beyond the final bounds
    of all engines (10 % of their size when every engine closed its gap). It spans at least
    ``_FLOOR`` of the answers' size, so that bounds equal but for float noise are one line in
    the middle of the panel, not ticks of 1e-15."""
    finals = [
        b
        for r in comparison.results.values()
        for b in (r.lower, r.upper)
        if b is not None and math.isfinite(b)
    ]
    points = [
        v
        for r in comparison.results.values()
        for series in _series(r)[1:]
        for v in series
        if not math.isnan(v)
    ]
    if not finals or not points:
        return None
    low, high = min(finals), max(finals)
    size = max(abs(low), abs(high), 1e-9)
    gap = high - low if high - low > _FLOOR * size else 0.1 * max(size, 1.0)
    bottom = max(min(points), low - _GAPS_SHOWN * gap)
    top = min(max(points), high + _GAPS_SHOWN * gap)
    if top - bottom < _FLOOR * size:
        middle = (low + high) / 2
        bottom, top = middle - _FLOOR * size / 2, middle + _FLOOR * size / 2
    pad = 0.05 * (top - bottom)
    return bottom - pad, top + pad


#: The least height of a panel's y-range, relative to the size of the answers.
_FLOOR = 0.01


def _finite(comparison: Comparison) -> bool:
    bounds = [b for r in comparison.results.values() for b in (r.lower, r.upper)]
    return any(b is not None and math.isfinite(b) for b in bounds)


def _series(result: Result):
    """The trace as step series; infinite bounds are left out (nan), a lone result is one point."""
    points = list(result.trace) or []
    times = [max(p.time_s, 1e-6) for p in points]
    lower = [p.lower for p in points]
    upper = [p.upper for p in points]
    times.append(max(result.time_s, times[-1] if times else 1e-6, 1e-6))
    lower.append(result.lower)
    upper.append(result.upper)
    clean = [v if v is not None and math.isfinite(v) else math.nan for v in lower]
    clean_upper = [v if v is not None and math.isfinite(v) else math.nan for v in upper]
    return times, clean, clean_upper
