"""A fresh prefix in a bucket of the live moto endpoint (``scripts/backends/services.sh up
moto``), for tests of what is kept on object storage."""

from __future__ import annotations

import os
import uuid


def live_s3_prefix(bucket: str) -> str:
    """``s3://BUCKET/<fresh prefix>`` on the moto endpoint, the bucket made if missing; the
    endpoint and credentials (``AWS_*``) put in this process's environment, which every client a
    test starts, and the jobs those submit, inherit. Skips (or, under ``TORCHX_REQUIRE_LIVE=1``,
    fails) without moto; skips without ``boto3``."""
    import pytest

    from torchx.testing import live_backend_env

    env = live_backend_env("TORCHX_TEST_AWS", "moto")
    boto3 = pytest.importorskip("boto3", reason="needs torchx-managed[s3]")
    os.environ.update({k: v for k, v in env.items() if k.startswith("AWS_")})
    s3 = boto3.session.Session().client("s3")
    if bucket not in {b["Name"] for b in s3.list_buckets().get("Buckets", ())}:
        s3.create_bucket(Bucket=bucket)
    return f"s3://{bucket}/{uuid.uuid4().hex[:10]}"


def read_object(url: str) -> bytes | None:
    """The bytes of the object at ``s3://BUCKET/KEY`` (None: there is none)."""
    import boto3

    bucket, _, key = url.split("://", 1)[1].partition("/")
    try:
        return bytes(boto3.session.Session().client("s3").get_object(Bucket=bucket, Key=key)["Body"].read())
    except Exception as e:
        if getattr(e, "response", {}).get("Error", {}).get("Code") == "NoSuchKey":
            return None
        raise


def list_objects(url: str) -> list[str]:
    """The ``s3://`` URLs of the objects under ``url`` (``s3://BUCKET/PREFIX``), sorted."""
    import boto3

    bucket, _, key = url.split("://", 1)[1].partition("/")
    pages = boto3.session.Session().client("s3").get_paginator("list_objects_v2")
    found = [
        o["Key"]
        for page in pages.paginate(Bucket=bucket, Prefix=key.rstrip("/") + "/")
        for o in page.get("Contents", ())
    ]
    return [f"s3://{bucket}/{k}" for k in sorted(found)]
