"""A job that records into the trackers its environment names (run by the chain and e2e tests)."""

from __future__ import annotations

import os
import sys

from torchx.tracker import AppRun


def main() -> None:
    run = AppRun.run_from_env()
    replica = os.environ.get("REPLICA", "0")
    run.add_metadata(lr=0.1, **{f"replica_{replica}": True})
    run.add_artifact("model", f"/ckpt/{replica}/model.pt", {"acc": 0.9})
    print(f"recorded {run.job_id()} backends={len(list(run.backends))}", flush=True)
    if not list(run.backends):
        sys.exit("no tracker backend in this job's environment")


if __name__ == "__main__":
    main()
