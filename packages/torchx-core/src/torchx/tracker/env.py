"""Environment variables through which a launched job finds its trackers and lineage."""

ENV_TORCHX_TRACKERS = "TORCHX_TRACKERS"
ENV_TORCHX_PARENT_RUN_ID = "TORCHX_PARENT_RUN_ID"
ENV_TORCHX_JOB_ID = "TORCHX_JOB_ID"


def tracker_config_env_var_name(name: str) -> str:
    """``TORCHX_TRACKER_<NAME>_CONFIG`` for tracker ``name``.

    ``.``, ``:`` and ``-`` (from ``module:function`` tracker names) become ``_``, so the name
    is a valid variable on every scheduler (Kubernetes, shells) -- TorchX keeps them.
    """
    return f"TORCHX_TRACKER_{name.upper().replace('.', '_').replace(':', '_').replace('-', '_')}_CONFIG"


def tracker_config_env_var_names(name: str) -> list[str]:
    """Variables that may hold tracker ``name``'s config in the launcher's environment:
    ours, then TorchX's spelling (``TORCHX_TRACKER_<NAME as given, upper-cased>_CONFIG``)."""
    ours = tracker_config_env_var_name(name)
    theirs = f"TORCHX_TRACKER_{name.upper()}_CONFIG"
    return [ours] if ours == theirs else [ours, theirs]
