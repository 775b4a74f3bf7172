"""Run-id path keys and the fsspec settings-file parser."""

from __future__ import annotations

import pytest
from torchx_tracker import runkeys
from torchx_tracker.fsspec_config import FsspecTrackerConfig, parse_settings


@pytest.mark.parametrize(
    "run_id",
    [
        "local_cwd://torchx/echo-abc",
        "Slurm://S/1",
        "k8s://s/ns:n",
        "é/ü ?#%",
        "a",
        "x" * (runkeys.MAX_ENCODED * 5 // 8),
    ],
)
def test_keys_roundtrip(run_id: str) -> None:
    key = runkeys.encode(run_id)
    assert not runkeys.is_hashed(key)
    assert key.isalnum()
    assert key.upper() == key  # one case, no separators
    assert runkeys.decode(key) == run_id


def test_case_variants_get_distinct_keys() -> None:
    assert runkeys.encode("local_cwd://torchx/Echo").lower() != runkeys.encode("local_cwd://torchx/echo").lower()


def test_long_ids_are_hashed() -> None:
    key = runkeys.encode("x" * 1000)
    assert runkeys.is_hashed(key)
    assert len(key) < 100
    assert key == runkeys.encode("x" * 1000)


def test_bad_keys() -> None:
    with pytest.raises(ValueError, match="not an encoded torchx run id"):
        runkeys.decode("not-base32!")
    with pytest.raises(ValueError, match="must not be empty"):
        runkeys.encode("")


def test_settings_nest_dotted_keys() -> None:
    text = """
    # comment
    protocol = s3
    root_path = bucket/tracker
    key = AKIA
    client_kwargs.endpoint_url = http://localhost:5000
    client_kwargs.region_name = us-east-1
    """
    assert parse_settings(text, "cfg") == FsspecTrackerConfig(
        "s3",
        "bucket/tracker",
        {"key": "AKIA", "client_kwargs": {"endpoint_url": "http://localhost:5000", "region_name": "us-east-1"}},
    )


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("protocol = s3\nroot_path = b\na. = 1\n", r"cfg:3: expected `key = value`"),
        ("protocol = s3\nroot_path = b\na = 1\na.b = 2\n", r"cfg:4: 'a' is both a value and a group"),
        ("protocol = \nroot_path = b\n", "cfg: missing protocol"),
    ],
)
def test_bad_settings(text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_settings(text, "cfg")
