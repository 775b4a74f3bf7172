"""A fresh prefix in a bucket of the live moto endpoint (``scripts/backends/services.sh up
moto``), for tests of what is kept on object storage."""

from __future__ import annotations

import os
import uuid


def live_s3_prefix(bucket: str) -> str:
    """``s3://BUCKET/<fresh prefix>`` on the moto endpoint, the bucket made if missing; the
    endpoint and credentials (``AWS_*``) put in this process's environment, which every client a
    test starts, and the jobs those submit, inherit. Skips (or, under ``TORCHX_REQUIRE_LIVE=1``,
    fails) without moto; skips without ``s3fs``."""
    import pytest

    from torchx.testing import live_backend_env

    env = live_backend_env("TORCHX_TEST_AWS", "moto")
    pytest.importorskip("s3fs", reason="needs torchx-managed[fsspec]")
    os.environ.update({k: v for k, v in env.items() if k.startswith("AWS_")})
    import fsspec

    fs = fsspec.filesystem("s3", skip_instance_cache=True)
    if not fs.exists(bucket):
        fs.mkdir(bucket)
    return f"s3://{bucket}/{uuid.uuid4().hex[:10]}"
