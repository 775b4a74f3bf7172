"""Helpers the CLI verbs share: JSON output, tables, colour, time arguments."""

from __future__ import annotations

import os
import re
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any

_COLORS = ["\033[32m", "\033[34m", "\033[35m", "\033[36m", "\033[33m", "\033[92m", "\033[94m", "\033[95m"]
_RESET = "\033[0m"
_RELATIVE = r"^(\d+(?:\.\d+)?)\s*([smhd])$"  # compiled on first use


def print_json(data: Any) -> None:
    """Prints ``data`` as indented JSON on stdout."""
    import json  # only when asked for: most commands print text

    print(json.dumps(data, indent=2, default=str, ensure_ascii=False))


def print_table(rows: list[list[str]], header: list[str]) -> None:
    """Prints rows in aligned columns."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def use_color(stream: Any = sys.stdout) -> bool:
    """True when ``stream`` is a terminal and ``NO_COLOR`` is unset."""
    return hasattr(stream, "isatty") and stream.isatty() and not os.environ.get("NO_COLOR")


def color_prefix(prefix: str, index: int, enabled: bool) -> str:
    """``prefix`` in the ``index``-th colour when ``enabled``."""
    return f"{_COLORS[index % len(_COLORS)]}{prefix}{_RESET}" if enabled else prefix


def parse_time(value: str) -> datetime:
    """Reads ``--since``/``--until``: ISO-8601 (``2026-01-02T03:04:05``), a unix timestamp,
    or a duration ago (``30s``, ``10m``, ``2h``, ``1d``).

    Raises:
        ValueError: none of those
    """
    from datetime import datetime, timedelta, timezone  # only --since/--until need it

    text = value.strip()
    forms = "use ISO-8601 (2026-01-02T03:04:05), a unix timestamp, or 30s/10m/2h/1d"
    out_of_range = f"time {value!r} is out of range: give a time between the years 1 and 9999 ({forms})"
    match = re.fullmatch(_RELATIVE, text)
    if match:
        amount, unit = float(match.group(1)), match.group(2)
        seconds = amount * {"s": 1, "m": 60, "h": 3600, "d": 86400}[unit]
        try:
            return datetime.now(timezone.utc) - timedelta(seconds=seconds)
        except OverflowError:
            raise ValueError(out_of_range) from None
    try:
        stamp = float(text)
    except ValueError:
        pass
    else:
        try:
            return datetime.fromtimestamp(stamp, timezone.utc)
        except (OverflowError, OSError, ValueError):  # too large, not finite, before year 1
            raise ValueError(out_of_range) from None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"cannot read time {value!r}: {forms}") from None
    try:
        return parsed if parsed.tzinfo else parsed.astimezone()
    except (OverflowError, OSError, ValueError):
        raise ValueError(out_of_range) from None
