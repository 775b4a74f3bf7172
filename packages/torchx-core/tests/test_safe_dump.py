"""``torchx.util.yaml.safe_dump`` writes what PyYAML's ``yaml.safe_dump`` writes (used by ``repr(AppStatus)``)."""

from __future__ import annotations

import pytest
from torchx.specs import AppState, AppStatus, ReplicaStatus, RoleStatus
from torchx.util.yaml import safe_dump

yaml = pytest.importorskip("yaml")

SAMPLES = [
    {"b": 1, "a": [1, "x"], "c": {"z": None, "y": True, "x": 1.5}},
    {"msg": "", "state": "FAILED (5)", "err": "<NONE>", "url": "http://host:8080/x", "n": "123", "t": "true"},
    {"roles": [{"replicas": [{"id": 0, "state": "RUNNING (3)"}, {"id": 1, "hostname": "h: 1"}], "role": "r"}]},
    {"odd": ["- dash", "#hash", "a #b", "it's", "2024-01-01", "~", "1e3", " lead", "trail:", "{x}", "@at"]},
    {"empty": {}, "none": [], "nested": [[]]},
]


@pytest.mark.parametrize("data", SAMPLES)
def test_same_text_as_pyyaml(data: dict) -> None:
    assert safe_dump(data) == yaml.safe_dump(data)


def test_app_status_repr_is_pyyaml_of_its_fields() -> None:
    status = AppStatus(
        AppState.FAILED, 2, msg="lost: node", roles=[RoleStatus("t", [ReplicaStatus(0, AppState.FAILED, "t", "h")])]
    )
    assert repr(status) == yaml.safe_dump(
        {
            "AppStatus": {
                "msg": "lost: node",
                "num_restarts": 2,
                "roles": [
                    {
                        "replicas": [
                            {
                                "hostname": "h",
                                "id": 0,
                                "role": "t",
                                "state": "FAILED (5)",
                                "structured_error_msg": "<NONE>",
                            }
                        ],
                        "role": "t",
                    }
                ],
                "state": "FAILED (5)",
                "structured_error_msg": "<NONE>",
                "ui_url": None,
            }
        }
    )
