#!/usr/bin/env bash
# k8s-up.sh - a real Kubernetes v1.20.2 control plane on 127.0.0.1 for tests:
#   etcd 3.4 (Debian `etcd-server`) + kube-apiserver, kube-controller-manager, kube-scheduler
#   built once from Debian bookworm's `kubernetes` SOURCE package (5-8 min on 2 cores; binaries
#   cached in $K8S_CACHE_DIR/bin), plus a kubelet:
#     docker  real kubelet (dockershim) on the local Docker engine (start docker-up.sh first):
#             node "localhost", pods are real containers of LOCAL images
#     fake    fake_kubelet.py: node "fake-node-0", runs each pod's command as a host process
#     none    no node: pods stay Pending (API objects only)
# Idempotent: a no-op when already up, healthy and in the same kubelet mode; otherwise it
# stops what is left (k8s-down.sh) and starts afresh (the state dir, incl. etcd, is wiped).
#
# Knobs (defaults):
#   K8S_KUBELET=auto          docker if dockerd answers on /var/run/docker.sock, else fake
#   K8S_STATE_DIR=/tmp/torchx-k8s        certs, etcd data, logs, pids, kubeconfig, env.sh
#   K8S_CACHE_DIR=/var/cache/torchx-k8s  bin/ (built binaries), pki/ (test CA + certs),
#                                        venv/ (fake kubelet's python)
#   K8S_API_PORT=16443 K8S_ETCD_PORT=23790 K8S_ETCD_PEER_PORT=23800 K8S_KUBELET_PORT=10250
#   K8S_CONTROLLERS=1         start controller-manager + scheduler (Job controller, GC, SAs)
#   K8S_VOLCANO_CRD=1         schema-less jobs.batch.volcano.sh + queues.scheduling.volcano.sh CRDs
#   K8S_PYTHON=               interpreter for the fake kubelet (default: venv with `kubernetes`)
#   K8S_ADMIN_TOKEN=torchx-admin-token   bearer token of user admin (group system:masters)
#   K8S_KEEP_BUILD=0          1 keeps the ~2 GB build tree
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/_lib.sh"

STATE_DIR=${K8S_STATE_DIR:-/tmp/torchx-k8s}
CACHE_DIR=${K8S_CACHE_DIR:-/var/cache/torchx-k8s}
BIN_DIR=$CACHE_DIR/bin
API_PORT=${K8S_API_PORT:-16443}
ETCD_PORT=${K8S_ETCD_PORT:-23790}
ETCD_PEER_PORT=${K8S_ETCD_PEER_PORT:-23800}
KUBELET_PORT=${K8S_KUBELET_PORT:-10250}
TOKEN=${K8S_ADMIN_TOKEN:-torchx-admin-token}
DOCKER_SOCK=/var/run/docker.sock
API=https://127.0.0.1:$API_PORT
T0=$EPOCHREALTIME

MODE=${K8S_KUBELET:-auto}
if [ "$MODE" = auto ]; then if docker_ping; then MODE=docker; else MODE=fake; fi; fi
case "$MODE" in docker | fake | none) ;; *) die "K8S_KUBELET must be docker, fake, none or auto (got '$MODE')" ;; esac
[ "$MODE" = docker ] && ! docker_ping && die "K8S_KUBELET=docker needs dockerd on $DOCKER_SOCK (run docker-up.sh first)"
NODE=none; [ "$MODE" = docker ] && NODE=localhost; [ "$MODE" = fake ] && NODE=fake-node-0
IMAGE=localhost/torchx-python:bookworm   # what tests should use (ignored by the fake kubelet)

