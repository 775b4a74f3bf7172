#!/usr/bin/env bash
# smoke.sh <docker|slurm|lsf|k8s|moto|ray|all>... - quick end-to-end check of running backends
# (also: services.sh smoke ...). Reads /tmp/torchx-services/env.sh; needs no extra packages.
#   docker: busybox and python containers print hello
#   slurm:  a 2-component hetjob completes and sacct shows both components COMPLETED
#   lsf:    a 2-slot bsub job completes (bsub -K) and its output file says hello twice
#   k8s:    a batch/v1 Job on $TORCHX_TEST_K8S_IMAGE completes and its pod log is readable
#   moto:   a Batch job SUCCEEDs (as a container in docker mode) and, in docker mode, its output
#           is in CloudWatch Logs /aws/batch/job
#   ray:    a job submitted through the Jobs API SUCCEEDs and its log has its output
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LOG_TAG=smoke
. "$HERE/_lib.sh"
ENV_FILE=${TORCHX_SERVICES_DIR:-/tmp/torchx-services}/env.sh
[ -s "$ENV_FILE" ] || die "no $ENV_FILE: run services.sh up first"
# shellcheck disable=SC1090
. "$ENV_FILE"

smoke_docker() {
    local img out
    for img in "$TORCHX_TEST_BUSYBOX_IMAGE" "$TORCHX_TEST_DOCKER_IMAGE"; do
        out=$(timeout 60 docker run --rm "$img" echo hello 2>&1) && [ "$out" = hello ] || { log "docker run $img: $out"; return 1; }
    done
}

smoke_slurm() {
    local d jid out rc=1
    d=$(mktemp -d /tmp/torchx-smoke-slurm.XXXXXX)
    printf '%s\n' '#!/bin/bash' \
        '#SBATCH --job-name=smoke-0 --ntasks-per-node=1 --cpus-per-task=1 --mem=256' '#SBATCH hetjob' \
        '#SBATCH --job-name=smoke-1 --ntasks-per-node=1 --cpus-per-task=1 --mem=256' \
        'srun --output=slurm-%j-smoke-0.out hostname : --output=slurm-%j-smoke-1.out hostname' > "$d/het.sh"
    jid=$(cd "$d" && sbatch --parsable het.sh) || { log "sbatch failed"; return 1; }
    if wait_for 60 "sacct rows of hetjob $jid" bash -c "[ \$(sacct -n -P -X -j $jid -o JobName,State | grep -c '|COMPLETED$') = 2 ]"; then
        rc=0
    fi
    out=$(sacct -P -X -j "$jid" -o JobID,JobName,State,NodeList); log "sacct: $(tr '\n' ' ' <<<"$out")"
    log "outputs: $(cat "$d"/slurm-*.out 2>/dev/null | tr '\n' ' ')"
    rm -rf "$d"
    return $rc
}

smoke_lsf() {
    local d rc=1 out
    d=$(mktemp -d /tmp/torchx-smoke-lsf.XXXXXX)
    # shellcheck disable=SC2016  # $LSB_HOSTS is expanded by the job's shell
    if (cd "$d" && PATH=$TORCHX_TEST_LSF_BINDIR:$PATH timeout 60 bsub -K -n 2 -o out.txt \
            'for h in $LSB_HOSTS; do echo hello; done' >/dev/null 2>&1); then
        out=$(grep -c '^hello$' "$d/out.txt" 2>/dev/null)
        [ "$out" = 2 ] && rc=0
    fi
    log "lsf: $(head -n 2 "$d/out.txt" 2>/dev/null | tr '\n' ' ')"
    rm -rf "$d" 2>/dev/null || { sleep 1; rm -rf "$d"; }   # sbatchd may still be appending its job report
    return $rc
}

smoke_k8s() {
    python3 - "${K8S_STATE_DIR:-/tmp/torchx-k8s}/pki/ca.crt" <<'PY'
import json, os, ssl, sys, time, urllib.request
api, tok, img = os.environ["TORCHX_TEST_K8S_API"], os.environ["TORCHX_TEST_K8S_TOKEN"], os.environ["TORCHX_TEST_K8S_IMAGE"]
ctx = ssl.create_default_context(cafile=sys.argv[1])
def req(method, path, body=None, raw=False):
    r = urllib.request.Request(api + path, method=method, data=json.dumps(body).encode() if body else None,
                               headers={"Authorization": "Bearer " + tok, "Content-Type": "application/json"})
    data = urllib.request.urlopen(r, context=ctx, timeout=30).read()
    return data.decode() if raw else json.loads(data)
ns = "default"
job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"generateName": "smoke-"},
       "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
           "containers": [{"name": "c", "image": img, "command": ["sh", "-c", "echo hello from $(hostname)"]}]}}}}
