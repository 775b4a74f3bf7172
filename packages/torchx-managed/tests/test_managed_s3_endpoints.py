"""A bucket journal's botocore session keeps only a few services of ``endpoints.json`` (the
controller's memory, issue 28): S3 and STS requests are still addressed and signed exactly as a
plain botocore session does, in every partition, with FIPS, dual-stack and path-style.

No request leaves the machine: each is stopped just before it is sent.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

pytest.importorskip("botocore")

import botocore.session
from botocore.config import Config
from torchx_managed.journal_store import ENDPOINT_SERVICES, s3_session


class _Sent(Exception):
    pass


def _sent(client: Any, operation: str, **params: Any) -> tuple[str, str]:
    """The URL and the credential scope of the request ``operation`` would send."""
    got: list[tuple[str, str]] = []

    def stop(request: Any, **_: Any) -> None:
        auth = request.headers.get("Authorization", b"")
        auth = auth.decode() if isinstance(auth, bytes) else auth
        got.append((request.url, auth.split("Credential=", 1)[-1].split(",", 1)[0]))
        raise _Sent

    client.meta.events.register("before-send", stop)
    try:
        with pytest.raises(_Sent):
            getattr(client, operation)(**params)
    finally:
        client.meta.events.unregister("before-send", stop)
    return got[0]


def _addressing(session: Any, service: str, region: str, config: Config) -> list[object]:
    client = session.create_client(service, region_name=region, config=config)
    seen: list[object] = [client.meta.endpoint_url, client.meta.region_name, client.meta.config.signature_version]
    if service == "sts":
        return [*seen, _sent(client, "get_caller_identity")]
    return [
        *seen,
        _sent(client, "get_object", Bucket="my-bucket", Key="a/b.json"),
        _sent(client, "put_object", Bucket="my.dotted.bucket", Key="k", Body=b"x", IfMatch='"e"'),
        _sent(client, "list_objects_v2", Bucket="my-bucket", Prefix="p/", Delimiter="/"),
    ]


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)


def test_endpoints_keep_only_the_services_a_bucket_journal_uses(aws_env: None) -> None:
    full = botocore.session.get_session().get_component("data_loader").load_data("endpoints")
    kept = s3_session().get_component("data_loader").load_data("endpoints")
    assert len(kept["partitions"]) == len(full["partitions"]) > 1
    for mine, theirs in zip(kept["partitions"], full["partitions"], strict=True):
        assert set(mine["services"]) == ENDPOINT_SERVICES & set(theirs["services"])
        assert {k: v for k, v in mine.items() if k != "services"} == {
            k: v for k, v in theirs.items() if k != "services"
        }
    assert "s3" in kept["partitions"][0]["services"]
    assert len(full["partitions"][0]["services"]) > 100  # what the trimming leaves out


def test_s3_and_sts_addressed_as_by_a_plain_session(aws_env: None) -> None:
    plain, trimmed = botocore.session.get_session(), s3_session()
    regions = {"us-east-99", "eu-north-9", "aws-global"}
    for partition in plain.get_available_partitions():
        regions |= set(sorted(plain.get_available_regions("s3", partition))[:2])
    assert len(regions) > 10
    compared = 0
    for region in sorted(regions):
        for fips, dual, style in itertools.product([False, True], [False, True], ["auto", "path"]):
            config = Config(
                use_fips_endpoint=fips,
                use_dualstack_endpoint=dual,
                s3={"addressing_style": style},
                retries={"max_attempts": 1},
            )
            try:
                expected = _addressing(plain, "s3", region, config)
            except Exception as e:  # e.g. dual-stack where the partition has none: the same refusal
                with pytest.raises(type(e)):
                    _addressing(trimmed, "s3", region, config)
                continue
            assert _addressing(trimmed, "s3", region, config) == expected, (region, fips, dual, style)
            compared += 1
        config = Config(retries={"max_attempts": 1})
        assert _addressing(trimmed, "sts", region, config) == _addressing(plain, "sts", region, config), region
    assert compared > 40


_LISTING = [
    b'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
    b"<Name>my-bucket</Name><Prefix>p/</Prefix><KeyCount>2</KeyCount><MaxKeys>1000</MaxKeys><Delimiter>/</Delimiter>"
    b"<IsTruncated>true</IsTruncated><NextContinuationToken>tok+1</NextContinuationToken>"
    b"<Contents><Key>p/a.json</Key><LastModified>2026-01-02T03:04:05.000Z</LastModified>"
    b'<ETag>"e1"</ETag><Size>3</Size><StorageClass>STANDARD</StorageClass></Contents>'
    b"<CommonPrefixes><Prefix>p/job1/</Prefix></CommonPrefixes></ListBucketResult>",
    b'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
    b"<Name>my-bucket</Name><Prefix>p/</Prefix><KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys><Delimiter>/</Delimiter>"
    b"<IsTruncated>false</IsTruncated><ContinuationToken>tok+1</ContinuationToken>"
    b"<CommonPrefixes><Prefix>p/job2/</Prefix></CommonPrefixes></ListBucketResult>",
]


def _error(code: str, message: str) -> bytes:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code><Message>{message}</Message>'
        "<RequestId>r1</RequestId><HostId>h1</HostId></Error>"
    ).encode()


#: the journal's requests (operation, parameters) and the answers they get: (status, headers, body)
_EXCHANGES: list[tuple[str, dict[str, Any], tuple[int, dict[str, str], bytes]]] = [
    (
        "get_object",
        {"Bucket": "my-bucket", "Key": "j/spec.json"},
        (200, {"ETag": '"e1"', "Content-Length": "3"}, b"{}\n"),
    ),
    ("get_object", {"Bucket": "my-bucket", "Key": "j/none"}, (404, {}, _error("NoSuchKey", "The key does not exist"))),
    (
        "put_object",
        {"Bucket": "my-bucket", "Key": "j/events/0000000001.json", "Body": b'{"w": 1}', "IfNoneMatch": "*"},
        (200, {"ETag": '"e2"'}, b""),
    ),
    (
        "put_object",
        {"Bucket": "my-bucket", "Key": "j/driver.lease", "Body": b"{}", "IfMatch": '"e1"'},
        (412, {}, _error("PreconditionFailed", "At least one of the pre-conditions you specified did not hold")),
    ),
    (
        "put_object",
        {"Bucket": "my.dotted.bucket", "Key": "j/driver.lease", "Body": b"{}", "IfMatch": '"e1"'},
        (409, {}, _error("ConditionalRequestConflict", "A conflicting operation occurred")),
    ),
    (
        "head_object",
        {"Bucket": "my-bucket", "Key": "j/spec.json"},
        (200, {"Last-Modified": "Fri, 02 Jan 2026 03:04:05 GMT", "ETag": '"e1"', "Content-Length": "3"}, b""),
    ),
    ("head_object", {"Bucket": "my-bucket", "Key": "j/none"}, (404, {}, b"")),
    ("list_objects_v2", {"Bucket": "my-bucket", "Prefix": "p/", "Delimiter": "/"}, (200, {}, _LISTING[0])),
    (
        "delete_objects",
        {"Bucket": "my-bucket", "Delete": {"Objects": [{"Key": "j/spec.json"}, {"Key": "j/a b&c"}], "Quiet": True}},
        (200, {}, b'<?xml version="1.0" encoding="UTF-8"?><DeleteResult></DeleteResult>'),
    ),
    ("head_bucket", {"Bucket": "my-bucket"}, (301, {"x-amz-bucket-region": "eu-west-1"}, b"")),
]


class _Raw:
    """An HTTP answer's body as botocore reads it from urllib3."""

    def __init__(self, body: bytes) -> None:
        import io

        self._body = io.BytesIO(body)

    def stream(self, *_: Any, **__: Any) -> Any:
        yield self._body.read()

    def read(self, *args: Any) -> bytes:
        return self._body.read(*args)