api() { curl -sf --max-time 10 --cacert "$STATE_DIR/pki/ca.crt" -H "Authorization: Bearer $TOKEN" "$@"; }
api_ready() { api "$API/readyz" | grep -qx ok; }
node_ready() {
    api "$API/api/v1/nodes/$NODE" | python3 -c 'import json,sys
c=[x for x in json.load(sys.stdin)["status"].get("conditions",[]) if x["type"]=="Ready"]
sys.exit(0 if c and c[0]["status"]=="True" else 1)'
}
# the components a healthy cluster of this mode has (name:cmdline-regex)
components() {
    echo etcd:etcd kube-apiserver:kube-apiserver
    [ "${K8S_CONTROLLERS:-1}" = 1 ] && echo kube-controller-manager:kube-controller-manager kube-scheduler:kube-scheduler
    [ "$MODE" = docker ] && echo kubelet:kubelet
    [ "$MODE" = fake ] && echo fake-kubelet:fake_kubelet.py
    true
}
write_env() {
    cat > "$STATE_DIR/env.sh.tmp" <<ENV
export KUBECONFIG=$STATE_DIR/kubeconfig
export TORCHX_TEST_K8S_API=$API
export TORCHX_TEST_K8S_TOKEN=$TOKEN
export TORCHX_TEST_K8S_KUBELET=$MODE
export TORCHX_TEST_K8S_NODE=$NODE
export TORCHX_TEST_K8S_IMAGE=$IMAGE
ENV
    mv "$STATE_DIR/env.sh.tmp" "$STATE_DIR/env.sh"
}

# ---------------------------------------------------------------- already up?
healthy=1; any=0
for c in $(components); do
    running "$STATE_DIR/${c%%:*}.pid" && cmdline_has "$(pid_in "$STATE_DIR/${c%%:*}.pid")" "${c#*:}" && any=1 || healthy=0
done
[ "$(cat "$STATE_DIR/mode" 2>/dev/null)" = "$MODE" ] || healthy=0
if [ $healthy = 1 ] && api_ready && { [ "$MODE" = none ] || node_ready; }; then
    write_env
    log "already up (kubelet=$MODE), nothing to do"
    exit 0
