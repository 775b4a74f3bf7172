"""The sbatch script: shape, resources, options, and quoting (checked by running its commands in bash)."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from torchx import specs
from torchx.specs.runopts import InvalidRunConfigException
from torchx.testing import hostile_value, macro_probe, macro_probe_output
from torchx_sched_slurm.scheduler import SlurmScheduler
from torchx_sched_slurm.script import log_file, sbatch_quote, shell_word

HOSTILE = [
    "plain",
    "",
    " lead and trail ",
    ":",
    "a:b",
    "it's",
    'say "hi"',
    "$(touch /tmp/pwned)",
    "`id`",
    "a; rm -rf /",
    "x && y || z | w > /dev/null",
    "line1\nline2",
    "tab\there",
    "ünïcödé €𝄞",
    "back\\slash\\",
    "$HOME ${HOME} $ ${unknown_macro}",
    "*?[glob]",
    "#not a comment",
    "-e",
    "--",
    "%j %t",
    "'\"'\"'",
]

PRINT_ARGV = "import json, os, sys; print(json.dumps({'argv': sys.argv[1:], 'env': os.environ.get('HOSTILE')}))"


def role(name: str = "trainer", replicas: int = 1, **kw: object) -> specs.Role:
    kw.setdefault("resource", specs.Resource(cpu=2, gpu=0, memMB=1024))
    kw.setdefault("args", ["hi"])
    return specs.Role(name, image="/img", entrypoint="echo", num_replicas=replicas, **kw)  # type: ignore[arg-type]


def dryrun(app: specs.AppDef, cfg: dict[str, specs.CfgVal] | None = None) -> str:
    return str(SlurmScheduler("test").submit_dryrun(app, cfg or {}).request)


def sections(script: str) -> list[list[str]]:
    """The #SBATCH options of each het component."""
    out: list[list[str]] = [[]]
    for line in script.splitlines():
        if line == "#SBATCH hetjob":
            out.append([])
        elif line.startswith("#SBATCH "):
            out[-1].append(line[len("#SBATCH ") :])
    return out


def run_replicas(script: str, count: int) -> list[str]:
    """Runs each replica's command in bash exactly as the script's srun lines do; returns their stdouts."""
    body = script[script.index("# host of the first replica") : script.index("\nsrun")]
    cmds = "\n".join(f'bash -c "$split; run_split r{i} ${{replica_{i}[*]@Q}}"' for i in range(count))
    env = {"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": "4242", "SLURM_JOB_NODELIST": "node7"}
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            ["bash", "-c", body + "\n" + cmds], cwd=tmp, env=env, capture_output=True, text=True, check=True
        )
        outs = [Path(tmp, f"r{i}.out").read_text(encoding="utf-8") for i in range(count)]
    assert "".join(outs) == proc.stdout  # run_split copied each replica's stdout to its .out file
    return proc.stdout.splitlines()


def test_one_component_per_replica_in_role_order() -> None:
    app = specs.AppDef("app", [role("trainer", 2), role("ps", 1)])
    secs = sections(dryrun(app))
    assert len(secs) == 3
    assert [s[0] for s in secs] == ["--job-name=trainer-0", "--job-name=trainer-1", "--job-name=ps-0"]
    for s in secs:
        assert "--nodes=1" in s
        assert "--ntasks=1" in s
        assert "--cpus-per-task=2" in s
        assert "--mem=1024M" in s


def test_single_replica_is_a_plain_job() -> None:
    script = dryrun(specs.AppDef("app", [role()]))
    assert "hetjob" not in script
    assert "--het-group" not in script
    assert re.search(r"^srun --output=slurm-\"\$SLURM_JOB_ID\"-trainer-0\.log bash -c ", script, re.M)
    assert "run_split slurm-${SLURM_JOB_ID}-trainer-0 ${replica_0[*]@Q}" in script


