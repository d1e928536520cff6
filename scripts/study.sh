#!/usr/bin/env bash
# The study (configs/study.yaml): the method shown working on the embedded models, in its own
# workspace runs/study (its data, models, dvc.lock and reports apart from the default run's),
# logged to the project's MLflow store under the experiment "study". A rerun after a kill or
# a change runs only what is stale. Arguments go to the pipeline: stage names to run only
# those and what they need (e.g. evaluate@werewolf: one game), --force.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
root=$PWD
python -m flows.workspace runs/study "${STUDY_PARAMS:-configs/study.yaml}" >/dev/null
cd runs/study
export MLFLOW_TRACKING_URI=${MLFLOW_TRACKING_URI:-sqlite:///$root/mlruns.db}
export PREFECT_LOCAL_STORAGE_PATH=$PWD/.cache/prefect-results
python -m flows.pipeline "$@"
echo
stackelberg report || true
echo "The study's report: runs/study/reports/summary.md"
