"""fake_kubelet.py - a stand-in kubelet for tests, started by k8s-up.sh with K8S_KUBELET=fake.

* registers Node $FAKE_NODE_NAME (fake-node-0: 16 cpu, 64Gi, 8 nvidia.com/gpu) and keeps it Ready
  (node status + Lease every 10 s), so the real kube-scheduler binds pods to it;
* runs the FIRST container's command+args of each bound pod as a host process (the image is
  ignored; plain env values are passed, valueFrom is not resolved; `$(VAR)` and `$$` in the
  command and args are expanded as the kubelet does) and patches the pod status
  Running -> Succeeded/Failed with the real exit code, so the Job controller completes Jobs;
* on pod deletion kills the process group and confirms the deletion;
* serves GET /containerLogs/{ns}/{pod}/{container} over HTTPS, so read_namespaced_pod_log and
  `kubectl logs` work through the apiserver (no follow/tail/since).

Needs the `kubernetes` client. Env: KUBECONFIG, FAKE_KUBELET_CERT, FAKE_KUBELET_KEY,
FAKE_KUBELET_PORT (10250), FAKE_KUBELET_LOGDIR, FAKE_NODE_NAME.
"""
import datetime
import http.server
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

NODE = os.environ.get("FAKE_NODE_NAME", "fake-node-0")
PORT = int(os.environ.get("FAKE_KUBELET_PORT", "10250"))
LOGDIR = os.environ.get("FAKE_KUBELET_LOGDIR", "/tmp/fake-kubelet-logs")
CERT, KEY = os.environ["FAKE_KUBELET_CERT"], os.environ["FAKE_KUBELET_KEY"]
RESOURCES = {"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "8"}

os.makedirs(LOGDIR, exist_ok=True)
config.load_kube_config(config_file=os.environ["KUBECONFIG"])
core = client.CoreV1Api()
coord = client.CoordinationV1Api()
procs = {}  # (namespace, name) -> Popen | None (starting)
lock = threading.Lock()


def now():
    return datetime.datetime.now(datetime.timezone.utc)


def log_path(ns, pod, container):
    return os.path.join(LOGDIR, f"{ns}_{pod}_{container}.log")


def ready_condition():
    t = now()
    return [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "fake kubelet",
             "lastHeartbeatTime": t, "lastTransitionTime": t}]


def register():
    body = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE, "kubernetes.io/os": "linux",
                                                  "torchx.pytorch.org/fake-node": "true"}}}
    try:
        core.create_node(body)
    except ApiException as e:
        if e.status != 409:
            raise
    core.patch_node_status(NODE, {"status": {
        "capacity": RESOURCES, "allocatable": RESOURCES, "conditions": ready_condition(),
        # no Hostname address: the apiserver (Hostname,InternalIP preference) uses 127.0.0.1
        "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": PORT}},
        "nodeInfo": {"machineID": "fake", "systemUUID": "fake", "bootID": "fake", "kernelVersion": "fake",
                     "osImage": "fake", "containerRuntimeVersion": "fake://0", "kubeletVersion": "v1.20.2",
                     "kubeProxyVersion": "v1.20.2", "operatingSystem": "linux", "architecture": "amd64"}}})


def heartbeat():
    while True:
        try:
            core.patch_node_status(NODE, {"status": {"conditions": ready_condition()}})
            spec = {"holderIdentity": NODE, "leaseDurationSeconds": 40, "renewTime": now()}
            try:
                lease = coord.read_namespaced_lease(NODE, "kube-node-lease")
                lease.spec.renew_time = spec["renewTime"]
                coord.replace_namespaced_lease(NODE, "kube-node-lease", lease)
            except ApiException as e:
                if e.status != 404:
                    raise
                coord.create_namespaced_lease("kube-node-lease", {"metadata": {"name": NODE}, "spec": spec})
        except Exception as e:  # keep heart-beating whatever happens
            print("heartbeat error:", e, file=sys.stderr, flush=True)
        time.sleep(10)