def test_het_groups_and_exit_code_handling() -> None:
    script = dryrun(specs.AppDef("app", [role("a", 2), role("b", 1)]))
    assert re.findall(r"^srun --het-group=(\d+) ", script, re.M) == ["0", "1", "2"]
    assert all(line.endswith("&") for line in script.splitlines() if line.startswith("srun"))
    assert script.count("pids+=($!)") == 3
    assert "while [ ${#pids[@]} -gt 0 ]; do" in script
    assert script.rstrip().endswith('exit "$rc"')
    assert "requeue" not in script


def test_resources_gpu_nomem_exclusive() -> None:
    res = specs.Resource(cpu=4, gpu=2, memMB=2048)
    app = specs.AppDef("app", [role(resource=res)])
    (sec,) = sections(dryrun(app, {"nomem": True, "exclusive": True}))
    assert "--gpus-per-node=2" in sec
    assert "--cpus-per-task=4" in sec
    assert "--exclusive" in sec
    assert not any(o.startswith("--mem") for o in sec)


def test_run_options_per_component_and_mail_on_the_first() -> None:
    cfg: dict[str, specs.CfgVal] = {
        "partition": "debug",
        "time": "1-02:03:04",
        "comment": "nightly",
        "constraint": "a100&ib",
        "mail-user": "me@example.com",
        "mail-type": "END,FAIL",
        "qos": "high",
        "account": "proj",
        "job_dir": "/tmp/x/../jobdir",
        "signal": "USR1@120",
    }
    first, second = sections(dryrun(specs.AppDef("app", [role(replicas=2)]), cfg))
    for sec in (first, second):
        for opt in (
            "--partition=debug",
            "--time=1-02:03:04",
            '--constraint="a100&ib"',
            "--qos=high",
            "--account=proj",
            "--chdir=/tmp/jobdir",
            "--signal=USR1@120",
        ):
            assert opt in sec
    for opt in ("--comment=nightly", "--mail-user=me@example.com", "--mail-type=END,FAIL"):
        assert opt not in first + second


def test_the_jobs_own_options_are_on_the_sbatch_command_line_as_torchx_passes_them() -> None:
    cfg: dict[str, specs.CfgVal] = {"comment": "it's #1", "mail-user": "me@example.com", "mail-type": "END"}
    req = SlurmScheduler("test").submit_dryrun(specs.AppDef("app", [role(replicas=2)]), cfg).request
    assert req.cmd == [
        "sbatch",
        "--parsable",
        "--comment=it's #1",
        "--mail-user=me@example.com",
        "--mail-type=END",
    ]
    assert not any(o.startswith(("--comment", "--mail")) for o in sections(req.materialize())[0])
    shown = "# submitted with: sbatch --parsable '--comment=it'\"'\"'s #1' --mail-user=me@example.com --mail-type=END"
    assert req.materialize().splitlines()[2] == shown
    assert SlurmScheduler("test").submit_dryrun(specs.AppDef("app", [role()]), {}).request.cmd == [
        "sbatch",
        "--parsable",
    ]


def test_retries_requeue_with_the_smallest_max_retries() -> None:
    app = specs.AppDef("app", [role("a", max_retries=3), role("b", max_retries=2)])
    script = dryrun(app)
    assert all("--requeue" in s for s in sections(script))
    assert '"${SLURM_RESTART_COUNT:-0}" -lt 2 ]' in script
    assert 'scontrol requeue "$SLURM_JOB_ID"' in script
    assert "--open-mode=append" in script


def test_hostile_args_and_env_reach_the_process_unchanged() -> None:
    args = ["-c", PRINT_ARGV, *HOSTILE]
    app = specs.AppDef(
        "app",
        [
            specs.Role(
                "r",
                image="/img",
                entrypoint=sys.executable,
                args=args,
                env={"HOSTILE": "a,b=c 'q' \"d\" $(x) `y`; z\n2 ü"},
                resource=specs.Resource(1, 0, 64),
            )
        ],
    )
    (out,) = run_replicas(dryrun(app), 1)
    assert json.loads(out) == {"argv": HOSTILE, "env": "a,b=c 'q' \"d\" $(x) `y`; z\n2 ü"}


