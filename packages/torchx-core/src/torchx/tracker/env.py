"""Environment variables through which a launched job finds its trackers and lineage."""

ENV_TORCHX_TRACKERS = "TORCHX_TRACKERS"
ENV_TORCHX_PARENT_RUN_ID = "TORCHX_PARENT_RUN_ID"
ENV_TORCHX_JOB_ID = "TORCHX_JOB_ID"


def tracker_config_env_var_name(name: str) -> str:
    """``TORCHX_TRACKER_<NAME>_CONFIG`` for tracker ``name``."""
    return f"TORCHX_TRACKER_{name.upper().replace('.', '_').replace(':', '_').replace('-', '_')}_CONFIG"
