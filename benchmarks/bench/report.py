"""Result rows, targets, and their rendering as a table or JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.timing import Stats

PASS, FAIL, SKIP, ERROR, INFO = "PASS", "FAIL", "skip", "error", "info"
#: widest ours/upstream cell; longer texts move to a numbered note
_CELL = 40


@dataclass
class Side:
    """One side (ours or upstream) of a row: timing stats, or a text in their place."""

    stats: Stats | None = None
    text: str | None = None

    @property
    def median(self) -> float | None:
        """The median in seconds, if measured."""
        return self.stats.median if self.stats else None

    def render(self) -> str:
        """Short form for the table."""
        if self.stats is not None:
            return f"{fmt_seconds(self.stats.median)} (p90 {fmt_seconds(self.stats.p90)})"
        return self.text or "-"


@dataclass
class Target:
    """A pass/fail target.

    ``kind``: ``ratio`` (upstream median / ours median >= value), ``max`` (ours median <=
    value seconds) or ``check`` (a yes/no outcome passed to :func:`row`).
    """

    kind: str
    value: float = 0.0
    label: str = ""

    def describe(self) -> str:
        """The target as shown in the table."""
        if self.label:
            return self.label
        if self.kind == "ratio":
            return f">= {self.value:g}x upstream"
        if self.kind == "max":
            return f"<= {fmt_seconds(self.value)}"
        return "yes"


@dataclass
class Row:
    """One line of the results table."""

    scenario: str
    title: str
    ours: Side
    upstream: Side
    target: Target | None
    status: str
    ratio: float | None = None
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def fmt_seconds(s: float) -> str:
    """``12.3 ms`` below one second, ``1.23 s`` above."""
    if s < 1:
        return f"{s * 1000:.1f} ms"
    return f"{s:.2f} s"


def row(
    scenario: str,
    title: str,
    ours: Side,
    upstream: Side,
    target: Target | None = None,
    check: bool | None = None,
    note: str = "",
    ours_skipped: bool = False,
) -> Row:
    """A row with its ratio and status computed from the target.

    Args:
        check: the outcome of a ``check`` target (or of a ``max`` target measured as a delta)
        ours_skipped: our side was skipped (a package is missing)
    """
    ratio = None
    if ours.median and upstream.median:
        ratio = upstream.median / ours.median
    if ours_skipped:
        status = SKIP
    elif (ours.text or "").startswith("error"):
        status = ERROR
    elif target is None:
        status = INFO
    elif check is not None:
        status = PASS if check else FAIL
    elif ours.median is None:
        status = ERROR
    elif target.kind == "ratio":
        if ratio is None:
            status = ERROR
        else:
            status = PASS if ratio >= target.value else FAIL
            if status == FAIL:
                need = upstream.median / target.value if upstream.median else 0.0
                note = _join(
                    note,
                    f"ratio {ratio:.2f}x: ours must drop to {fmt_seconds(need)}"
                    f" ({(ours.median - need) / ours.median:.0%} less)",
                )
    else:
        status = PASS if ours.median <= target.value else FAIL
        if status == FAIL:
            note = _join(
                note,
                f"over by {fmt_seconds(ours.median - target.value)}"
                f" (+{(ours.median - target.value) / target.value:.0%})",
            )
    return Row(scenario, title, ours, upstream, target, status, ratio, note)


def _join(a: str, b: str) -> str:
    return f"{a}; {b}" if a else b


def render_table(rows: list[Row]) -> str:
    """The results as an aligned text table followed by numbered notes."""
    header = ["#", "scenario", "ours median (p90)", "upstream median (p90)", "ratio", "target", "result"]
    body = []
    notes: dict[str, int] = {}

    def ref(text: str) -> str:
        return f"[{notes.setdefault(text, len(notes) + 1)}]"

    for r in rows:
        cells = [
            r.scenario,
            r.title,
            r.ours.render(),
            r.upstream.render(),
            f"{r.ratio:.1f}x" if r.ratio else "-",
            r.target.describe() if r.target else "-",
            r.status,
        ]
        for i in (2, 3):
            if len(cells[i]) > _CELL:
                cells[i] = cells[i][: _CELL - 6].rstrip() + f"… {ref(cells[i])}"
        if r.note:
            cells[6] += f" {ref(f'{r.scenario} {r.title.strip()}: {r.note}')}"
        body.append(cells)
    widths = [max(len(str(c[i])) for c in [header, *body]) for i in range(len(header))]
    lines = [
        "  ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=False)).rstrip() for cells in [header, *body]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join([*lines, "", *(f"[{n}] {text}" for text, n in notes.items())] if notes else lines)


def to_json(rows: list[Row]) -> list[dict[str, Any]]:
    """The rows as plain data (seconds as floats)."""
    out = []
    for r in rows:
        item: dict[str, Any] = {
            "scenario": r.scenario,
            "title": r.title,
            "status": r.status,
            "ratio": r.ratio,
            "target": r.target.describe() if r.target else None,
            "note": r.note,
            **r.extra,
        }
        for side_name, side in (("ours", r.ours), ("upstream", r.upstream)):
            item[side_name] = (
                {"median": side.stats.median, "p90": side.stats.p90, "n": side.stats.n}
                if side.stats
                else {"text": side.text}
            )
        out.append(item)
    return out
