"""Kubernetes names, labels and annotations of the objects torchx creates.

Every object of an app carries the label ``torchx.pytorch.org/app-name=<name>``, so one
label selector finds all of it. Names follow RFC 1123 (DNS labels: lowercase
alphanumerics and ``-``, at most 63 characters); the rendezvous Service name also starts
with a letter (RFC 1035), as Services require.
"""

from __future__ import annotations

import re

from torchx.schedulers.ids import make_unique, sanitize_name

PREFIX = "torchx.pytorch.org/"
LABEL_APP_NAME = PREFIX + "app-name"
LABEL_ROLE_NAME = PREFIX + "role-name"
LABEL_REPLICA_ID = PREFIX + "replica-id"
LABEL_VERSION = PREFIX + "version"
LABEL_K8S_NAME = "app.kubernetes.io/name"
LABEL_K8S_INSTANCE = "app.kubernetes.io/instance"
LABEL_K8S_MANAGED_BY = "app.kubernetes.io/managed-by"
#: Kueue's queue label (set from the ``queue`` option in ``jobs`` mode)
LABEL_KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"

#: the exact (unsanitized) role and app names
ANNOTATION_ROLE = PREFIX + "role"
ANNOTATION_APP = PREFIX + "app"
#: the role's position in the app
ANNOTATION_ROLE_INDEX = PREFIX + "role-index"
#: retry settings of the role, read back by describe
ANNOTATION_NUM_REPLICAS = PREFIX + "num-replicas"
ANNOTATION_MIN_REPLICAS = PREFIX + "min-replicas"
ANNOTATION_MAX_RETRIES = PREFIX + "max-retries"
ANNOTATION_RETRY_POLICY = PREFIX + "retry-policy"
#: app restarts done so far (APPLICATION retry policy)
ANNOTATION_RESTARTS = PREFIX + "restarts"
#: set by cancel: the time the app was cancelled
ANNOTATION_CANCELLED = PREFIX + "cancelled"
#: set when an app failed for good and its remaining replicas were stopped
ANNOTATION_STOPPED = PREFIX + "stopped"

#: selects every object torchx manages
MANAGED_SELECTOR = f"{LABEL_K8S_MANAGED_BY}=torchx"

#: length of the app name's stem (before ``-<random>``)
_STEM_LEN = 30
#: length of the random part of an app name
_RANDOM_LEN = 8
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def app_name(name: str) -> str:
    """A unique Kubernetes name for an app called ``name``: ``<stem>-<random>``.

    The result is a DNS-1035 label (starts with a letter) of at most 39 characters, so
    ``<app>-<role>-<replica>`` names of its objects fit in 63.
    """
    stem = sanitize_name(name, max_length=_STEM_LEN)
    if not stem[0].isalpha():
        stem = sanitize_name("app-" + stem, max_length=_STEM_LEN)
    return make_unique(stem, _RANDOM_LEN)


def role_slugs(role_names: list[str], max_len: int) -> list[str]:
    """DNS-label slugs for the roles of one app: unique, at most ``max_len`` characters."""
    slugs: list[str] = []
    for idx, name in enumerate(role_names):
        slug = base = sanitize_name(name, max_length=max_len)
        n = idx
        while slug in slugs:
            suffix = f"-{n}"
            slug = sanitize_name(base[: max_len - len(suffix)] + suffix, max_length=max_len)
            n += 1
        slugs.append(slug)
    return slugs


def label_value(value: str) -> str:
    """``value`` made a valid label value (at most 63 of ``[A-Za-z0-9-_.]``, alphanumeric ends)."""
    if len(value) <= 63 and _LABEL_VALUE.match(value):
        return value
    cleaned = re.sub(r"[^A-Za-z0-9\-_.]+", "-", value)[:63]
    return cleaned.strip("-_.")


def parse_app_id(app_id: str) -> tuple[str, str]:
    """``"namespace:name"`` -> (namespace, name).

    Raises:
        ValueError: ``app_id`` is not of that form
    """
    namespace, sep, name = app_id.partition(":")
    if not sep or not namespace or not name:
        raise ValueError(
            f"malformed kubernetes app id {app_id!r}: expected <namespace>:<name>, e.g. default:echo-ab12cd34"
        )
    return namespace, name


def app_selector(name: str) -> str:
    """The label selector of every object of the app ``name``."""
    return f"{LABEL_APP_NAME}={name}"
