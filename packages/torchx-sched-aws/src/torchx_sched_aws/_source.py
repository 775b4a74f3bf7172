"""Ship a workspace to S3 as one ``.tar.gz`` (files excluded by ``.torchxignore`` left out)."""

from __future__ import annotations

import tarfile
import tempfile
from typing import Any, BinaryIO

from torchx.specs.workspace import Workspace
from torchx.workspace.api import project_files

from torchx_sched_aws._aws import aws_errors
from torchx_sched_aws.sagemaker_request import split_s3_uri


def write_tarball(workspace: Workspace, out: BinaryIO) -> int:
    """Writes the workspace's projects, each at its destination, as a gzipped tar; returns the file count.

    Raises:
        FileNotFoundError: a project does not exist
    """
    count = 0
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for path, arcname in project_files(workspace):
            tar.add(path, arcname=arcname, recursive=False)
            count += 1
    return count


def upload_workspace(s3: Any, workspace: Workspace, uri: str) -> None:
    """Tars ``workspace`` and uploads it to ``uri`` (``s3://bucket/key.tar.gz``) with an ``s3`` client."""
    bucket, key = split_s3_uri(uri)
    with tempfile.TemporaryFile() as f:
        write_tarball(workspace, f)
        f.seek(0)
        with aws_errors(f"aws_sagemaker: uploading workspace {workspace} to {uri}"):
            s3.upload_fileobj(f, bucket, key)