def test_random_args_round_trip() -> None:
    rng = random.Random(7)
    alphabet = "ab :;'\"\\`(){}[]*?!#&|<>~\n\t=%-é€"  # no "$": "$$" is the macro escape
    args = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(200)]
    app = specs.AppDef(
        "app",
        [
            specs.Role(
                "r",
                image="/img",
                entrypoint=sys.executable,
                args=["-c", PRINT_ARGV, *args],
                resource=specs.Resource(1, 0, 64),
            )
        ],
    )
    (out,) = run_replicas(dryrun(app), 1)
    assert json.loads(out)["argv"] == args


def test_macros_app_id_replica_id_rank0_img_root() -> None:
    args = [
        "-c",
        "import sys, os; print(' '.join(sys.argv[1:]), os.environ['ID'])",
        "${app_id}",
        "${replica_id}",
        "${rank0_env}",
        "${img_root}",
        "$${${rank0_env}}",
    ]
    r = specs.Role(
        "w",
        image="/img",
        entrypoint=sys.executable,
        args=args,
        num_replicas=2,
        env={"ID": "job-${app_id}-${replica_id}"},
        resource=specs.Resource(1, 0, 64),
    )
    outs = run_replicas(dryrun(specs.AppDef("app", [r])), 2)
    assert outs == [
        "4242 0 TORCHX_RANK0_HOST /img ${TORCHX_RANK0_HOST} job-4242-0",
        "4242 1 TORCHX_RANK0_HOST /img ${TORCHX_RANK0_HOST} job-4242-1",
    ]


def test_rank0_host_falls_back_to_the_nodelist_of_a_plain_job() -> None:
    r = specs.Role(
        "w", image="/img", entrypoint="sh", args=["-c", "echo $TORCHX_RANK0_HOST"], resource=specs.Resource(1, 0, 64)
    )
    assert run_replicas(dryrun(specs.AppDef("app", [r])), 1) == ["node7"]


def test_log_files_are_per_replica_and_safe() -> None:
    assert log_file("12", "trainer", 3, "err") == "slurm-12-trainer-3.err"
    assert log_file("12", "a b/%j", 0, "out") == "slurm-12-a_b_j-0.out"


@pytest.mark.parametrize(
    ("value", "quoted"),
    [
        ("debug", "debug"),
        ("END,FAIL", "END,FAIL"),
        ("a b", '"a b"'),
        ('say "hi" #1', '"say \\"hi\\" #1"'),
        ("back\\slash", '"back\\\\slash"'),
        ("it's", '"it\'s"'),
    ],
)
def test_sbatch_quote(value: str, quoted: str) -> None:
    assert sbatch_quote(value) == quoted


def test_shell_word_expands_only_the_job_id() -> None:
    assert shell_word("") == "''"
    assert shell_word("a b") == "'a b'"
    assert shell_word("x\0app_id\0y") == 'x"$SLURM_JOB_ID"y'


def test_header_names_the_app_safely() -> None:
    script = dryrun(specs.AppDef("evil\n#SBATCH --partition=x", [role()]))
    assert "--partition=x" not in sections(script)[0]
    assert script.splitlines()[1].startswith('# torchx app "evil\\n#SBATCH')


