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


def to_manifest(data: Any) -> Any:
    """``data`` with every ``kubernetes.client`` model in it (at any depth) as the plain manifest
    the API server reads: camelCase keys, attributes that are None left out (as the client
    serializes a model); plain values, dicts and lists as they are (copied)."""
    if data is None or isinstance(data, (str, int, float, bool)):
        return data
    if isinstance(data, dict):
        return {key: to_manifest(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [to_manifest(item) for item in data]
    attribute_map = getattr(type(data), "attribute_map", None)
    if isinstance(attribute_map, dict):
        values = ((key, getattr(data, attr)) for attr, key in attribute_map.items())
        return {key: to_manifest(value) for key, value in values if value is not None}
    return data


#: generic item kind -> the model TorchX's AppWrapper holds it as
_GENERIC_MODELS = {"Pod": "V1Pod", "Service": "V1Service"}


def as_torchx_resource(obj: dict[str, Any]) -> dict[str, Any]:
    """The Volcano Job or AppWrapper ``obj`` in the shape of TorchX's ``KubernetesJob.resource``:
    a dict whose pod templates (Volcano tasks' ``template``, AppWrapper generic items' Pods and
    Service) are ``kubernetes.client`` models. The rest is ``obj``'s own dicts (shared). Without
    the ``kubernetes`` package ``obj`` itself."""
    try:
        import kubernetes.client  # noqa: F401  # the models need it; without it the plain manifest
    except ImportError:
        return obj
    spec = obj.get("spec") or {}
    if "tasks" in spec:
        tasks = [{**task, "template": to_model(task["template"], "V1Pod")} for task in spec["tasks"]]
        return {**obj, "spec": {**spec, "tasks": tasks}}
    resources = spec.get("resources") or {}
    if "GenericItems" in resources:
        items = []
        for item in resources["GenericItems"]:
            template = item.get("generictemplate") or {}
            model = _GENERIC_MODELS.get(str(template.get("kind")))
            items.append({**item, "generictemplate": to_model(template, model)} if model else item)
        return {**obj, "spec": {**spec, "resources": {**resources, "GenericItems": items}}}
    return obj
