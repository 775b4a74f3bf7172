"""The ``ray`` run options and their validation."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

from torchx.schedulers.structured_opts import StructuredOpts
from torchx.specs.runopts import InvalidRunConfigException

logger: logging.Logger = logging.getLogger(__name__)

#: where the Jobs API is when neither the ``address`` option nor the environment says
DEFAULT_ADDRESS = "http://127.0.0.1:8265"
#: Ray's placement-group strategies
STRATEGIES = ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD")


def default_address() -> str:
    """``$RAY_API_SERVER_ADDRESS``, else an http ``$RAY_ADDRESS``, else :data:`DEFAULT_ADDRESS`."""
    for var in ("RAY_API_SERVER_ADDRESS", "RAY_ADDRESS"):
        value = os.environ.get(var, "").strip()
        if value.startswith(("http://", "https://")):
            return value.rstrip("/")
    return DEFAULT_ADDRESS


def normalize_address(address: str) -> str:
    """An ``http(s)://host:port`` Jobs API address (``host:port`` alone means http).

    Raises:
        InvalidRunConfigException: not a host:port address of the dashboard
    """
    value = address.strip().rstrip("/")
    if "://" not in value:
        value = "http://" + value
    scheme, _, rest = value.partition("://")
    host, sep, port = rest.rpartition(":")
    if scheme not in ("http", "https") or not sep or not host or not port.isdigit() or "/" in rest:
        raise InvalidRunConfigException(
            f"run option 'address' must be the Ray dashboard's Jobs API as http://HOST:PORT"
            f" (e.g. {DEFAULT_ADDRESS}), got {address!r}",
            "address",
        )
    return f"{scheme}://{rest}"


@dataclass
class RayOpts(StructuredOpts):
    """Run options of the ``ray`` scheduler."""

    address: str | None = field(default=None, metadata={"aliases": ("dashboard_address",)})
    """Jobs API (dashboard) address, http://HOST:PORT. Default: $RAY_API_SERVER_ADDRESS, an http $RAY_ADDRESS, or http://127.0.0.1:8265. Also accepted as dashboard_address, TorchX's ray name."""
    working_dir: str | None = None
    """Local directory shipped as the job's working directory (runtime_env working_dir); default: the workspace."""
    requirements: str | None = None
    """Local requirements.txt: pip packages installed into the job's environment (runtime_env pip)."""
    placement_strategy: str = "SPREAD"
    """How the replicas' bundles are placed (one placement group, all or none): PACK, SPREAD, STRICT_PACK or STRICT_SPREAD."""
    placement_timeout: int | None = None
    """Seconds to wait for the cluster to place every replica before the job fails. Default: wait."""
    cluster_config_file: str | None = None
    """TorchX 0.7's Ray cluster launcher config: not supported, jobs go to a running cluster's Jobs API (address)."""
    cluster_name: str | None = None
    """TorchX 0.7's cluster name override for cluster_config_file: ignored (with a warning)."""

    def validate(self) -> None:
        """Checks every value.

        Raises:
            InvalidRunConfigException: which option is wrong and what it expects
        """
        if self.cluster_config_file is not None:
            raise InvalidRunConfigException(
                "run option 'cluster_config_file' is not supported: the ray scheduler submits to a running"
                " cluster's Jobs API; start the cluster (ray up FILE) and pass"
                " -cfg address=http://HEAD:8265 (ray get-head-ip FILE prints HEAD)",
                "cluster_config_file",
            )
        if self.cluster_name is not None:
            logger.warning(
                "run option 'cluster_name' (%s) is ignored: it names a cluster of a cluster_config_file;"
                " the job goes to the cluster at %s",
                self.cluster_name,
                self.address or default_address(),
            )
        if self.address is not None:
            normalize_address(self.address)
        if self.placement_strategy.upper() not in STRATEGIES:
            raise InvalidRunConfigException(
                f"run option 'placement_strategy' must be one of {', '.join(STRATEGIES)},"
                f" got {self.placement_strategy!r}",
                "placement_strategy",
            )
        if self.placement_timeout is not None and int(self.placement_timeout) <= 0:
            raise InvalidRunConfigException(
                f"run option 'placement_timeout' must be a positive number of seconds, got {self.placement_timeout!r}",
                "placement_timeout",
            )
        if self.working_dir is not None and not os.path.isdir(self.working_dir):
            raise InvalidRunConfigException(
                f"run option 'working_dir' must be an existing local directory, got {self.working_dir!r}",
                "working_dir",
            )
        if self.requirements is not None and not os.path.isfile(self.requirements):
            raise InvalidRunConfigException(
                f"run option 'requirements' must be an existing requirements.txt file, got {self.requirements!r}",
                "requirements",
            )

    def jobs_address(self) -> str:
        """The Jobs API address these options select."""
        return normalize_address(self.address) if self.address else default_address()