def _exchange(
    client: Any, operation: str, params: dict[str, Any], answers: list[tuple[int, dict[str, str], bytes]]
) -> list[object]:
    """What the client sends for ``operation`` (each request: method, URL, every header but the
    random invocation id, body; signed at a fixed time) and what it makes of ``answers`` (one per
    request)."""
    from botocore.awsrequest import AWSResponse

    sent: list[object] = []
    left = list(answers)

    def answer(request: Any, **_: Any) -> Any:
        body = request.body
        body = body.read() if hasattr(body, "read") else body
        headers = sorted((k, str(v)) for k, v in request.headers.items() if k != "amz-sdk-invocation-id")  # random
        sent.append((request.method, request.url, headers, body))
        status, headers, data = left.pop(0)
        return AWSResponse(request.url, status, headers, _Raw(data))

    client.meta.events.register("before-send", answer)
    try:
        if operation == "list_objects_v2":
            got: object = list(client.get_paginator(operation).paginate(**params))
        else:
            got = getattr(client, operation)(**params)
    except Exception as e:  # the error the journal reads (code and status from its response)
        got = (type(e).__name__, getattr(e, "response", None), str(e))
    finally:
        client.meta.events.unregister("before-send", answer)
    if isinstance(got, dict) and "Body" in got:
        got = {**got, "Body": got["Body"].read()}
    for page in got if isinstance(got, list) else [got]:
        if isinstance(page, dict):
            page.get("ResponseMetadata", {}).pop("RetryAttempts", None)
    return [sent, got]


