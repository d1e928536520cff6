#!/usr/bin/env bash
# The project's main job on the embedded default.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
mkdir -p out
for game in werewolf avalon onuw; do
  stackelberg play "$game" --agents scripted --games 200 --seed 0 --out "out/$game.jsonl"
done
