#!/usr/bin/env bash
# The study (configs/study.yaml): the method shown working on the embedded models, in its own
# workspace runs/study (its data, models, dvc.lock and reports apart from the default run's),
# logged to the project's MLflow store under the experiment "study". A rerun after a kill or
# a change runs only what is stale. Arguments go to the pipeline: stage names to run only
# those and what they need (e.g. evaluate@werewolf: one game), --force. Another params file
# runs the same way in a workspace of its own: STUDY_PARAMS and STUDY_WORKSPACE (make
# followers: configs/followers.yaml in runs/followers).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
root=$PWD
workspace=${STUDY_WORKSPACE:-runs/study}
python -m flows.workspace "$workspace" "${STUDY_PARAMS:-configs/study.yaml}" >/dev/null
cd "$workspace"
export MLFLOW_TRACKING_URI=${MLFLOW_TRACKING_URI:-sqlite:///$root/mlruns.db}
export PREFECT_LOCAL_STORAGE_PATH=$PWD/.cache/prefect-results
python -m flows.pipeline "$@"
echo
stackelberg report || true
echo "The report: $workspace/reports/summary.md"