fi
for p in "$STATE_DIR"/*.pid; do [ -e "$p" ] && running "$p" && any=1; done
if [ $any = 1 ]; then
    log "partly up or in another kubelet mode than '$MODE': restarting"
    bash "$HERE/k8s-down.sh"
fi

# ---------------------------------------------------------------- build (once)
build_k8s() {
    local b=$CACHE_DIR/build t=$EPOCHREALTIME k r f dirs
    local what="cmd/kube-apiserver cmd/kube-controller-manager cmd/kube-scheduler cmd/kubelet"
    apt_install golang-1.19-go rsync jq make tar perl gcc libc6-dev dpkg-dev
    rm -rf "$b"; mkdir -p "$b"/apt/lists/partial "$b"/apt/cache/archives/partial "$b"/apt/parts "$b"/src "$b"/home
    # deb-src lines derived from the system's sources, in private apt dirs (system apt untouched)
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] && sed 's/^Types:.*/Types: deb-src/' "$f" > "$b/apt/parts/$(basename "$f")"
    done
    { [ -f /etc/apt/sources.list ] && sed -n 's/^deb /deb-src /p' /etc/apt/sources.list
      for f in /etc/apt/sources.list.d/*.list; do [ -f "$f" ] && sed -n 's/^deb /deb-src /p' "$f"; done
    } > "$b/apt/parts/src.list" 2>/dev/null || true
    local APTO=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$b/apt/parts"
                -o "Dir::State::Lists=$b/apt/lists" -o "Dir::Cache=$b/apt/cache")
    log "fetching Debian source package 'kubernetes'"
    apt-get "${APTO[@]}" update -q >"$b/apt.log" 2>&1 || { tail_log "$b/apt.log"; die "apt-get update (deb-src) failed"; }
    (cd "$b/src" && apt-get "${APTO[@]}" source --download-only kubernetes) >>"$b/apt.log" 2>&1 \
        || { tail_log "$b/apt.log"; die "apt-get source kubernetes failed"; }
    tar xzf "$b"/src/kubernetes_*.orig.tar.gz -C "$b/src"
    dirs=("$b"/src/kubernetes-*/); k=${dirs[0]%/}
    [ -d "$k" ] || die "no kubernetes-* directory in the source package"
    # vendored reflect2 v1.0.1 segfaults in map iteration with Go >= 1.18: apply reflect2 v1.0.2's fix
    r=$k/vendor/github.com/modern-go/reflect2
    perl -0pi -e 's/func mapiterinit\(rtype unsafe\.Pointer, m unsafe\.Pointer\) \*hiter/func mapiterinit(rtype unsafe.Pointer, m unsafe.Pointer, it *hiter)/' "$r/unsafe_link.go"
    perl -0pi -e 's|\t// rest fields are ignored\n|\tt           unsafe.Pointer\n\th           unsafe.Pointer\n\tbuckets     unsafe.Pointer\n\tbptr        unsafe.Pointer\n\toverflow    *[]unsafe.Pointer\n\toldoverflow *[]unsafe.Pointer\n\tstartBucket uintptr\n\toffset      uint8\n\twrapped     bool\n\tB           uint8\n\ti           uint8\n\tbucket      uintptr\n\tcheckBucket uintptr\n|' "$r/unsafe_link.go"
    perl -0pi -e 's|\treturn &UnsafeMapIterator\{\n\t\thiter:      mapiterinit\(type2\.rtype, \*\(\*unsafe\.Pointer\)\(obj\)\),|\tvar it hiter\n\tmapiterinit(type2.rtype, *(*unsafe.Pointer)(obj), &it)\n\treturn &UnsafeMapIterator{\n\t\thiter:      &it,|' "$r/unsafe_map.go"
    if ! { grep -q 'it \*hiter)' "$r/unsafe_link.go" && grep -q checkBucket "$r/unsafe_link.go" \
        && grep -q 'hiter:      &it' "$r/unsafe_map.go"; }; then die "reflect2 patch did not apply"; fi
    # no CAP_SYS_RESOURCE here: runc fails on a negative oom_score_adj, which the kubelet
    # hard-codes (-998 pod sandbox, -997 Guaranteed pods): use 0
    perl -pi -e 's/^\tdefaultSandboxOOMAdj int = -998$/\tdefaultSandboxOOMAdj int = 0/' "$k/pkg/kubelet/dockershim/docker_sandbox.go"
    perl -pi -e 's/^\tguaranteedOOMScoreAdj int = -997$/\tguaranteedOOMScoreAdj int = 0/' "$k/pkg/kubelet/qos/policy.go"
    if ! { grep -q 'defaultSandboxOOMAdj int = 0' "$k/pkg/kubelet/dockershim/docker_sandbox.go" \
        && grep -q 'guaranteedOOMScoreAdj int = 0' "$k/pkg/kubelet/qos/policy.go"; }; then die "kubelet OOM patch did not apply"; fi
    log "building ${what//cmd\//} (5-8 min; log: $b/build.log)"
    (cd "$k" && env PATH="/usr/lib/go-1.19/bin:$PATH" HOME="$b/home" CGO_ENABLED=0 GOPROXY=off \
        make WHAT="$what" >"$b/build.log" 2>&1) || { tail_log "$b/build.log"; die "build failed"; }
    # the pod sandbox ("pause") image cannot be pulled: build its static binary
    gcc -Os -static -o "$k/_output/bin/pause" "$k/build/pause/linux/pause.c" -DVERSION=v3.2-local || die "pause build failed"
    mkdir -p "$BIN_DIR.tmp"
    for f in $what pause; do cp "$k/_output/bin/${f#cmd/}" "$BIN_DIR.tmp/"; done
    "$BIN_DIR.tmp/kube-apiserver" --version > "$BIN_DIR.tmp/VERSION"
    rm -rf "$BIN_DIR"; mv "$BIN_DIR.tmp" "$BIN_DIR"
    [ "${K8S_KEEP_BUILD:-0}" = 1 ] || rm -rf "$b"
    log "built $(cat "$BIN_DIR/VERSION") in $(since "$t")s"
}

apt_install etcd-server openssl curl
for f in kube-apiserver kube-controller-manager kube-scheduler kubelet pause VERSION; do
    [ -e "$BIN_DIR/$f" ] || { build_k8s; break; }
done

if [ "$MODE" = fake ]; then
    PY=${K8S_PYTHON:-$CACHE_DIR/venv/bin/python}
    if [ -z "${K8S_PYTHON:-}" ] && ! "$PY" -c 'import kubernetes' 2>/dev/null; then
        log "creating $CACHE_DIR/venv with the kubernetes client (fake kubelet)"
        rm -rf "$CACHE_DIR/venv"; python3 -m venv "$CACHE_DIR/venv"
        "$CACHE_DIR/venv/bin/pip" install -q --disable-pip-version-check 'kubernetes>=29' >/tmp/torchx-k8s-venv.log 2>&1 \
            || { tail_log /tmp/torchx-k8s-venv.log; die "pip install kubernetes failed"; }
    fi
    "$PY" -c 'import kubernetes' 2>/dev/null || die "$PY cannot import kubernetes"
fi

