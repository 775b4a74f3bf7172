"""Metadata keys and sentinels upstream TorchX's schedulers stamp into submitted jobs (the
spellings downstream tools join on): import them instead of writing the strings again."""

#: env var naming the context a job was launched from
TORCHX_CONTEXT_NAME: str = "TORCHX_CONTEXT_NAME"

#: value of a key that does not apply
NA: str = "<<NA>>"


class app_metadata:
    """Keys of an app's metadata set by schedulers at submission."""

    CONTEXT: str = "torchx/context"
    VERSION: str = "torchx/version"
    SCHEDULER: str = "torchx/scheduler"
    #: per-role keys start with this: ``torchx/roles.<role>.<key>`` (role names hold no ``.``)
    ROLES_PREFIX: str = "torchx/roles."
