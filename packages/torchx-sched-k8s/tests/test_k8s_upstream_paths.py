"""Upstream's module paths of the Kubernetes schedulers are this package's."""

from __future__ import annotations


def test_upstream_paths() -> None:
    from torchx.schedulers.kubernetes_mcad_scheduler import KubernetesMCADOpts, KubernetesMCADScheduler
    from torchx.schedulers.kubernetes_scheduler import KubernetesOpts, KubernetesScheduler, create_scheduler
    from torchx_sched_k8s import opts, scheduler

    assert (KubernetesScheduler, KubernetesOpts) == (scheduler.KubernetesScheduler, opts.KubernetesOpts)
    assert (KubernetesMCADScheduler, KubernetesMCADOpts) == (scheduler.KubernetesMCADScheduler, opts.MCADOpts)
    assert create_scheduler is scheduler.create_scheduler
