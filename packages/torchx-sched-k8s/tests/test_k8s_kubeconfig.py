"""torchx's own kubeconfig reading (:mod:`torchx_sched_k8s.kubeconfig`) against the ``kubernetes``
client's ``load_kube_config``, which it replaces on the common paths: for each kind of
kubeconfig both must find the same server, send the same credentials and trust the same CA;
and live, torchx's transport and the client get the same answers from the real API server."""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from torchx_sched_k8s import kubeconfig
from torchx_sched_k8s.kubeconfig import KubeConfigError, load_endpoint
from torchx_sched_k8s.rest import ApiError, Endpoint, RestClient, path

kubernetes = pytest.importorskip("kubernetes")


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A self-signed CA and a client certificate/key made with the openssl CLI."""
    d = tmp_path_factory.mktemp("pki")
    for name in ("ca", "client"):
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", f"/CN=torchx-{name}",
             "-keyout", str(d / f"{name}.key"), "-out", str(d / f"{name}.crt")],
            check=True,
            capture_output=True,
        )  # fmt: skip
    return {"ca": d / "ca.crt", "cert": d / "client.crt", "key": d / "client.key"}


def _write(p: Path, cluster: dict[str, Any], user: dict[str, Any], current: str | None = "ctx") -> Path:
    config: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
    }
    if current:
        config["current-context"] = current
    p.write_text(yaml.safe_dump(config))
    return p


def _library(kubeconfig_paths: str) -> Any:
    cfg = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config(config_file=kubeconfig_paths, client_configuration=cfg)
    return cfg


def _library_auth(cfg: Any) -> dict[str, str]:
    return {a["key"]: a["value"] for a in cfg.auth_settings().values() if a.get("value")}


def _b64(p: Path) -> str:
    return base64.b64encode(p.read_bytes()).decode()


def _ca_names(ctx: ssl.SSLContext | None) -> set[str]:
    assert ctx is not None
    return {dict(x[0] for x in c["subject"])["commonName"] for c in ctx.get_ca_certs()}


@pytest.mark.parametrize(
    "user",
    [
        {"token": "abc.def"},
        {"username": "ann", "password": "s3cret:x"},
        {},
    ],
    ids=["token", "basic", "anonymous"],
)
def test_server_and_credentials_match_the_client_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pki: dict[str, Path], user: dict[str, Any]
) -> None:
    p = _write(
        tmp_path / "config", {"server": "https://10.1.2.3:6443/", "certificate-authority-data": _b64(pki["ca"])}, user
    )
    monkeypatch.setenv("KUBECONFIG", str(p))
    ours, theirs = load_endpoint(), _library(str(p))
    assert ours.host == theirs.host == "https://10.1.2.3:6443"
    assert dict(ours.headers()) == _library_auth(theirs)
    assert _ca_names(ours.ssl_context) == {"torchx-ca"}
    assert Path(theirs.ssl_ca_cert).read_bytes() == pki["ca"].read_bytes()


def test_relative_token_file_and_ca_file_are_read_from_the_kubeconfig_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pki: dict[str, Path]
) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "token").write_text("from-a-file\n")
    (tmp_path / "sub" / "ca.crt").write_bytes(pki["ca"].read_bytes())
    p = _write(
        tmp_path / "sub" / "config",
        {"server": "https://k:1", "certificate-authority": "ca.crt", "tls-server-name": "kube.local"},
        {"tokenFile": "token"},
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KUBECONFIG", str(p))
    ours, theirs = load_endpoint(), _library(str(p))
    assert dict(ours.headers()) == {"authorization": "Bearer from-a-file"}
    # the library keeps the file's newline, which http.client then refuses in a header: we strip it
    assert _library_auth(theirs) == {"authorization": "Bearer from-a-file\n"}
    assert ours.server_hostname == theirs.tls_server_name == "kube.local"
    assert _ca_names(ours.ssl_context) == {"torchx-ca"}


def test_client_certificate_data_is_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pki: dict[str, Path]
) -> None:
    user = {"client-certificate-data": _b64(pki["cert"]), "client-key-data": _b64(pki["key"])}
    p = _write(tmp_path / "config", {"server": "https://k:1", "certificate-authority-data": _b64(pki["ca"])}, user)
    monkeypatch.setenv("KUBECONFIG", str(p))
    before = set(os.listdir(os.environ.get("TMPDIR", "/tmp")))
    ours, theirs = load_endpoint(), _library(str(p))
    assert Path(theirs.cert_file).read_bytes() == pki["cert"].read_bytes()
    assert ours.ssl_context is not None  # load_cert_chain took the pair (a bad pair raises)
    leftover = {n for n in set(os.listdir(os.environ.get("TMPDIR", "/tmp"))) - before if n.startswith("torchx-kube-")}
    assert not leftover, f"decoded key material left on disk: {leftover}"


def test_a_broken_client_key_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pki: dict[str, Path]
) -> None:
    user = {"client-certificate-data": _b64(pki["cert"]), "client-key-data": _b64(pki["ca"])}  # not its key
    p = _write(tmp_path / "config", {"server": "https://k:1", "certificate-authority-data": _b64(pki["ca"])}, user)
    monkeypatch.setenv("KUBECONFIG", str(p))
    with pytest.raises(KubeConfigError, match="client certificate"):
        load_endpoint()


def test_merged_kubeconfigs_follow_the_library_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = _write(tmp_path / "a", {"server": "http://first:1"}, {"token": "one"}, current=None)
    second = _write(tmp_path / "b", {"server": "http://second:2"}, {"token": "two"}, current="ctx")
    paths = os.pathsep.join([str(first), str(tmp_path / "missing"), str(second)])
    monkeypatch.setenv("KUBECONFIG", paths)
    ours, theirs = load_endpoint(), _library(paths)
    assert ours.host == theirs.host == "http://first:1"  # the first file naming the cluster wins
    assert dict(ours.headers()) == _library_auth(theirs) == {"authorization": "Bearer one"}
    assert ours.ssl_context is None


def test_missing_and_broken_kubeconfigs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "nope"))
    with pytest.raises(KubeConfigError, match="no kubeconfig at"):
        load_endpoint()
    p = _write(tmp_path / "config", {"server": "http://k:1"}, {}, current=None)
    monkeypatch.setenv("KUBECONFIG", str(p))
    with pytest.raises(KubeConfigError, match="no current-context"):
        load_endpoint()
    p.write_text("clusters: [")
    with pytest.raises(KubeConfigError, match="cannot read kubeconfig"):
        load_endpoint()


def test_exec_credentials_are_left_to_the_client_library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    credential = {"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
                  "status": {"token": "from-exec"}}  # fmt: skip
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": sys.executable,
            "args": ["-c", f"print({json.dumps(json.dumps(credential))})"],
        }
    }
    p = _write(tmp_path / "config", {"server": "http://k:1"}, user)
    monkeypatch.setenv("KUBECONFIG", str(p))
    assert dict(load_endpoint().headers()) == {"authorization": "Bearer from-exec"}


def test_in_cluster_service_account(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pki: dict[str, Path]) -> None:
    (tmp_path / "ca.crt").write_bytes(pki["ca"].read_bytes())
    (tmp_path / "token").write_text("sa-token")
    monkeypatch.setattr(kubeconfig, "SERVICE_ACCOUNT_DIR", str(tmp_path))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    endpoint = load_endpoint()
    assert endpoint.host == "https://[fd00::1]:443"
    assert dict(endpoint.headers()) == {"authorization": "Bearer sa-token"}
    assert _ca_names(endpoint.ssl_context) == {"torchx-ca"}


def test_path_segments_are_encoded() -> None:
    assert path("api", "v1", "namespaces", "a/b", "pods") == "/api/v1/namespaces/a%2Fb/pods"


def _serve(answers: int, handle: Any) -> tuple[int, Any]:
    """A raw TCP server on 127.0.0.1 that serves ``answers`` connections with ``handle(conn)``."""
    import socket
    import threading

    server = socket.create_server(("127.0.0.1", 0))

    def run() -> None:
        for _ in range(answers):
            conn, _ = server.accept()
            with conn:
                handle(conn)
        server.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return server.getsockname()[1], thread


def _read_request(conn: Any) -> bytes:
    """A request's head, or what came before the client closed the connection (b"" if nothing)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return data
        data += chunk
    return data