name = req("POST", f"/apis/batch/v1/namespaces/{ns}/jobs", job)["metadata"]["name"]
t0 = time.time()
try:
    while True:
        conds = [c["type"] for c in req("GET", f"/apis/batch/v1/namespaces/{ns}/jobs/{name}/status")["status"].get("conditions", []) if c["status"] == "True"]
        if conds or time.time() - t0 > 120:
            break
        time.sleep(0.3)
    pods = req("GET", f"/api/v1/namespaces/{ns}/pods?labelSelector=job-name%3D{name}")["items"]
    logs = [req("GET", f"/api/v1/namespaces/{ns}/pods/{p['metadata']['name']}/log", raw=True).strip() for p in pods]
    print(f"[smoke] job {name}: {conds or 'TIMEOUT'} in {time.time() - t0:.1f}s, pod log: {logs}", file=sys.stderr)
    sys.exit(0 if conds == ["Complete"] and logs and logs[0].startswith("hello from") else 1)
finally:
    req("DELETE", f"/apis/batch/v1/namespaces/{ns}/jobs/{name}", {"propagationPolicy": "Foreground"})
PY
}

smoke_moto() {
    "${MOTO_VENV:-/var/cache/torchx-moto/venv}/bin/python" - <<'PY'
import os, sys, time, boto3
q, img, docker_mode = os.environ["TORCHX_TEST_AWS_BATCH_QUEUE"], os.environ["TORCHX_TEST_AWS_IMAGE"], os.environ["TORCHX_TEST_AWS_BATCH_DOCKER"] == "1"
b, logs = boto3.client("batch"), boto3.client("logs")
b.register_job_definition(jobDefinitionName="smoke", type="container", containerProperties={
    "image": img, "command": ["sh", "-c", "echo hello from batch"],
    "resourceRequirements": [{"type": "VCPU", "value": "1"}, {"type": "MEMORY", "value": "256"}]})
jid, t0 = b.submit_job(jobName="smoke", jobQueue=q, jobDefinition="smoke")["jobId"], time.time()
while (j := b.describe_jobs(jobs=[jid])["jobs"][0])["status"] not in ("SUCCEEDED", "FAILED") and time.time() - t0 < 120:
    time.sleep(0.2)
out = []
if docker_mode:
    stream = j.get("container", {}).get("logStreamName")
    out = [e["message"] for e in logs.get_log_events(logGroupName="/aws/batch/job", logStreamName=stream, startFromHead=True)["events"]] if stream else []
print(f"[smoke] batch job {jid}: {j['status']} in {time.time() - t0:.1f}s, docker={docker_mode}, logs: {out}", file=sys.stderr)
sys.exit(0 if j["status"] == "SUCCEEDED" and (not docker_mode or out == ["hello from batch"]) else 1)
PY
}

smoke_ray() {
    "${TORCHX_TEST_RAY_PYTHON:-/var/cache/torchx-ray/venv/bin/python}" - <<'PY'
import os, sys, time
from ray.job_submission import JobSubmissionClient
c = JobSubmissionClient(os.environ["TORCHX_TEST_RAY_ADDRESS"])
sub, t0 = c.submit_job(entrypoint="python -c 'import ray; ray.init(); print(\"hello\", ray.get(ray.remote(lambda: 42).remote()))'"), time.time()
while (st := str(c.get_job_status(sub))) not in ("SUCCEEDED", "FAILED", "STOPPED") and time.time() - t0 < 120:
    time.sleep(0.2)
logs = c.get_job_logs(sub)
print(f"[smoke] ray job {sub}: {st} in {time.time() - t0:.1f}s, hello 42 in log: {'hello 42' in logs}", file=sys.stderr)
c.delete_job(sub)
sys.exit(0 if st == "SUCCEEDED" and "hello 42" in logs else 1)
PY
}

names=" $* "; [[ $names == *" all "* ]] && names=" docker slurm lsf k8s moto ray "
fail=()
for n in docker slurm lsf k8s moto ray; do
    [[ $names == *" $n "* ]] || continue
    t=$EPOCHREALTIME
    marker=TORCHX_TEST_${n^^}; [ "$n" = moto ] && marker=TORCHX_TEST_AWS
    if [ "${!marker:-}" != 1 ]; then log "$n: not up (no $marker in $ENV_FILE)"; fail+=("$n"); continue; fi
    if "smoke_$n"; then log "$n: OK ($(since "$t")s)"; else log "$n: FAILED ($(since "$t")s)"; fail+=("$n"); fi
done
[ ${#fail[@]} = 0 ] || die "smoke failed: ${fail[*]}"
