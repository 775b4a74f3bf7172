"""torchx plugin hooks of ``torchx-sched-k8s`` (imports nothing heavy)."""

from __future__ import annotations

from collections.abc import Iterator

from torchx.plugins import SchedulerPlugin, hookimpl


@hookimpl  # type: ignore[untyped-decorator]
def torchx_schedulers() -> Iterator[SchedulerPlugin]:
    """The ``kubernetes`` and ``kubernetes_mcad`` schedulers."""
    yield SchedulerPlugin(
        "kubernetes",
        "torchx_sched_k8s.scheduler:create_scheduler",
        "Kubernetes: a batch/v1 Job per replica + headless Service (or a Volcano Job)",
    )
    yield SchedulerPlugin(
        "kubernetes_mcad",
        "torchx_sched_k8s.scheduler:create_mcad_scheduler",
        "Kubernetes: an MCAD AppWrapper (workload.codeflare.dev/v1beta1) of pods + service",
    )