def _answer_until_closed(conn: Any, release: threading.Event) -> None:
    """Answers ``{}`` to each request on ``conn`` until the client closes it (or it fails); a
    request for ``/slow`` waits for ``release`` first (up to 10 s)."""
    with conn:
        while True:
            try:
                request = _read_request(conn)
            except OSError:
                return
            if not request:
                return
            if b"/slow" in request:
                release.wait(10)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")


def test_a_kept_alive_connection_the_server_closed_is_replaced() -> None:
    """The server answers one request per connection and closes it without saying so (an idle
    timeout): the next request goes out again on a new connection."""

    def answer_once(conn: Any) -> None:
        _read_request(conn)
        conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"n": true}')

    port, thread = _serve(2, answer_once)
    rest = RestClient(Endpoint(host=f"http://127.0.0.1:{port}"))
    try:
        assert rest.json("GET", "/a", timeout=5) == {"n": True}
        assert rest.json("GET", "/b", timeout=5) == {"n": True}
    finally:
        rest.close()
    thread.join(5)


def test_a_stream_yields_what_arrived_before_the_answer_ends() -> None:
    """A followed log: chunks reach the reader as the server sends them."""
    import threading

    sent_first = threading.Event()
    go_on = threading.Event()

    def chunked(conn: Any) -> None:
        _read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nline1\n\r\n")
        sent_first.set()
        go_on.wait(10)
        conn.sendall(b"6\r\nline2\n\r\n0\r\n\r\n")

    port, thread = _serve(1, chunked)
    rest = RestClient(Endpoint(host=f"http://127.0.0.1:{port}"))
    response = rest.request("GET", "/log", stream=True)
    pieces = response.stream(64 * 1024)
    assert next(pieces) == b"line1\n"  # before the server sent the rest
    go_on.set()
    assert b"".join(pieces) == b"line2\n"
    response.release_conn()
    rest.close()
    thread.join(5)


