"""``specs.cases``: converting names between snake_case and camelCase."""

from __future__ import annotations

import re

_HUMP = re.compile(r"([a-z0-9])([A-Z])")


class cases:
    """Name case conversions."""

    @staticmethod
    def snake_to_camel(name: str) -> str:
        """``max_retries`` -> ``maxRetries``."""
        first, *rest = name.split("_")
        return first + "".join(part.title() for part in rest)

    @staticmethod
    def camel_to_snake(name: str) -> str:
        """``maxRetries`` -> ``max_retries``."""
        return _HUMP.sub(r"\1_\2", name).lower()
