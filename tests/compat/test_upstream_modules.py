"""Upstream TorchX module paths import, with the public names user code imports from them."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import pytest

#: upstream module -> (distribution providing it, names user code imports from it)
MODULES = {
    "torchx.schedulers.local_scheduler": (
        "torchx_sched_local",
        "LocalScheduler LocalOpts create_scheduler ImageProvider CWDImageProvider LocalDirectoryImageProvider"
        " ReplicaParam PopenRequest",
    ),
    "torchx.schedulers.docker_scheduler": (
        "torchx_sched_local",
        "DockerScheduler DockerOpts create_scheduler has_docker NETWORK ensure_network",
    ),
    "torchx.workspace.docker_workspace": ("torchx_sched_local", "DockerWorkspaceMixin"),
    "torchx.schedulers.slurm_scheduler": ("torchx_sched_slurm", "SlurmScheduler SlurmOpts create_scheduler"),
    "torchx.workspace.dir_workspace": ("torchx_sched_slurm", "DirWorkspaceMixin"),
    "torchx.schedulers.lsf_scheduler": ("torchx_sched_lsf", "LsfScheduler LsfOpts create_scheduler"),
    "torchx.schedulers.ray_scheduler": ("torchx_sched_ray", "RayScheduler RayOpts create_scheduler has_ray"),
    "torchx.schedulers.kubernetes_scheduler": (
        "torchx_sched_k8s",
        "KubernetesScheduler KubernetesOpts create_scheduler app_to_resource role_to_pod pod_labels"
        " RESERVED_MILLICPU RESERVED_MEMMB",
    ),
    "torchx.schedulers.kubernetes_mcad_scheduler": ("torchx_sched_k8s", "KubernetesMCADScheduler create_scheduler"),
    "torchx.schedulers.aws_batch_scheduler": (
        "torchx_sched_aws",
        "AWSBatchScheduler AWSBatchOpts create_scheduler JOB_STATE resource_requirements_from_resource",
    ),
    "torchx.schedulers.aws_sagemaker_scheduler": ("torchx_sched_aws", "AWSSageMakerScheduler create_scheduler"),
    "torchx.tracker.backend.fsspec": ("torchx_tracker", "FsspecTracker create"),
    "torchx.cli.cmd_tracker": ("torchx_tracker", "CmdTracker"),
    "torchx.tracker.mlflow": ("mlflow", "MLflowTracker create_tracker"),
    "torchx.runtime.tracking": ("torchx_tracker", "ResultTracker FsspecResultTracker"),
    "torchx.components.component_test_base": ("torchx_components", "ComponentTestCase"),
    "torchx.runner.events": ("torchx", "log_event record TorchxEvent SourceType"),
    "torchx.specs.builders": (
        "torchx",
        "materialize_appdef make_app_handle parse_mounts BindMount VolumeMount DeviceMount",
    ),
    "torchx.schedulers.ids": ("torchx", "make_unique random_id random_uint64 get_len_random_id"),
    "torchx.schedulers.streams": ("torchx", "Stream Tee"),
    "torchx.schedulers.devices": ("torchx", "get_device_mounts to_devicemounts DEVICES"),
    "torchx.util.types": (
        "torchx",
        "to_list to_dict decode decode_from_string decode_optional is_bool is_primitive none_throws get_argparse_param_type",
    ),
    "torchx.util.entrypoints": ("torchx", "load load_group"),
}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_upstream_module_imports_with_its_names(module: str) -> None:
    provider, names = MODULES[module]
    pytest.importorskip(provider)
    mod = importlib.import_module(module)
    missing = [n for n in names.split() if not hasattr(mod, n)]
    assert not missing, f"{module} lacks {missing}"


def test_scheduler_module_is_the_plugins_module() -> None:
    pytest.importorskip("torchx_sched_slurm")
    from torchx.schedulers.slurm_scheduler import SlurmScheduler, create_scheduler
    from torchx_sched_slurm.scheduler import SlurmScheduler as Native

    assert SlurmScheduler is Native
    assert isinstance(create_scheduler("s"), Native)


def test_builtin_components_import_from_torchx_components_once() -> None:
    pytest.importorskip("torchx_components")
    import torchx.components.dist
    import torchx_components.dist
    from torchx.components.utils import echo

    assert torchx.components.dist is torchx_components.dist
    assert echo("hi").roles[0].args == torchx_components.utils.echo("hi").roles[0].args


def test_image_and_version() -> None:
    import torchx

    assert torchx.IMAGE.startswith("ghcr.io/pytorch/torchx:")
    assert isinstance(torchx.__version__, str)


def test_result_tracker_reads_what_booth_writes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("torchx_tracker")
    pytest.importorskip("torchx_components")
    from torchx.runtime.tracking import FsspecResultTracker

    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torchx_components.apps.booth",
            "--x1",
            "1",
            "--x2",
            "3",
            "--trial_idx",
            "7",
            "--tracker_base",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    tracker = FsspecResultTracker(str(tmp_path))
    assert tracker[7] == {"booth_eval": 0.0}
    tracker["next"] = {"loss": 0.5}
    assert tracker.get("next") == {"loss": 0.5}
    assert tracker.get("absent") == {}


def test_component_test_case_runs_a_component() -> None:
    pytest.importorskip("torchx_sched_local")
    pytest.importorskip("torchx_components")
    import unittest

    import torchx.components.utils as utils
    from torchx.components.component_test_base import ComponentTestCase
    from torchx.specs import AppState

    class EchoTest(ComponentTestCase):
        def test_echo(self) -> None:
            self.validate(utils, "echo")
            status = self.run_component(utils.echo, {"msg": "from a ComponentTestCase"}, interval=0.1)
            assert status is not None
            self.assertEqual(status.state, AppState.SUCCEEDED)

    with open(os.devnull, "w") as sink:
        result = unittest.TextTestRunner(stream=sink).run(unittest.defaultTestLoader.loadTestsFromTestCase(EchoTest))
    assert result.wasSuccessful(), result.failures + result.errors


def test_get_device_mounts_warns_on_an_unknown_device_and_skips_it() -> None:
    from torchx.schedulers.devices import get_device_mounts

    with pytest.warns(UserWarning, match="'no-such-device'"):
        assert get_device_mounts({"no-such-device": 1}) == []
    efa = get_device_mounts({"vpc.amazonaws.com/efa": 2})
    assert [m.src_path for m in efa] == ["/dev/infiniband/uverbs0", "/dev/infiniband/uverbs1"]


def test_make_unique_gives_a_random_part_of_exactly_the_length_asked() -> None:
    from torchx.schedulers.ids import make_unique

    assert len(make_unique("app").removeprefix("app-")) == 12
    for n in (3, 12, 14, 30):
        rand = make_unique("app", n).removeprefix("app-")
        assert len(rand) == n and rand[0].isalpha() and rand.isalnum() and rand == rand.lower()


def test_mcad_unique_truncated_appid_sizes_as_torchx_and_leaves_the_app_alone() -> None:
    pytest.importorskip("torchx_sched_k8s")
    from torchx import specs
    from torchx.schedulers.kubernetes_mcad_scheduler import get_unique_truncated_appid

    def app(name: str) -> specs.AppDef:
        return specs.AppDef(name, roles=[specs.Role("r", image="i")])

    assert len(get_unique_truncated_appid(app("abcde"))) == len("abcde-") + 14
    long = "n" * 51  # 63 - 51 - 4 - 4 = 4 characters left for the random part
    assert get_unique_truncated_appid(app(long)).startswith(long + "-")
    assert len(get_unique_truncated_appid(app(long))) == 51 + 1 + 4
    longer = app("x" * 70)
    with pytest.warns(UserWarning, match="too long"):
        cut = get_unique_truncated_appid(longer)
    assert cut.startswith("x" * 55 + "-") and len(cut) == 55 + 1 + 3 and longer.name == "x" * 70
