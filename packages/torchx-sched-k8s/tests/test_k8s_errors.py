"""API server answers and connection failures become one clear line."""

from __future__ import annotations

import json

from torchx_sched_k8s.errors import api_error, config_error, connection_error


def status(code: int, reason: str, message: str, details: dict[str, str] | None = None) -> str:
    return json.dumps(
        {
            "kind": "Status",
            "status": "Failure",
            "code": code,
            "reason": reason,
            "message": message,
            "details": details or {},
        }
    )


def test_validation_error_keeps_the_server_message_on_one_line() -> None:
    body = status(
        422, "Invalid", 'Job.batch "x" is invalid: [spec.template.spec.nodeSelector: Invalid value: "a b":\n bad]'
    )
    e = api_error('create Job "x"', 422, "Unprocessable Entity", body, "ns")
    assert str(e).startswith('create Job "x": the API server rejected the object: Job.batch "x" is invalid')
    assert "\n" not in str(e)
    assert e.status == 422


def test_missing_namespace() -> None:
    body = status(404, "NotFound", 'namespaces "nope" not found', {"name": "nope", "kind": "namespaces"})
    e = str(api_error("create Service 'a'", 404, "Not Found", body, "nope"))
    assert "namespace 'nope' does not exist" in e
    assert "kubectl create namespace nope" in e


def test_missing_crd_forbidden_and_unauthorized() -> None:
    e = str(
        api_error(
            "create AppWrapper 'a'",
            404,
            "Not Found",
            status(404, "NotFound", "the server could not find the requested resource"),
        )
    )
    assert "CRD" in e
    assert "CRD" in str(
        api_error("create AppWrapper 'a'", 404, "Not Found", "404 page not found\n")
    )  # group not served
    e = str(
        api_error(
            "list Jobs",
            403,
            "Forbidden",
            status(403, "Forbidden", 'jobs.batch is forbidden: User "bob" cannot list'),
            "ns",
        )
    )
    assert "forbidden in namespace 'ns'" in e
    assert "RBAC" in e
    assert "credentials" in str(api_error("list Jobs", 401, "Unauthorized", "Unauthorized"))


def test_connection_and_config_errors() -> None:
    class Wrapped(Exception):
        reason = "<urllib3.connection.HTTPSConnection object at 0x7f>: Failed to establish a new connection: [Errno 111] refused"

    e = str(connection_error("list Jobs", "https://127.0.0.1:1", Wrapped()))
    assert e == (
        "list Jobs: cannot reach the Kubernetes API server at https://127.0.0.1:1: Failed to establish a new"
        " connection: [Errno 111] refused; is the cluster up and KUBECONFIG right?"
    )
    assert "KUBECONFIG" in str(config_error(Exception("Invalid kube-config file. No configuration found.")))