def test_a_streamed_answer_read_whole_through_data() -> None:
    """``data`` of a streamed answer reads its body, as urllib3's does (a pod log's first bytes,
    where Kubernetes recovery numbers its attempts)."""

    def head(conn: Any) -> None:
        _read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 19\r\n\r\ntorchx: attempt 1\nx")

    port, thread = _serve(1, head)
    rest = RestClient(Endpoint(host=f"http://127.0.0.1:{port}"))
    response = rest.request("GET", "/log", query={"limitBytes": 256}, stream=True, timeout=5)
    assert response.data == b"torchx: attempt 1\nx"
    response.release_conn()
    rest.close()
    thread.join(5)


def test_an_error_answer_carries_status_and_body() -> None:
    def not_found(conn: Any) -> None:
        _read_request(conn)
        body = b'{"kind":"Status","message":"jobs.batch \\"x\\" not found","reason":"NotFound"}'
        conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))

    port, thread = _serve(1, not_found)
    rest = RestClient(Endpoint(host=f"http://127.0.0.1:{port}"))
    with pytest.raises(ApiError) as e:
        rest.json("GET", "/apis/batch/v1/namespaces/d/jobs/x", timeout=5)
    assert e.value.status == 404 and b"NotFound" in e.value.body
    rest.close()
    thread.join(5)


@pytest.mark.k8s
def test_the_transport_gets_what_the_client_library_gets(k8s_cluster: Any) -> None:
    """Live: the same answers from the real API server through both."""
    api = kubernetes.config.new_client_from_config(k8s_cluster.kubeconfig)
    rest = RestClient(load_endpoint())
    try:
        theirs = kubernetes.client.VersionApi(api).get_code(_preload_content=False)
        assert rest.json("GET", "/version") == json.loads(theirs.data)
        pods = kubernetes.client.CoreV1Api(api).list_namespaced_pod("kube-system", _preload_content=False)
        ours = rest.json("GET", path("api", "v1", "namespaces", "kube-system", "pods"))
        assert [p["metadata"]["uid"] for p in ours["items"]] == [
            p["metadata"]["uid"] for p in json.loads(pods.data)["items"]
        ]
    finally:
        rest.close()
        api.close()