# ---------------------------------------------------------------- start
start_bg() {  # start_bg name cmd...   (own session, so it outlives the calling shell)
    local name=$1; shift
    setsid nohup "$@" >"$STATE_DIR/logs/$name.log" 2>&1 </dev/null &
    echo $! >"$STATE_DIR/$name.pid"
}
fail() { tail_log "$STATE_DIR/logs/$1.log"; die "$2"; }

unmount_under "$STATE_DIR"; rm -rf "$STATE_DIR"; mkdir -p "$STATE_DIR/logs"
PKI=$STATE_DIR/pki
# CA, serving certs and SA keys are made once and kept in the cache (kubeconfigs stay valid)
if [ ! -s "$CACHE_DIR/pki/sa.pub" ]; then
    rm -rf "$CACHE_DIR/pki.tmp"; mkdir -p "$CACHE_DIR/pki.tmp"
    (
        cd "$CACHE_DIR/pki.tmp"
        openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 -subj /CN=torchx-test-ca 2>/dev/null
        for c in apiserver kubelet; do
            openssl req -newkey rsa:2048 -nodes -keyout $c.key -out $c.csr -subj "/CN=$c" 2>/dev/null
            printf 'subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n' > $c.ext
            openssl x509 -req -in $c.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out $c.crt -days 3650 -extfile $c.ext 2>/dev/null
        done
        openssl genrsa -out sa.key 2048 2>/dev/null
        openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    ) || die "certificate generation failed"
    rm -rf "$CACHE_DIR/pki"; mv "$CACHE_DIR/pki.tmp" "$CACHE_DIR/pki"
    log "certificates made (cached in $CACHE_DIR/pki)"
fi
cp -r "$CACHE_DIR/pki" "$PKI"
echo "$TOKEN,admin,admin-uid,system:masters" > "$PKI/tokens.csv"
echo "$MODE" > "$STATE_DIR/mode"

start_bg etcd etcd --name torchx --data-dir "$STATE_DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "torchx=http://127.0.0.1:$ETCD_PEER_PORT"
WAIT_PID=$(pid_in "$STATE_DIR/etcd.pid") wait_for 30 etcd curl -sf "http://127.0.0.1:$ETCD_PORT/health" || fail etcd "etcd did not come up"

t=$EPOCHREALTIME
start_bg kube-apiserver "$BIN_DIR/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT" \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
    --client-ca-file="$PKI/ca.crt" --token-auth-file="$PKI/tokens.csv" \
    --authorization-mode=Node,RBAC \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
    --service-cluster-ip-range=10.0.0.0/24 --allow-privileged=true \
    --endpoint-reconciler-type=none --kubelet-preferred-address-types=Hostname,InternalIP \
    --cert-dir="$PKI/generated"
# (endpoint-reconciler none: a 127.0.0.1 advertise address otherwise logs an error every 10 s;
#  Hostname first: the real node "localhost" resolves to 127.0.0.1, no DNS lookup needed)
WAIT_PID=$(pid_in "$STATE_DIR/kube-apiserver.pid") wait_for 90 "kube-apiserver /readyz" api_ready \
    || fail kube-apiserver "kube-apiserver not ready"
log "kube-apiserver ready in $(since "$t")s on $API"

cat > "$STATE_DIR/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: torchx-test
  cluster:
    server: $API
    certificate-authority-data: $(base64 -w0 < "$PKI/ca.crt")
users:
- name: admin
  user:
    token: $TOKEN
contexts:
- name: torchx-test
  context:
    cluster: torchx-test
    user: admin
    namespace: default
current-context: torchx-test
KC

if [ "${K8S_CONTROLLERS:-1}" = 1 ]; then
    start_bg kube-controller-manager "$BIN_DIR/kube-controller-manager" \
        --kubeconfig="$STATE_DIR/kubeconfig" --service-account-private-key-file="$PKI/sa.key" \
        --root-ca-file="$PKI/ca.crt" --leader-elect=false --port=0 --secure-port=0 \
        --use-service-account-credentials=false --cluster-name=torchx-test
    start_bg kube-scheduler "$BIN_DIR/kube-scheduler" \
        --kubeconfig="$STATE_DIR/kubeconfig" --leader-elect=false --port=0 --secure-port=0
    # pods are admitted only once the ServiceAccount controller made "default"
    wait_for 60 "default ServiceAccount" api "$API/api/v1/namespaces/default/serviceaccounts/default" \
        || fail kube-controller-manager "no default ServiceAccount"
    log "controller-manager and scheduler up"
