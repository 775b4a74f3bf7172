"""torchx schedulers for Kubernetes.

* ``kubernetes``: one batch/v1 Job per replica plus a headless Service (no CRD needed),
  or one Volcano ``batch.volcano.sh/v1alpha1`` Job with ``-cfg mode=volcano``;
* ``kubernetes_mcad``: one MCAD ``workload.codeflare.dev/v1beta1`` AppWrapper.

The official ``kubernetes`` client is imported only by :mod:`torchx_sched_k8s.scheduler`.
"""

__version__ = "0.1.0"
