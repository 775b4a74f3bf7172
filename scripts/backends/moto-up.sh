#!/usr/bin/env bash
# moto-up.sh - moto server (AWS emulator: Batch, SageMaker, CloudWatch Logs, S3, IAM, EC2, STS)
# on 127.0.0.1, with a seeded Batch job queue, and $MOTO_STATE_DIR/env.sh (AWS_ENDPOINT_URL,
# test credentials, region). Idempotent: when already up it only re-applies the Batch mode,
# seeds the queue if missing and rewrites env.sh (moto's in-memory state is kept).
#
# Knobs (defaults):
#   MOTO_BATCH_USE_DOCKER=auto  1: Batch jobs run as real containers on the local dockerd
#                               (image must exist locally; output goes to CloudWatch Logs
#                               /aws/batch/job, stream <jobName>/default/<jobId>).
#                               0: moto's "batch_simple": SUCCEEDED at submit, no logs.
#                               auto: 1 if dockerd answers on /var/run/docker.sock, else 0.
#   MOTO_SEED_BATCH_QUEUE=torchx  job queue (+ role, instance profile, VPC, subnet, SG, compute
#                               environment) to create; "" = none
#   MOTO_PORT=5055   MOTO_STATE_DIR=/tmp/torchx-moto (pid, log, env.sh, sagemaker config)
#   MOTO_VENV=/var/cache/torchx-moto/venv   created with MOTO_SPEC if missing (~40 s)
#   MOTO_SPEC='moto[server]>=5.1,<6'        MOTO_PYTHON= (use this interpreter instead)
#   MOTO_PATCHES=1   run through moto_launcher.py (SageMaker StopTrainingJob and the
#                    MOTO_SM_TRAINING_SECONDS / MOTO_SM_FINAL_STATUS lifecycle); 0 = plain moto
#   MOTO_SIMPLE_BATCH_FAIL_AFTER=N   (simple mode) jobs FAILED after N s; submit_job blocks N s
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/_lib.sh"

STATE_DIR=${MOTO_STATE_DIR:-/tmp/torchx-moto}
VENV=${MOTO_VENV:-/var/cache/torchx-moto/venv}
SPEC=${MOTO_SPEC:-'moto[server]>=5.1,<6'}
PORT=${MOTO_PORT:-5055}
QUEUE=${MOTO_SEED_BATCH_QUEUE-torchx}
EP=http://127.0.0.1:$PORT
T0=$EPOCHREALTIME

USE_DOCKER=${MOTO_BATCH_USE_DOCKER:-auto}
if [ "$USE_DOCKER" = auto ]; then if docker_ping; then USE_DOCKER=1; else USE_DOCKER=0; fi; fi
[ "$USE_DOCKER" = 1 ] && ! docker_ping && die "MOTO_BATCH_USE_DOCKER=1 needs dockerd on /var/run/docker.sock (run docker-up.sh first)"
IMAGE=localhost/torchx-python:bookworm   # for tests in docker mode (any local image works)

apt_install curl
if [ -n "${MOTO_PYTHON:-}" ]; then
    PY=$MOTO_PYTHON
else
    PY=$VENV/bin/python
    ensure_venv "$VENV" 'import moto.server, flask, flask_cors, docker, boto3' "$SPEC" boto3 docker
fi
"$PY" -c 'import moto.server, flask, flask_cors' 2>/dev/null || die "$PY cannot import moto's server"

up() { curl -sf --max-time 5 "$EP/moto-api/config" >/dev/null 2>&1; }
if running "$STATE_DIR/moto.pid" && cmdline_has "$(pid_in "$STATE_DIR/moto.pid")" 'moto' && up; then
    log "already running (pid $(pid_in "$STATE_DIR/moto.pid"))"
else
    if running "$STATE_DIR/moto.pid"; then bash "$HERE/moto-down.sh"; fi
    rm -rf "$STATE_DIR"; mkdir -p "$STATE_DIR"
    if [ "${MOTO_PATCHES:-1}" = 1 ]; then launch=("$HERE/moto_launcher.py"); else launch=(-m moto.server); fi
    log "starting moto $("$PY" -c 'import moto; print(moto.__version__)') on $EP"
    # never pick up real credentials or instance metadata
    env -u AWS_PROFILE -u AWS_ENDPOINT_URL AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing \
        AWS_EC2_METADATA_DISABLED=true DOCKER_HOST=unix:///var/run/docker.sock \
        setsid nohup "$PY" "${launch[@]}" -H 127.0.0.1 -p "$PORT" >"$STATE_DIR/moto.log" 2>&1 </dev/null &
    echo $! > "$STATE_DIR/moto.pid"
    WAIT_PID=$(pid_in "$STATE_DIR/moto.pid") wait_for 60 "moto on $EP" up || { tail_log "$STATE_DIR/moto.log"; die "moto did not come up"; }
