"""Registers a model archive with a TorchServe management API (the program behind ``serve.torchserve``).

Usage::

    python -m torchx_components.apps.torchserve --model_path s3://bucket/model.mar \\
        --management_api http://torchserve:8081 --param initial_workers=1 --param synchronous=true

Fetches the archive (a path, or an fsspec URL when fsspec is installed), serves it over
HTTP on ``--port`` from this machine, and asks TorchServe (``POST /models?url=...``) to
download and load it. ``--dryrun`` fetches the archive and prints the request without
sending it.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import posixpath
import shutil
import socket
import sys
import tempfile
import threading
import urllib.error
import urllib.parse
import urllib.request

from torchx_components.apps._fs import MissingFsspecError, open_file


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        print(f"torchserve: served {self.path} to {self.client_address[0]}", flush=True)


def routable_address(url: str) -> str:
    """This machine's address on the route to ``url``'s host (what that host can reach us at)."""
    parsed = urllib.parse.urlsplit(url)
    host = parsed.hostname or "localhost"
    port = parsed.port or 80
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((host, port))  # UDP: picks the route, sends nothing
        return str(s.getsockname()[0])


def parse_flag_params(items: list[str]) -> dict[str, str]:
    """``["--initial_workers", "1", ...]`` (how TorchX's component passes parameters) as a dict.

    Raises:
        ValueError: an item is not a ``--name value`` pair
    """
    if len(items) % 2 or not all(flag.startswith("--") and len(flag) > 2 for flag in items[::2]):
        raise ValueError(f"unexpected arguments {' '.join(items)!r}: expected --name value pairs")
    return {flag[2:]: value for flag, value in zip(items[::2], items[1::2], strict=True)}


def parse_params(items: list[str]) -> dict[str, str]:
    """``["k=v", ...]`` -> dict.

    Raises:
        ValueError: an item has no ``=``
    """
    params: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--param {item!r}: expected KEY=VALUE")
        params[key] = value
    return params


def register(
    model_path: str, management_api: str, params: dict[str, str], port: int, timeout: float, dryrun: bool
) -> str:
    """Serves the model and registers it; returns TorchServe's answer (or the request on a dry run).

    Raises:
        OSError: the model cannot be fetched, or the management API fails (urllib errors are OSErrors)
    """
    with tempfile.TemporaryDirectory(prefix="torchx-serve-") as tmpdir:
        filename = posixpath.basename(model_path.rstrip("/")) or "model.mar"
        with open_file(model_path, "rb") as fin, open(os.path.join(tmpdir, filename), "wb") as fout:
            shutil.copyfileobj(fin, fout)
        handler = functools.partial(_QuietHandler, directory=tmpdir)
        with http.server.ThreadingHTTPServer(("", port), handler) as server:
            model_url = f"http://{routable_address(management_api)}:{server.server_port}/{urllib.parse.quote(filename)}"
            query = urllib.parse.urlencode({"url": model_url, **params})
            request_url = f"{management_api.rstrip('/')}/models?{query}"
            if dryrun:
                return f"POST {request_url}"
            thread = threading.Thread(target=server.serve_forever, daemon=True)
            thread.start()
            print(f"torchserve: serving {model_path} at {model_url}", flush=True)
            print(f"torchserve: POST {request_url}", flush=True)
            try:
                request = urllib.request.Request(request_url, method="POST")
                with urllib.request.urlopen(request, timeout=timeout) as response:
                    return str(response.read().decode("utf-8", "replace"))
            finally:
                server.shutdown()


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; returns the exit code."""
    parser = argparse.ArgumentParser(prog="torchx_components.apps.torchserve", description=__doc__.splitlines()[0])
    parser.add_argument("--model_path", required=True, help="the model archive (.mar): a path or URL")
    parser.add_argument("--management_api", required=True, help="TorchServe management API, e.g. http://host:8081")
    parser.add_argument("--port", type=int, default=8222, help="port to serve the archive on (0: any free port)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for TorchServe's answer")
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="registration parameter (model_name, initial_workers, synchronous, ...)",
    )
    parser.add_argument("--dryrun", action="store_true", help="print the registration request, do not send it")
    args, extra = parser.parse_known_args(argv)
    try:
        params = {**parse_params(args.param), **parse_flag_params(extra)}
        answer = register(args.model_path, args.management_api, params, args.port, args.timeout, args.dryrun)
    except urllib.error.HTTPError as e:
        body = e.read().decode("utf-8", "replace").strip()
        print(f"torchserve: error: registration failed: HTTP {e.code} {e.reason}: {body}", file=sys.stderr)
        return 1
    except (OSError, MissingFsspecError, ValueError) as e:
        print(f"torchserve: error: {e}", file=sys.stderr)
        return 1
    print(answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
