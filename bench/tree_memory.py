"""Benchmark: the resident memory of a command and every process it starts, over its run.

``/usr/bin/time -v`` reports the largest single process; a pipeline run also holds its
Prefect server (and a cluster's workers, with a Dask or Ray task runner). This samples the
whole process tree and prints one JSON line: the peak of the tree's summed RSS (and
when it came), the largest single process, the wall time and the command's exit status.

    python bench/tree_memory.py [--every 0.25] -- bash scripts/main.sh
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import psutil


def tree_rss(root: psutil.Process) -> tuple[int, int]:
    """(summed RSS, largest RSS) of ``root`` and its descendants, in bytes."""
    total = largest = 0
    for p in [root, *root.children(recursive=True)]:
        try:
            rss = p.memory_info().rss
        except psutil.Error:  # ended between listing and reading
            continue
        total += rss
        largest = max(largest, rss)
    return total, largest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=float, default=0.25, help="seconds between samples")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given (put it after --)")
    started = time.perf_counter()
    child = subprocess.Popen(command)
    root = psutil.Process(child.pid)
    peak_sum = peak_single = 0
    peak_at = 0.0
    while child.poll() is None:
        try:
            total, largest = tree_rss(root)
        except psutil.Error:
            break
        if total > peak_sum:
            peak_sum, peak_at = total, time.perf_counter() - started
        peak_single = max(peak_single, largest)
        time.sleep(args.every)
    status = child.wait()
    print(
        json.dumps(
            {
                "peak_tree_rss_gib": round(peak_sum / 2**30, 3),
                "peak_tree_rss_gb": round(peak_sum / 1e9, 3),
                "peak_at_s": round(peak_at, 1),
                "peak_single_process_gib": round(peak_single / 2**30, 3),
                "wall_s": round(time.perf_counter() - started, 1),
                "exit_status": status,
            }
        ),
        file=sys.stderr,
    )
    return status


if __name__ == "__main__":
    sys.exit(main())
