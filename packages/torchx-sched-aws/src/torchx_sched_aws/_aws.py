"""boto3 clients with torchx's retry settings, and AWS errors turned into one clear line.

Credentials, region and endpoint come only from boto3's standard chain (environment,
profiles, instance roles; ``AWS_ENDPOINT_URL`` for another endpoint). Throttled calls are
retried by botocore in ``adaptive`` mode unless ``AWS_RETRY_MODE``/``AWS_MAX_ATTEMPTS``
say otherwise.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

#: attempts per call (first try included) unless ``AWS_MAX_ATTEMPTS`` is set
DEFAULT_MAX_ATTEMPTS = 5

_THROTTLING = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottled",
        "RequestThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "SlowDown",
        "PriorRequestNotComplete",
    }
)
_DENIED = frozenset(
    {
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "InvalidAccessKeyId",
        "ExpiredToken",
        "ExpiredTokenException",
        "InvalidSignatureException",
        "SignatureDoesNotMatch",
        "AccessDenied",
        "AccessDeniedException",
        "UnauthorizedOperation",
    }
)
_REJECTED = frozenset({"ValidationException", "ValidationError", "ClientException", "InvalidParameterException"})


class AWSError(RuntimeError):
    """An AWS call failed; the message says what failed and how to fix it."""


class Clients:
    """boto3 clients of one session, created on first use.

    Args:
        prebuilt: clients to use instead of creating them, by service name
            (``{"batch": ..., "logs": ...}``)
    """

    def __init__(self, prebuilt: Mapping[str, Any] | None = None) -> None:
        self._clients: dict[str, Any] = dict(prebuilt or {})
        self._session: Any = None
        self._lock = threading.Lock()  # boto3 sessions must not make clients concurrently

    def __call__(self, service: str) -> Any:
        """The client of ``service`` (``batch``, ``logs``, ``sagemaker``, ``s3``); thread-safe."""
        with self._lock:
            return self._client(service)

    def _client(self, service: str) -> Any:
        client = self._clients.get(service)
        if client is None:
            from botocore.config import Config

            retries: dict[str, Any] = {}
            if not os.environ.get("AWS_RETRY_MODE"):
                retries["mode"] = "adaptive"
            if not os.environ.get("AWS_MAX_ATTEMPTS"):
                retries["total_max_attempts"] = DEFAULT_MAX_ATTEMPTS
            config = Config(retries=retries, user_agent_extra="torchx")
            with aws_errors(f"creating the {service} client"):
                client = self._boto_session().client(service, config=config)
            self._clients[service] = client
        return client

    def _boto_session(self) -> Any:
        """The boto3 session every client is made from (call with the lock held)."""
        if self._session is None:
            import boto3

            self._session = boto3.session.Session()
        return self._session

    def region(self) -> str:
        """The region the clients talk to (``""`` when none is configured)."""
        with self._lock:
            for client in self._clients.values():
                return str(client.meta.region_name or "")
            return str(self._boto_session().region_name or "")


def client_error_code(e: BaseException) -> str | None:
    """The AWS error code of a botocore ``ClientError`` (None for other exceptions)."""
    response = getattr(e, "response", None)
    if not isinstance(response, dict):
        return None
    code = response.get("Error", {}).get("Code")
    return str(code) if code else None


def _one_line(text: str) -> str:
    return "; ".join(part.strip() for part in str(text).splitlines() if part.strip())


def _translate(e: Exception, what: str) -> AWSError | None:
    from botocore import exceptions as bx

    if isinstance(e, bx.NoCredentialsError):
        return AWSError(
            f"{what}: no AWS credentials found; configure them as for the aws CLI"
            " (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, ~/.aws/credentials or an instance role)"
        )
    if isinstance(e, bx.NoRegionError):
        return AWSError(f"{what}: no AWS region configured; set AWS_DEFAULT_REGION or `region` in ~/.aws/config")
    if isinstance(e, bx.ProfileNotFound):
        return AWSError(f"{what}: {_one_line(str(e))}; fix AWS_PROFILE or add the profile to ~/.aws/config")
    if isinstance(e, (bx.EndpointConnectionError, bx.ConnectTimeoutError, bx.ConnectionClosedError)):
        url = urlsplit(str(getattr(e, "kwargs", {}).get("endpoint_url") or os.environ.get("AWS_ENDPOINT_URL", "")))
        endpoint = f"{url.scheme}://{url.netloc}" if url.netloc else "(unknown)"
        return AWSError(
            f"{what}: cannot reach the AWS endpoint {endpoint}; check AWS_ENDPOINT_URL, the region and the network"
        )
    if isinstance(e, bx.ReadTimeoutError):
        return AWSError(f"{what}: the AWS endpoint did not answer in time; try again")
    if isinstance(e, bx.ParamValidationError):
        return AWSError(f"{what}: invalid request: {_one_line(str(e))}")
    if isinstance(e, bx.ClientError):
        code = client_error_code(e) or "?"
        message = _one_line(e.response.get("Error", {}).get("Message", "") or str(e))
        if code in _THROTTLING:
            return AWSError(
                f"{what}: AWS throttled the request ({code}) even after retrying in adaptive mode;"
                " try again later, or raise AWS_MAX_ATTEMPTS"
            )
        if code in _DENIED:
            return AWSError(
                f"{what}: AWS refused the request ({code}: {message}); check the credentials and IAM permissions"
            )
        if code in _REJECTED:
            return AWSError(f"{what}: AWS rejected the request: {message}")
        return AWSError(f"{what}: {code}: {message}")
    if isinstance(e, bx.BotoCoreError):
        return AWSError(f"{what}: {_one_line(str(e))}")
    return None


@contextmanager
def aws_errors(what: str) -> Iterator[None]:
    """Turns botocore errors raised inside the block into :class:`AWSError` (one line).

    Args:
        what: what the block does, e.g. ``"submitting job x to queue q"``
    """
    try:
        yield
    except AWSError:
        raise
    except Exception as e:
        translated = _translate(e, what)
        if translated is None:
            raise
        raise translated from e