fi

# Batch mode (a runtime setting; it survives POST /moto-api/reset)
use=false; [ "$USE_DOCKER" = 1 ] && use=true
curl -sf -X POST -H 'Content-Type: application/json' -d "{\"batch\": {\"use_docker\": $use}}" "$EP/moto-api/config" >/dev/null \
    || die "could not set the Batch mode"

# sagemaker (v2) SDK: no telemetry, and a default bucket so that it never calls the regional STS
# endpoint it hard-codes (that call ignores AWS_ENDPOINT_URL)
cat > "$STATE_DIR/sagemaker-config.yaml" <<YAML
SchemaVersion: '1.0'
SageMaker:
  PythonSDK:
    Modules:
      TelemetryOptOut: true
      Session:
        DefaultS3Bucket: sagemaker-us-east-1-123456789012
YAML

if [ -n "$QUEUE" ]; then
    AWS_ENDPOINT_URL=$EP AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_DEFAULT_REGION=us-east-1 \
    QUEUE=$QUEUE "$PY" - <<'PY' >"$STATE_DIR/seed.log" 2>&1 || { tail_log "$STATE_DIR/seed.log"; die "seeding the Batch queue failed"; }
import os, boto3
q = os.environ["QUEUE"]
iam, ec2, batch = boto3.client("iam"), boto3.client("ec2"), boto3.client("batch")
if batch.describe_job_queues(jobQueues=[q])["jobQueues"]:
    print("queue", q, "exists"); raise SystemExit
role = iam.create_role(RoleName=f"{q}-batch-role", AssumeRolePolicyDocument="{}")["Role"]
prof = iam.create_instance_profile(InstanceProfileName=f"{q}-batch-profile")["InstanceProfile"]
iam.add_role_to_instance_profile(InstanceProfileName=prof["InstanceProfileName"], RoleName=role["RoleName"])
vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.0.0/24")["Subnet"]["SubnetId"]
sg = ec2.create_security_group(GroupName=f"{q}-sg", Description="torchx tests", VpcId=vpc)["GroupId"]
# instanceRole must be an instance-profile ARN (a role ARN is rejected)
ce = batch.create_compute_environment(
    computeEnvironmentName=f"{q}-ce", type="MANAGED", state="ENABLED", serviceRole=role["Arn"],
    computeResources={"type": "EC2", "minvCpus": 0, "maxvCpus": 64, "desiredvCpus": 0, "instanceTypes": ["optimal"],
                      "subnets": [subnet], "securityGroupIds": [sg], "instanceRole": prof["Arn"]})
batch.create_job_queue(jobQueueName=q, state="ENABLED", priority=1,
                       computeEnvironmentOrder=[{"order": 1, "computeEnvironment": ce["computeEnvironmentArn"]}])
print("seeded queue", q)
PY
    log "$(tail -n 1 "$STATE_DIR/seed.log")"
fi

cat > "$STATE_DIR/env.sh.tmp" <<ENV
export AWS_ENDPOINT_URL=$EP
export AWS_ACCESS_KEY_ID=testing
export AWS_SECRET_ACCESS_KEY=testing
export AWS_SESSION_TOKEN=testing
export AWS_DEFAULT_REGION=us-east-1
export AWS_REGION=us-east-1
export AWS_EC2_METADATA_DISABLED=true
unset AWS_PROFILE
export SAGEMAKER_USER_CONFIG_OVERRIDE=$STATE_DIR/sagemaker-config.yaml
export SAGEMAKER_ADMIN_CONFIG_OVERRIDE=$STATE_DIR/sagemaker-config.yaml
export SAGEMAKER_SUPPRESS_V2_WARNING=1
export TORCHX_TEST_AWS_BATCH_QUEUE=$QUEUE
export TORCHX_TEST_AWS_BATCH_DOCKER=$USE_DOCKER
export TORCHX_TEST_AWS_IMAGE=$IMAGE
export TORCHX_TEST_MOTO_PYTHON=$PY
ENV
mv "$STATE_DIR/env.sh.tmp" "$STATE_DIR/env.sh"
log "ready in $(since "$T0")s (batch use_docker=$use); use: source $STATE_DIR/env.sh"
