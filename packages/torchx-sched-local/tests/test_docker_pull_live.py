"""local_docker pulls an image that is not on the engine (marker ``docker``): from a registry
served on 127.0.0.1 by this test (the engine talks plain HTTP to a loopback registry), and a
pull that fails (a registry name that cannot resolve) is one line with the engine's reason."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from torchx import specs
from torchx.specs import AppState
from torchx_sched_local.docker_scheduler import LABEL_APP_ID

pytestmark = pytest.mark.docker

MANIFEST_V2 = "application/vnd.docker.distribution.manifest.v2+json"


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _image_blobs(client: Any, image: str) -> tuple[bytes, dict[str, bytes]]:
    """The schema-2 manifest of ``image`` (from ``docker save``) and its blobs by digest."""
    with tarfile.open(fileobj=io.BytesIO(b"".join(client.images.get(image).save()))) as saved:

        def read(name: str) -> bytes:
            f = saved.extractfile(name)
            assert f is not None
            return f.read()

        entry = json.loads(read("manifest.json"))[0]
        config = read(entry["Config"])
        blobs = {_digest(config): config}
        layers = []
        for name in entry["Layers"]:
            layer = gzip.compress(read(name), compresslevel=1)
            blobs[_digest(layer)] = layer
            layers.append(
                {
                    "mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip",
                    "size": len(layer),
                    "digest": _digest(layer),
                }
            )
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST_V2,
        "config": {
            "mediaType": "application/vnd.docker.container.image.v1+json",
            "size": len(config),
            "digest": _digest(config),
        },
        "layers": layers,
    }
    return json.dumps(manifest).encode(), blobs


@pytest.fixture
def registry(docker_live: dict[str, str]) -> Iterator[tuple[str, list[str]]]:
    """A read-only registry on 127.0.0.1 serving the busybox image under any name; yields its
    address and the paths it was asked for."""
    import docker

    client = docker.from_env()
    manifest, blobs = _image_blobs(client, docker_live["TORCHX_TEST_BUSYBOX_IMAGE"])
    client.close()
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def _send(self, body: bytes, ctype: str, digest: str | None = None) -> None:
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Docker-Distribution-Api-Version", "registry/2.0")
            if digest:
                self.send_header("Docker-Content-Digest", digest)
            self.end_headers()
            if self.command == "GET":
                self.wfile.write(body)

        def do_GET(self) -> None:
            asked.append(self.path)
            if self.path == "/v2/":
                self._send(b"{}", "application/json")
            elif "/manifests/" in self.path:
                self._send(manifest, MANIFEST_V2, _digest(manifest))
            elif "/blobs/" in self.path and self.path.rsplit("/", 1)[1] in blobs:
                digest = self.path.rsplit("/", 1)[1]
                self._send(blobs[digest], "application/octet-stream", digest)
            else:
                self.send_error(404)

        do_HEAD = do_GET

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_a_missing_image_is_pulled_at_submit(docker_sched: Any, registry: tuple[str, list[str]], client: Any) -> None:
    address, asked = registry
    image = f"{address}/torchx-pull-test/{uuid.uuid4().hex[:12]}:1"
    try:
        role = specs.Role("w", image=image, entrypoint="echo", args=["pulled"])
        app_id = docker_sched.submit(specs.AppDef("tpull", [role]), {})
        assert docker_sched.wait(app_id, timeout=60).state == AppState.SUCCEEDED
        assert list(docker_sched.log_iter(app_id, "w", 0)) == ["pulled\n"]
        assert any("/manifests/" in p for p in asked)
        # on the engine now: the next submit uses it as it is, without asking the registry
        asked.clear()
        again = docker_sched.submit(specs.AppDef("tpull", [role]), {})
        assert docker_sched.wait(again, timeout=60).state == AppState.SUCCEEDED
        assert asked == []
    finally:
        for app_id in docker_sched.submitted:
            docker_sched.delete(app_id)
        client.images.remove(image, force=True)


def test_a_failed_pull_of_a_missing_image_is_one_line_and_leaves_nothing(docker_sched: Any, client: Any) -> None:
    image = "torchx-no-such-registry.invalid/nothing:1"
    networks = {n.name for n in client.networks.list()}
    containers = {c.id for c in client.containers.list(all=True, filters={"label": LABEL_APP_ID})}
    with pytest.raises(ValueError) as e:
        docker_sched.submit(specs.AppDef("tpull", [specs.Role("w", image=image, entrypoint="true")]), {})
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith(f"image {image!r} is not on the Docker engine and pulling it failed (")
    assert "torchx-no-such-registry.invalid" in message.split("(", 1)[1]  # the engine's reason
    assert {n.name for n in client.networks.list()} == networks
    assert {c.id for c in client.containers.list(all=True, filters={"label": LABEL_APP_ID})} == containers


def test_a_missing_local_image_id_is_not_pulled(docker_sched: Any) -> None:
    image = "sha256:" + "0" * 64
    with pytest.raises(
        ValueError, match=r"is not on the Docker engine; build it again \(an image id cannot be pulled\)"
    ):
        docker_sched.submit(specs.AppDef("tpull", [specs.Role("w", image=image, entrypoint="true")]), {})
