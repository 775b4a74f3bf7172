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
