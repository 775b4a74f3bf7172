"""Overlays: scheduler request fields that :class:`~torchx.specs.AppDef` and
:class:`~torchx.specs.Role` cannot express, stored on the role (or app) and merged into
the scheduler's request when it is built.

A user attaches an overlay with :func:`set_overlay`; the scheduler reads it back with
:func:`get_overlay` and merges it into its request with :func:`apply_overlay`::

    from torchx.specs.overlays import set_overlay

    set_overlay(role, "kubernetes", "V1Pod", {"spec": {"nodeSelector": {"pool": "gpu"}}})
    set_overlay(role, "kubernetes", "V1Pod", {"spec": {"tolerations": [{"key": "gpu", "operator": "Exists"}]}})
    # role.metadata["kubernetes"]["V1Pod"] now holds both; every pod of the role gets them

Merge rules (the same for accumulating overlays and for applying one):

* a dict merges into a dict key by key, recursively;
* a list is appended to a list (a *tuple* replaces the list: the older spelling of ``PUT``);
* anything else replaces the value; a dict or list meeting a value of another type is a
  ``TypeError``.

Operators, used as keys, change the rule for one field: :func:`PUT` replaces the value,
:func:`JOIN` merges list items that share a key field, :func:`DEL` removes the field.
Setting a field to ``None`` sets it to null; only ``DEL`` removes it.

Schedulers that apply overlays: ``kubernetes`` (namespace ``"kubernetes"``, kind ``"V1Pod"``,
merged into every pod of the role, whatever the submission mode). The metadata value of a
namespace may also be a path or URI of a JSON/YAML file holding the overlays (``file://`` and
plain paths are read directly; other schemes need ``fsspec``; YAML needs ``PyYAML``).

A scheduler author declares an overlay once with :class:`OverlaySpec` (namespace, kind and the
keys that must be set through ``Role`` attributes instead), or calls :func:`get_overlay`,
:func:`validate_overlay` and :func:`apply_overlay` directly.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass
from typing import Any

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.specs.roles import AppDef, Role

__all__ = [
    "DEL",
    "JOIN",
    "PUT",
    "OverlaySpec",
    "apply_overlay",
    "get_overlay",
    "set_overlay",
    "validate_overlay",
]

logger: logging.Logger = logging.getLogger(__name__)

Overlay = dict[str, Any]

#: marks ``metadata[namespace]`` as written by :func:`set_overlay` (``{kind: overlay}``)
NESTED_MARKER = "__torchx_overlays__"

_PUT = "__put__:"
_JOIN = "__join__:"
_DEL = "__del__:"


def PUT(key: str) -> str:
    """Overlay key that replaces field ``key`` wholesale (a list is not appended to, a dict not merged)."""
    return _PUT + key


def JOIN(key: str, *, on: str) -> str:
    """Overlay key that merges the list field ``key`` item by item: an overlay item whose ``on``
    field equals a base item's has its fields copied onto that item; other items are appended.
    Both lists must hold dicts (``TypeError`` otherwise, when the overlay is applied)."""
    return f"{_JOIN}{key}:{on}"


def DEL(key: str) -> str:
    """Overlay key that removes field ``key`` from the base (the value is ignored; write ``None``)."""
    return _DEL + key


def field_name(key: str) -> str:
    """The field an overlay key is about (``PUT("x")``, ``JOIN("x", on=..)``, ``DEL("x")`` and ``"x"`` -> ``"x"``)."""
    for prefix in (_PUT, _DEL):
        if key.startswith(prefix):
            return key[len(prefix) :]
    if key.startswith(_JOIN):
        return key[len(_JOIN) :].partition(":")[0]
    return key


def _drop_field(base: Overlay, field: str, keep: str | None = None) -> None:
    """Removes every key of ``base`` about ``field`` (except the key ``keep``)."""
    for key in [k for k in base if k != keep and field_name(k) == field]:
        del base[key]


def _join(base: Overlay, key: str, items: object, field: str) -> None:
    on = key[len(_JOIN) :].partition(":")[2]
    if not on:
        raise ValueError(f"malformed JOIN key {key!r}: write it as JOIN(field, on=key_field)")
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise TypeError(f"JOIN({field!r}) needs a list of dicts, got {items!r}")
    _drop_field(base, field, keep=field)
    if field not in base:
        base[field] = copy.deepcopy(items)
        return
    current = base[field]
    if not isinstance(current, list) or not all(isinstance(i, dict) for i in current):
        raise TypeError(f"JOIN({field!r}) needs the base {field!r} to be a list of dicts, got {current!r}")
    by_key = {item[on]: item for item in current if on in item}
    for item in items:
        match = by_key.get(item[on]) if on in item else None
        if match is None:
            current.append(copy.deepcopy(item))
        else:
            match.update({k: copy.deepcopy(v) for k, v in item.items() if k != on})


def _merge(base: Overlay, key: str, value: object, resolve: bool) -> None:
    if key not in base:
        base[key] = list(value) if isinstance(value, tuple) else copy.deepcopy(value)
        return
    current = base[key]
    if isinstance(current, dict) and isinstance(value, dict):
        apply_overlay(current, value, _resolve=resolve)
    elif isinstance(current, list) and isinstance(value, tuple):
        base[key] = list(value)
    elif isinstance(current, list) and isinstance(value, list):
        current.extend(copy.deepcopy(value))
    elif isinstance(current, (dict, list)) or isinstance(value, (dict, list)):
        if type(current) is not type(value):
            raise TypeError(f"overlay field {key!r}: cannot merge {type(value).__name__} into {type(current).__name__}")
        base[key] = copy.deepcopy(value)
    else:
        base[key] = value


def apply_overlay(base: Overlay, overlay: Overlay, *, _resolve: bool = True) -> None:
    """Merges ``overlay`` into ``base`` in place (see the module's merge rules and operators).

    ``_resolve`` is internal: :func:`set_overlay` passes ``False`` to keep operator keys in the
    stored overlay (a later operator on the same field replaces an earlier one).

    Raises:
        TypeError: a dict or list meets a value of another type, or a JOIN meets non-dict items
        ValueError: a malformed JOIN key
    """
    for key, value in overlay.items():
        field = field_name(key)
        if _resolve and key != field:
            if key.startswith(_DEL):
                _drop_field(base, field)
            elif key.startswith(_PUT):
                _drop_field(base, field)
                base[field] = list(value) if isinstance(value, tuple) else copy.deepcopy(value)
            else:
                _join(base, key, value, field)
            continue
        _drop_field(base, field, keep=key)
        _merge(base, key, value, _resolve)


def _read_overlay_file(uri: str) -> Overlay:
    """The overlays in the JSON or YAML file ``uri`` (a path, ``file://`` URI or an fsspec URI)."""
    import json

    if "://" not in uri or uri.startswith("file://"):
        with open(uri.removeprefix("file://"), encoding="utf-8") as f:
            text = f.read()
    else:
        try:
            import fsspec
        except ImportError:
            raise ValueError(f"overlay file {uri!r}: reading this URI needs fsspec (pip install fsspec)") from None
        with fsspec.open(uri, "r") as f:
            text = f.read()
    try:
        data = json.loads(text)
    except ValueError:
        try:
            import yaml
        except ImportError:
            raise ValueError(f"overlay file {uri!r} is not JSON; reading YAML needs PyYAML") from None

        class _Loader(yaml.SafeLoader):  # type: ignore[misc]
            pass

        # ``!!python/tuple`` marks a list that replaces instead of appending
        _Loader.add_constructor(
            "tag:yaml.org,2002:python/tuple", lambda loader, node: tuple(loader.construct_sequence(node))
        )
        data = yaml.load(text, Loader=_Loader)  # a SafeLoader with one extra tag
    if not isinstance(data, dict):
        raise ValueError(f"overlay file {uri!r} must hold a mapping, got {type(data).__name__}")
    return data


def _check_kind(kind: str) -> None:
    if kind == NESTED_MARKER:
        raise ValueError(f"{NESTED_MARKER!r} is reserved and cannot be an overlay kind")


def set_overlay(target: AppDef | Role, namespace: str, kind: str, overlay: Overlay) -> None:
    """Adds ``overlay`` to ``target.metadata[namespace][kind]``; repeated calls accumulate with the
    merge rules (dicts merge, lists append, operators kept for when the overlay is applied).

    Args:
        target: the role (or app) the overlay is for
        namespace: the scheduler's overlay namespace (``"kubernetes"``)
        kind: the request type the overlay patches (``"V1Pod"``)
        overlay: the fields to set

    Raises:
        ValueError: ``kind`` is the reserved marker key
    """
    _check_kind(kind)
    metadata: dict[str, Any] = target.metadata
    nested = metadata.get(namespace)
    if not isinstance(nested, dict):
        if nested is not None:
            logger.warning("metadata[%r] held a %s; replacing it with overlays", namespace, type(nested).__name__)
        nested = metadata[namespace] = {}
    nested[NESTED_MARKER] = True
    stored = nested.get(kind)
    if not isinstance(stored, dict):
        stored = nested[kind] = {}
    apply_overlay(stored, overlay, _resolve=False)


def get_overlay(target: AppDef | Role, namespace: str, kind: str, *, flat_fallback: bool = True) -> Overlay:
    """The overlay of ``kind`` stored under ``target.metadata[namespace]`` (``{}`` if none).

    A string value is read as an overlay file (see the module doc). A namespace written by
    :func:`set_overlay` yields only what was set for ``kind``. A hand-written dict without the
    ``kind`` key (the older flat form ``metadata["kubernetes"] = {"spec": ...}``) is returned whole
    unless ``flat_fallback`` is False or it looks like several kinds (every value a dict).

    Raises:
        ValueError: ``kind`` is the reserved marker key, or an overlay file is unreadable
    """
    _check_kind(kind)
    value = target.metadata.get(namespace)
    if isinstance(value, str):
        value = _read_overlay_file(value)
    if not isinstance(value, dict) or not value:
        return {}
    found = value.get(kind)
    if isinstance(found, dict):
        return found
    if value.get(NESTED_MARKER) or not flat_fallback:
        return {}
    if len(value) > 1 and all(isinstance(v, dict) for v in value.values()):
        return {}
    logger.warning(
        "metadata[%r] has no %r overlay; using it whole as a flat overlay"
        " (write it with torchx.specs.overlays.set_overlay(target, %r, %r, overlay))",
        namespace,
        kind,
        namespace,
        kind,
    )
    return value


def validate_overlay(
    overlay: Overlay,
    *,
    blocklist: list[str] | None = None,
    forbidden_keys: set[str] | None = None,
    overlay_name: str = "overlay",
    suggestion: str = "",
) -> None:
    """Refuses an overlay that sets fields it must not (operator keys count as their field).

    Args:
        overlay: the overlay to check (its top-level keys)
        blocklist: fields set through ``Role``/``AppDef`` attributes instead
        forbidden_keys: fields that belong to another overlay kind
        overlay_name: the overlay kind, for the message
        suggestion: appended to the message about ``forbidden_keys``

    Raises:
        ValueError: a blocked or forbidden field is present
    """
    fields = [field_name(k) for k in overlay]
    blocked = [f for f in fields if blocklist and f in blocklist]
    if blocked:
        names = ", ".join(f"`{overlay_name}.{f}`" for f in blocked)
        raise ValueError(f"overlay sets {names}: set these through the role's attributes instead")
    misplaced = sorted(set(fields) & (forbidden_keys or set()))
    if misplaced:
        raise ValueError(
            f"{overlay_name} overlay holds keys of another overlay kind: {misplaced}. {suggestion}".rstrip()
        )


@dataclass(frozen=True)
class OverlaySpec:
    """One overlay a scheduler accepts: its namespace, kind and the fields users must set
    through ``Role``/``AppDef`` attributes instead (checked on :meth:`set` and :meth:`get`).

    Example::

        POD = OverlaySpec("kubernetes", "V1Pod", blocklist=("command", "env"))
        POD.set(role, {"spec": {"nodeSelector": {"pool": "gpu"}}})
        POD.get(role)  # {'spec': {'nodeSelector': {'pool': 'gpu'}}}
    """

    namespace: str
    kind: str
    blocklist: tuple[str, ...] = ()

    def set(self, target: AppDef | Role, overlay: Overlay) -> None:
        """Validates ``overlay`` and accumulates it with :func:`set_overlay`."""
        validate_overlay(overlay, blocklist=list(self.blocklist), overlay_name=self.kind)
        set_overlay(target, self.namespace, self.kind, overlay)

    def get(self, target: AppDef | Role) -> Overlay:
        """The stored overlay of this kind (never the flat fallback), validated."""
        overlay = get_overlay(target, self.namespace, self.kind, flat_fallback=False)
        validate_overlay(overlay, blocklist=list(self.blocklist), overlay_name=self.kind)
        return overlay
