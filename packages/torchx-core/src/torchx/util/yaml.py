"""A tiny YAML emitter for plain data (dicts, lists, strings, numbers, booleans, None).

The core does not depend on PyYAML; this writes the block style humans read and any YAML
parser loads back to the same data.
"""

from __future__ import annotations

import json
import re
from typing import Any

_PLAIN = r"^[A-Za-z_/][A-Za-z0-9_./@+\-]*$"  # compiled on first use
_YAML_BREAKS = ("\u2028", "\u2029", "\u0085", "\ufeff")
_RESERVED = {"true", "false", "yes", "no", "on", "off", "null", "none", "~", "y", "n"}


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    text = str(value)
    if re.match(_PLAIN, text) and text.lower() not in _RESERVED:
        return text
    quoted = json.dumps(text, ensure_ascii=False)
    # YAML readers fold these as line breaks (or drop the BOM): keep them escaped
    for char in _YAML_BREAKS:
        quoted = quoted.replace(char, f"\\u{ord(char):04x}")
    return quoted


def _emit(value: Any, indent: int, out: list[str]) -> None:
    pad = "  " * indent
    if isinstance(value, dict):
        if not value:
            out[-1] += " {}"
            return
        for key, item in value.items():
            out.append(f"{pad}{_scalar(key)}:")
            if isinstance(item, (dict, list)) and item:
                _emit(item, indent + 1, out)
            elif isinstance(item, (dict, list)):
                out[-1] += " {}" if isinstance(item, dict) else " []"
            else:
                out[-1] += " " + _scalar(item)
    elif isinstance(value, list):
        if not value:
            out[-1] += " []"
            return
        for item in value:
            if isinstance(item, (dict, list)) and item:
                out.append(f"{pad}-")
                _emit(item, indent + 1, out)
            elif isinstance(item, dict):
                out.append(f"{pad}- {{}}")
            elif isinstance(item, list):
                out.append(f"{pad}- []")
            else:
                out.append(f"{pad}- {_scalar(item)}")
    else:
        out.append(pad + _scalar(value))


def dump(value: Any) -> str:
    """Renders ``value`` as a YAML document."""
    if not isinstance(value, (dict, list)) or not value:
        return (_scalar(value) if not isinstance(value, (dict, list)) else json.dumps(value)) + "\n"
    lines: list[str] = []
    _emit(value, 0, lines)
    return "\n".join(lines) + "\n"
