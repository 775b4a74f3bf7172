"""torchx plugin hooks of ``torchx-sched-k8s`` (imports nothing heavy)."""

from __future__ import annotations

from collections.abc import Iterator

from torchx.plugins import LegacyModule, SchedulerPlugin, hookimpl


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


@hookimpl  # type: ignore[untyped-decorator]
def torchx_legacy_modules() -> Iterator[LegacyModule]:
    """Upstream's module paths of the two Kubernetes schedulers."""
    yield LegacyModule("torchx.schedulers.kubernetes_scheduler", "torchx_sched_k8s.compat_kubernetes")
    yield LegacyModule("torchx.schedulers.kubernetes_mcad_scheduler", "torchx_sched_k8s.compat_kubernetes_mcad")
