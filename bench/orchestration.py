"""Benchmark: what the pipeline's bookkeeping costs per stage, DVC's part of it.

Run in a project after the pipeline (`make run`): for its first ``--stages`` stages in run
order it times what the flow does around each stage's work, the staleness check
(``dvc status`` of one stage) and the lock entry (``dvc commit``), and says which YAML
parser DVC's loads get (ruamel's C parser when ``ruamel.yaml.clib`` is installed). Every
stage is up to date, so the commits rewrite the same entries. One JSON line.

    python bench/orchestration.py [--stages 8]
"""

from __future__ import annotations

import argparse
import json
import time

import _project_root  # noqa: F401  (flows and stages importable)

from flows.pipeline import is_stale, record_in_lock, stage_order


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", type=int, default=8)
    args = parser.parse_args()
    from ruamel.yaml import YAML

    names = stage_order()[: args.stages]
    is_stale(names[0])  # imports and first index build, outside the timings
    start = time.perf_counter()
    stale = [is_stale(name) for name in names]
    status_s = time.perf_counter() - start
    start = time.perf_counter()
    for name in names:
        record_in_lock(name)
    commit_s = time.perf_counter() - start
    print(
        json.dumps(
            {
                "stages": len(names),
                "stale": sum(stale),
                "yaml_parser": YAML(typ="safe").Parser.__name__,
                "status_s_per_stage": round(status_s / len(names), 3),
                "commit_s_per_stage": round(commit_s / len(names), 3),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
