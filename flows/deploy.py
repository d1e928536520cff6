"""Serve the pipeline as a Prefect deployment on the cron schedule of params.yaml.

prefect server start --host 127.0.0.1      # in another terminal, for the UI
python -m flows.deploy                     # registers and serves until stopped
"""

from __future__ import annotations

import sys

from flows.errors import USER_ERRORS, quiet_prefect


def main() -> int:
    quiet_prefect()
    try:
        from flows.context import current_params
        from flows.pipeline import pipeline

        cron = current_params().orchestration.deploy_cron
        print(f"serving deployment 'stackelberg-pipeline/scheduled' on cron {cron!r}")
        pipeline.serve(name="scheduled", cron=cron)
    except USER_ERRORS as exc:
        print(f"deploy: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
