"""Run one feature job as its own process, like a worker host would: `python -m
tests.support.host_job JOB.json OUTCOME.json`. The job is read from JSON, its outcome
written as JSON, so a test can SIGKILL or SIGSTOP the whole "host" mid-loop."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from baton.batch.job import FeatureJob, RemoteSpec, run_feature_job


def load_job(path: Path) -> FeatureJob:
    data = json.loads(path.read_text(encoding="utf-8"))
    data["remote"] = RemoteSpec(**data["remote"])
    data["providers"] = tuple(data.get("providers") or ())
    return FeatureJob(**data)


def dump_job(job: FeatureJob, path: Path) -> None:
    path.write_text(json.dumps(dataclasses.asdict(job)), encoding="utf-8")


def main() -> int:
    job = load_job(Path(sys.argv[1]))
    outcome = run_feature_job(job)
    document = dataclasses.asdict(outcome)
    Path(sys.argv[2]).write_text(json.dumps(document), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