fi

if [ "${K8S_VOLCANO_CRD:-1}" = 1 ]; then
    crd() {  # crd group plural kind version scope
        api -X POST -H 'Content-Type: application/json' "$API/apis/apiextensions.k8s.io/v1/customresourcedefinitions" -d @- >/dev/null <<JSON
{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"$2.$1"},
 "spec":{"group":"$1","scope":"$5","names":{"plural":"$2","singular":"${2%s}","kind":"$3","listKind":"$3List"},
  "versions":[{"name":"$4","served":true,"storage":true,"subresources":{"status":{}},
   "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}
JSON
    }
    crd batch.volcano.sh jobs Job v1alpha1 Namespaced || die "could not create the Volcano Job CRD"
    crd scheduling.volcano.sh queues Queue v1beta1 Cluster || die "could not create the Volcano Queue CRD"
    wait_for 30 "Volcano CRD" api "$API/apis/batch.volcano.sh/v1alpha1/jobs" || die "Volcano CRD not served"
fi

if [ "$MODE" = fake ]; then
    start_bg fake-kubelet env KUBECONFIG="$STATE_DIR/kubeconfig" \
        FAKE_KUBELET_CERT="$PKI/kubelet.crt" FAKE_KUBELET_KEY="$PKI/kubelet.key" FAKE_KUBELET_PORT="$KUBELET_PORT" \
        FAKE_KUBELET_LOGDIR="$STATE_DIR/pod-logs" FAKE_NODE_NAME="$NODE" "$PY" "$HERE/fake_kubelet.py"
    WAIT_PID=$(pid_in "$STATE_DIR/fake-kubelet.pid") wait_for 60 "node $NODE Ready" node_ready || fail fake-kubelet "fake kubelet node not Ready"
elif [ "$MODE" = docker ]; then
    if ! curl -sf --unix-socket "$DOCKER_SOCK" http://docker/images/localhost/pause:3.2/json >/dev/null; then
        log "importing pod sandbox image localhost/pause:3.2"
        d=$(mktemp -d /tmp/pause-root.XXXXXX); cp "$BIN_DIR/pause" "$d/pause"
        tar -C "$d" -c . | curl -sf --unix-socket "$DOCKER_SOCK" -X POST -H 'Content-Type: application/x-tar' \
            --data-binary @- 'http://docker/images/create?fromSrc=-&repo=localhost/pause&tag=3.2&changes=ENTRYPOINT%20%5B%22%2Fpause%22%5D' >/dev/null \
            || die "could not import localhost/pause:3.2"
        rm -rf "$d"
    fi
    cgdriver=$(curl -sf --unix-socket "$DOCKER_SOCK" http://docker/info | python3 -c 'import json,sys; print(json.load(sys.stdin).get("CgroupDriver") or "cgroupfs")')
    mkdir -p "$STATE_DIR/kubelet"
    # node "localhost": the apiserver reaches it (logs/exec) via its Hostname address -> 127.0.0.1
    # (a loopback --node-ip is rejected)
    start_bg kubelet "$BIN_DIR/kubelet" \
        --kubeconfig="$STATE_DIR/kubeconfig" --container-runtime=docker --docker-endpoint="unix://$DOCKER_SOCK" \
        --pod-infra-container-image=localhost/pause:3.2 --hostname-override=localhost \
        --address=127.0.0.1 --port="$KUBELET_PORT" --read-only-port=0 --fail-swap-on=false \
        --cgroup-driver="$cgdriver" --cgroups-per-qos=false --enforce-node-allocatable= \
        --eviction-hard= --image-gc-high-threshold=100 --image-gc-low-threshold=99 --oom-score-adj=0 \
        --node-status-update-frequency=2s \
        --root-dir="$STATE_DIR/kubelet/root" --cert-dir="$STATE_DIR/kubelet/pki" --volume-plugin-dir="$STATE_DIR/kubelet/plugins"
    t=$EPOCHREALTIME
    WAIT_PID=$(pid_in "$STATE_DIR/kubelet.pid") wait_for 90 "node $NODE Ready" node_ready || fail kubelet "kubelet node not Ready"
    log "kubelet node $NODE Ready in $(since "$t")s"
fi

write_env
log "ready in $(since "$T0")s: $(cat "$BIN_DIR/VERSION"), kubelet=$MODE node=$NODE; use: source $STATE_DIR/env.sh"