def test_clients_of_one_kubeconfig_share_one_transport(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Schedulers made one per job (a managed controller's 100 drivers) share the process's
    transport while the kubeconfig is unchanged; an edited kubeconfig gets a new one."""
    from torchx_sched_k8s.kubeapi import KubeApi

    cfg = _write(tmp_path / "config", {"server": "http://127.0.0.1:1"}, {"token": "a"})
    monkeypatch.setenv("KUBECONFIG", str(cfg))
    first, second = KubeApi(), KubeApi()
    assert first.rest is second.rest
    shared = first.rest
    own = KubeApi(shared=False)  # a managed controller's Lease: never waits behind the others' requests
    assert own.rest is not shared and own.rest.endpoint.host == shared.endpoint.host
    second.close()
    assert first.rest is shared
    _write(cfg, {"server": "http://127.0.0.1:2"}, {"token": "b"})
    renewed = KubeApi().rest
    assert renewed is not shared and renewed.endpoint.host == "http://127.0.0.1:2"
    assert first.rest is shared  # a client keeps the transport it has


def test_threads_taking_turns_share_one_connection_and_concurrent_ones_get_their_own() -> None:
    """Requests from 20 threads one after another go over one kept-alive connection (one per
    thread made a controller of 100 jobs hold 100 TLS connections); two at once use two."""
    import threading

    opened: list[int] = []
    release = threading.Event()

    def keep_answering(conn: Any) -> None:
        opened.append(1)
        _answer_until_closed(conn, release)

    import socket

    server = socket.create_server(("127.0.0.1", 0))

    answering: list[threading.Thread] = []

    def accept_two() -> None:
        for _ in range(2):
            conn, _ = server.accept()
            answering.append(threading.Thread(target=keep_answering, args=(conn,), daemon=True))
            answering[-1].start()

    thread = threading.Thread(target=accept_two, daemon=True)
    thread.start()
    rest = RestClient(Endpoint(host=f"http://127.0.0.1:{server.getsockname()[1]}"))
    try:
        for _ in range(20):
            t = threading.Thread(target=lambda: rest.json("GET", "/a", timeout=5))
            t.start()
            t.join()
        assert len(opened) == 1
        slow = threading.Thread(target=lambda: rest.json("GET", "/slow", timeout=10))
        slow.start()
        while rest._idle:  # until the slow request took the kept-alive connection
            threading.Event().wait(0.01)
        assert rest.json("GET", "/b", timeout=5) == {}  # the first connection is busy: a second
        release.set()
        slow.join()
        assert len(opened) == 2 and len(rest._idle) == 2
    finally:
        release.set()
        rest.close()
        server.close()
    thread.join(5)
    for t in answering:  # each ends when its connection is closed: no thread left behind
        t.join(5)
        assert not t.is_alive()


def test_requests_beyond_the_connection_limit_wait_for_one_to_come_free() -> None:
    """With MAX_CONNECTIONS requests in flight, another one opens no connection: it waits for one
    of theirs (a managed controller's 100 drivers opened a TLS connection per request beyond
    a few), and fails with a TimeoutError when none comes free within its timeout."""
    import socket
    import threading

    from torchx_sched_k8s.rest import MAX_CONNECTIONS

    opened: list[int] = []
    release = threading.Event()
    answering: list[threading.Thread] = []

    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.05)
    over = threading.Event()

    def accept() -> None:
        while not over.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            conn.settimeout(None)
            opened.append(1)
            answering.append(threading.Thread(target=_answer_until_closed, args=(conn, release), daemon=True))
            answering[-1].start()

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    rest = RestClient(Endpoint(host=f"http://127.0.0.1:{server.getsockname()[1]}"))
    answers: list[dict[str, Any]] = []
    slow = [
        threading.Thread(target=lambda: answers.append(rest.json("GET", "/slow", timeout=10)))
        for _ in range(MAX_CONNECTIONS)
    ]
    try:
        for t in slow:
            t.start()
        while len(opened) < MAX_CONNECTIONS:
            threading.Event().wait(0.01)
        with pytest.raises(TimeoutError, match="no connection came free"):
            rest.json("GET", "/a", timeout=0.3)
        waiting = threading.Thread(target=lambda: answers.append(rest.json("GET", "/a", timeout=10)))
        waiting.start()
        threading.Event().wait(0.2)
        release.set()
        for t in [*slow, waiting]:
            t.join(10)
        assert answers == [{}] * (MAX_CONNECTIONS + 1)
        assert len(opened) == MAX_CONNECTIONS  # the waiting request went over one of theirs
        assert rest.json("GET", "/a", timeout=5) == {} and len(opened) == MAX_CONNECTIONS
    finally:
        release.set()
        over.set()
        rest.close()
    acceptor.join(5)
    server.close()
    for t in [acceptor, *answering]:  # each answering one ends when its connection is closed
        t.join(5)
        assert not t.is_alive()
