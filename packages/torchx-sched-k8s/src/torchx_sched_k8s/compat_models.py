"""Manifests (plain dicts, as the API server reads them) as ``kubernetes.client`` model objects.

Only the upstream-compatible module paths (``compat_kubernetes*``) use this: TorchX's
``role_to_pod``/``mcad_svc`` return ``V1Pod``/``V1Service`` objects. The scheduler itself
builds and sends plain data and never imports the ``kubernetes`` package.
"""

from __future__ import annotations

import re
from typing import Any

#: ``List[X]`` (clients >= 35) or ``list[X]`` (older generated clients)
_LIST = re.compile(r"^[Ll]ist\[(.+)\]$")
#: ``Dict[str, X]`` (clients >= 35) or ``dict(str, X)`` (older generated clients)
_DICT = re.compile(r"^(?:Dict\[str, (.+)\]|dict\(str, (.+)\))$")
_PLAIN = {"str", "int", "float", "bool", "object", "date", "datetime", "Any", "StrictStr", "StrictInt"}


def to_model(data: Any, type_name: str) -> Any:
    """``data`` (a manifest fragment with the API's camelCase keys) as the ``kubernetes.client``
    model named ``type_name`` (``"V1Pod"``), nested objects included; keys the model does not
    know are dropped."""
    if data is None:
        return None
    if match := _LIST.match(type_name):
        return [to_model(item, match.group(1)) for item in data]
    if match := _DICT.match(type_name):
        inner = match.group(1) or match.group(2)
        return {key: to_model(value, inner) for key, value in data.items()}
    if type_name in _PLAIN:
        return data
    from kubernetes.client import models  # the compat path only: the scheduler never needs it

    cls = getattr(models, type_name)
    kwargs = {
        attr: to_model(data[key], cls.openapi_types[attr]) for attr, key in cls.attribute_map.items() if key in data
    }
    return cls(**kwargs)