@pytest.mark.parametrize(
    ("app", "match"),
    [
        (specs.AppDef("a", [role(env={"BAD-NAME": "1"})]), "not a valid variable name"),
        (specs.AppDef("a", [role(env={"X": "nul\0"})]), "NUL"),
        (specs.AppDef("a", [role(args=["a\0b"])]), "NUL"),
        (specs.AppDef("a", [role(name="bad\nrole")]), "control characters"),
    ],
)
def test_unpassable_values_are_refused(app: specs.AppDef, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        dryrun(app)


def test_invalid_option_is_refused_in_dryrun() -> None:
    with pytest.raises(InvalidRunConfigException, match="time"):
        dryrun(specs.AppDef("a", [role()]), {"time": "soon"})


def test_dryrun_of_1000_replicas_is_one_heterogeneous_job() -> None:
    # its speed (<= 30 ms) is measured by benchmarks/run.py scenario 12, not timed here
    app = specs.AppDef("big", [role("w", 1000)])
    script = str(SlurmScheduler("test").submit_dryrun(app, {}).request)
    assert script.count("#SBATCH hetjob") == 999


def test_macro_values_are_data_in_the_job_script(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    image = hostile_value(str(marker))  # the img_root macro
    job_id = hostile_value(str(marker))  # stands for $SLURM_JOB_ID (numeric in real life)
    script = dryrun(
        specs.AppDef(
            "macros",
            [macro_probe(image, str(marker), num_replicas=2, resource=specs.Resource(cpu=1, gpu=0, memMB=256))],
        )
    )
    body = script[script.index("# host of the first replica") : script.index("\nsrun")]
    for k in (0, 1):
        cmd = f'bash -c "exec ${{replica_{k}[*]@Q}}"'
        env = {"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": job_id, "SLURM_JOB_NODELIST": "node7"}
        proc = subprocess.run(["bash", "-c", body + "\n" + cmd], env=env, capture_output=True, text=True, check=True)
        assert proc.stdout == macro_probe_output(image, job_id, k)
    assert not marker.exists()


@pytest.mark.parametrize("key", ["job_dir", "partition", "comment"])
def test_a_newline_in_an_sbatch_value_is_refused(key: str) -> None:
    with pytest.raises(InvalidRunConfigException, match="single line"):  # before any script is written
        dryrun(specs.AppDef("a", [role()]), {key: "/tmp/x\nrm -rf /tmp/y"})


def array_apps(values: list[str]) -> list[specs.AppDef]:
    return [
        specs.AppDef(
            f"trial-{i}",
            [
                specs.Role(
                    "r",
                    image="/img",
                    entrypoint=sys.executable,
                    args=["-c", PRINT_ARGV, v, f"job={specs.macros.app_id}"],
                    env={"HOSTILE": v},
                    resource=specs.Resource(1, 0, 64),
                )
            ],
        )
        for i, v in enumerate(values)
    ]


def test_job_array_picks_each_tasks_args_quoted() -> None:
    values = HOSTILE[:12]
    info = SlurmScheduler("test").submit_array_dryrun(array_apps(values), {}, max_parallel=3)
    script = str(info.request)
    assert sections(script)[0][:2] == ["--job-name=r-0", "--nodes=1"]
    assert "--array=0-11%3" in sections(script)[0]
    assert "hetjob" not in script
    assert script.count("\nsrun ") == 1
    assert re.search(
        r'^srun --output=slurm-"\$\{SLURM_ARRAY_JOB_ID\}_\$\{SLURM_ARRAY_TASK_ID\}"-r-0\.log ', script, re.M
    )
    body = script[script.index('case "$SLURM_ARRAY_TASK_ID"') : script.index("\nsrun")]
    for i, value in enumerate(values):
        env = {"PATH": "/usr/bin:/bin", "SLURM_ARRAY_JOB_ID": "77", "SLURM_ARRAY_TASK_ID": str(i)}
        proc = subprocess.run(
            ["bash", "-c", body + '\nbash -c "exec ${replica_0[*]@Q}"'], env=env, capture_output=True, text=True
        )
        assert json.loads(proc.stdout) == {"argv": [value, f"job=77_{i}"], "env": value}
    unknown = subprocess.run(["bash", "-c", body], env={"SLURM_ARRAY_TASK_ID": "12"}, capture_output=True, text=True)
    assert unknown.returncode == 2
    assert "no task 12" in unknown.stderr


def test_job_array_without_throttle_and_refusals() -> None:
    from torchx.schedulers.capabilities import UnsupportedFeatureError

    sched = SlurmScheduler("test")
    assert "--array=0-1" in sections(str(sched.submit_array_dryrun(array_apps(["a", "b"]), {}).request))[0]
    assert sched.array_element_id("12", 3) == "12_3"
    two = array_apps(["a", "b"])
    two[1].roles[0].num_replicas = 2
    with pytest.raises(UnsupportedFeatureError, match="one replica"):
        sched.submit_array_dryrun(two, {})
    other = array_apps(["a", "b"])
    other[1].roles[0].resource = specs.Resource(4, 0, 64)
    with pytest.raises(UnsupportedFeatureError, match="differ only"):
        sched.submit_array_dryrun(other, {})
