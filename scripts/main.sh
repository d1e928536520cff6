#!/usr/bin/env bash
# The project's main job: the whole pipeline (dvc.yaml) on the params.yaml default.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
[ -d .dvc ] || dvc init -q
python -m flows.pipeline "$@"
echo
stackelberg report || true
