"""API server and connection errors rewritten as one clear line each.

Pure functions of the error's status, reason and body, so they are unit-testable
without the ``kubernetes`` client.
"""

from __future__ import annotations

import json
from typing import Any


class KubernetesError(RuntimeError):
    """A Kubernetes call failed; the message says what, why, and what to do."""

    def __init__(self, message: str, status: int | None = None, reason: str = "") -> None:
        super().__init__(" ".join(message.split()))
        self.status = status
        self.reason = reason


def _status_body(body: Any) -> dict[str, Any]:
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            parsed = json.loads(body)
        except ValueError:
            return {"message": body.strip()}
        return parsed if isinstance(parsed, dict) else {}
    return body if isinstance(body, dict) else {}


def api_error(
    action: str, status: int | None, reason: str | None, body: Any, namespace: str | None = None
) -> KubernetesError:
    """The error for an HTTP error answer of the API server.

    Args:
        action: what torchx was doing, e.g. ``create Job "x"``
        status: the HTTP status
        reason: the HTTP reason phrase
        body: the response body (a ``Status`` object as JSON)
        namespace: the namespace of the call, for hints
    """
    parsed = _status_body(body)
    message = str(parsed.get("message") or reason or "no details")
    kind = parsed.get("reason") or reason or ""
    details = parsed.get("details") or {}
    where = f" in namespace {namespace!r}" if namespace else ""
    if status == 404 and details.get("kind") == "namespaces":
        ns = details.get("name") or namespace
        text = (
            f"{action}: namespace {ns!r} does not exist; create it (kubectl create namespace {ns})"
            " or pick another with -cfg namespace=..."
        )
    elif status == 404 and ("could not find the requested resource" in message or "page not found" in message):
        text = f"{action}: the cluster does not serve this API ({message}); is the CRD (Volcano, MCAD) installed?"
    elif status == 401:
        text = f"{action}: the API server rejected the credentials of the kubeconfig ({message}); log in again or fix KUBECONFIG"
    elif status == 403:
        text = f"{action}: forbidden{where}: {message}; ask for RBAC access or use another namespace/service account"
    elif status == 422:
        text = f"{action}: the API server rejected the object: {message}"
    elif status == 409:
        text = f"{action}: conflict: {message}"
    else:
        text = f"{action}: API server answered {status} {kind}: {message}"
    return KubernetesError(text, status, str(kind))


def connection_error(action: str, host: str, error: BaseException) -> KubernetesError:
    """The error for a server that cannot be reached (refused, DNS, TLS, timeout)."""
    # a socket/TLS error says it all; a client library's wrapper keeps the cause in ``reason``
    reason = error if isinstance(error, OSError) else getattr(error, "reason", None) or error
    text = str(reason)
    # urllib3 wraps the root cause as "<Conn object at 0x...>: Failed to ...": keep the readable part
    if "object at 0x" in text and ": " in text:
        text = text.split(": ", 1)[1]
    return KubernetesError(
        f"{action}: cannot reach the Kubernetes API server at {host}: {text}; is the cluster up and KUBECONFIG right?"
    )


def config_error(error: BaseException) -> KubernetesError:
    """The error for a missing or broken kubeconfig."""
    return KubernetesError(
        f"no usable Kubernetes configuration ({error}); set KUBECONFIG or create ~/.kube/config"
        " (inside a pod the service account is used)"
    )