def test_the_journal_s_s3_requests_and_answers_are_a_plain_session_s(
    aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trimmed S3 model (the journal's operations only, no documentation) builds, signs and
    parses each of the journal's requests exactly as a plain session does: every header and
    byte sent, the parsed answer, errors (404 with and without a body, 412, 409), a listing's
    pages, in two regions, virtual-host and path style."""
    import datetime

    import botocore.auth

    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: datetime.datetime(2026, 1, 2, 3, 4, 5))
    plain, trimmed = botocore.session.get_session(), s3_session()
    compared = 0
    for region, style in itertools.product(["us-east-1", "eu-west-1"], ["auto", "path"]):
        config = Config(s3={"addressing_style": style}, retries={"max_attempts": 1})
        clients = [s.create_client("s3", region_name=region, config=config) for s in (plain, trimmed)]
        for operation, params, answer in _EXCHANGES:
            answers = [(200, {}, page) for page in _LISTING] if operation == "list_objects_v2" else [answer]
            expected = _exchange(clients[0], operation, params, answers)
            assert _exchange(clients[1], operation, params, answers) == expected, (region, style, operation)
            compared += 1
    assert compared == 4 * len(_EXCHANGES)


def _members(shape: Any, depth: int = 3) -> object:
    """A shape's type, serialization and members, ``depth`` levels down."""
    if shape is None or depth == 0:
        return None if shape is None else shape.name
    members = getattr(shape, "members", {})
    return (shape.type_name, shape.serialization, {k: _members(v, depth - 1) for k, v in members.items()})


def test_the_s3_model_keeps_only_the_journal_s_operations(aws_env: None) -> None:
    from torchx_managed.journal_store import S3_OPERATIONS

    full = botocore.session.get_session().get_service_model("s3")
    kept = s3_session().get_service_model("s3")
    assert set(kept.operation_names) == S3_OPERATIONS < set(full.operation_names)
    for name in S3_OPERATIONS:  # each kept one is whole, less its help text
        mine, theirs = kept.operation_model(name), full.operation_model(name)
        assert mine.http == theirs.http and mine.context_parameters == theirs.context_parameters
        for side in ("input_shape", "output_shape"):
            assert _members(getattr(mine, side)) == _members(getattr(theirs, side)), (name, side)
        assert not mine.documentation and theirs.documentation
    assert kept.metadata == full.metadata and kept.signature_version == full.signature_version