def set_status(ns, name, container, phase, exit_code=None):
    running = phase == "Running"
    cs = {"name": container.name, "image": container.image, "imageID": "fake://" + (container.image or ""),
          "ready": running, "started": running, "restartCount": 0, "containerID": f"fake://{ns}/{name}/{container.name}"}
    if running:
        cs["state"] = {"running": {"startedAt": now()}}
    else:
        cs["state"] = {"terminated": {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error",
                                      "startedAt": now(), "finishedAt": now()}}
    status = {"phase": phase, "hostIP": "127.0.0.1", "podIP": "127.0.0.1", "containerStatuses": [cs],
              "conditions": [{"type": "PodScheduled", "status": "True"},
                             {"type": "Ready", "status": "True" if running else "False"}]}
    if running:
        status["startTime"] = now()
    core.patch_namespaced_pod_status(name, ns, {"status": status})


def expand(text, variables):
    """A container's command or argument as the kubelet runs it: ``$(VAR)`` becomes the value of
    the container's variable VAR (left as written when it has none), ``$$`` becomes ``$``."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "$" and i + 1 < len(text):
            if text[i + 1] == "$":
                out.append("$")
                i += 2
                continue
            end = text.find(")", i + 2) if text[i + 1] == "(" else -1
            if end >= 0:
                ref = text[i + 2:end]
                out.append(variables.get(ref, text[i:end + 1]))
                i = end + 1
                continue
        out.append(text[i])
        i += 1
    return "".join(out)


def run_pod(pod):
    ns, name = pod.metadata.namespace, pod.metadata.name
    c = pod.spec.containers[0]
    variables = {e.name: e.value or "" for e in (c.env or [])}
    cmd = [expand(part, variables) for part in list(c.command or []) + list(c.args or [])]
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "HOME", "TMPDIR")}
    env.update({"HOSTNAME": name, "POD_NAME": name, "POD_NAMESPACE": ns})
    env.update(variables)
    with open(log_path(ns, name, c.name), "wb") as logf:
        try:
            if not cmd:
                raise OSError("fake kubelet: container has no command (image entrypoints are not known)")
            p = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, env=env,
                                 cwd=c.working_dir or None, start_new_session=True)
        except OSError as e:
            logf.write(f"{e}\n".encode())
            logf.flush()
            set_status(ns, name, c, "Failed", 127)
            return
        with lock:
            procs[(ns, name)] = p
        set_status(ns, name, c, "Running")
        rc = p.wait()
    try:
        set_status(ns, name, c, "Succeeded" if rc == 0 else "Failed", rc if rc >= 0 else 128 - rc)
    except ApiException:
        pass  # pod already deleted


def kill(p):
    if p is not None and p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


def pod_loop():
    while True:
        w = watch.Watch()
        try:
            for ev in w.stream(core.list_pod_for_all_namespaces, field_selector="spec.nodeName=" + NODE,
                               timeout_seconds=60):
                pod = ev["object"]
                key = (pod.metadata.namespace, pod.metadata.name)
                if ev["type"] == "DELETED":
                    with lock:
                        kill(procs.pop(key, None))
                elif pod.metadata.deletion_timestamp is not None:
                    with lock:
                        kill(procs.pop(key, None))
                    try:
                        core.delete_namespaced_pod(key[1], key[0], grace_period_seconds=0)
                    except ApiException:
                        pass
                elif pod.status.phase == "Pending" and key not in procs:
                    with lock:
                        procs[key] = None
                    threading.Thread(target=run_pod, args=(pod,), daemon=True).start()
        except Exception as e:
            print("watch error:", e, file=sys.stderr, flush=True)
            time.sleep(1)


class LogHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        parts = urllib.parse.urlparse(self.path).path.strip("/").split("/")
        if len(parts) == 4 and parts[0] == "containerLogs" and os.path.exists(log_path(*parts[1:])):
            with open(log_path(*parts[1:]), "rb") as f:
                data = f.read()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        else:
            self.send_response(404)
            self.end_headers()

    def log_message(self, *args):
        pass


def log_server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), LogHandler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(CERT, KEY)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    srv.serve_forever()


def shutdown(*_):
    with lock:
        for p in procs.values():
            kill(p)
    os._exit(0)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, shutdown)
    signal.signal(signal.SIGINT, shutdown)
    register()
    threading.Thread(target=heartbeat, daemon=True).start()
    threading.Thread(target=log_server, daemon=True).start()
    print("fake kubelet ready:", NODE, flush=True)
    pod_loop()
