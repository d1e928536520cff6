#!/usr/bin/env bash
# Install torch into a virtual environment, the build chosen for the machine, so that nothing
# pulls a multi-GB CUDA build on a machine without a GPU (scripts/install.sh calls it first):
#   a GPU (nvidia-smi lists one): the CUDA build from PyPI;
#   no GPU: the CPU build from the PyTorch CPU index ($TORCH_CPU_INDEX), tried once with a
#   10 s timeout; if that index cannot be reached, a CPU build the configured pip indexes
#   offer (e.g. a local wheel directory), checked with pip's dry-run report; else it stops and
#   says how to get one.
# STACKELBERG_TORCH=cpu|cuda overrides the choice. --dry-run: say what it would choose, install
# nothing.
#   scripts/install_torch.sh [--dry-run] [VENV_PYTHON]   (default .venv/bin/python)
set -euo pipefail
DRY_RUN=
if [ "${1:-}" = --dry-run ]; then
  DRY_RUN=1
  shift
fi
VPY=${1:-.venv/bin/python}
TORCH_VERSION=${TORCH_VERSION:-2.13.0}
TORCH_CPU_INDEX=${TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}

say() { echo "[install] $*"; }

# Would pip, given "$@", install a CPU build of torch (one without nvidia-* requirements)?
# Prints where that build comes from (a URL or a file), for the log.
cpu_build_offered() {
  local report ok=0
  report=$(mktemp)
  if ! "$VPY" -m pip install -q --disable-pip-version-check --dry-run \
    --ignore-installed --no-deps --report "$report" "$@" "torch==$TORCH_VERSION" >/dev/null 2>&1; then
    rm -f "$report"
    return 1
  fi
  "$VPY" - "$report" <<'EOF' || ok=$?
import json, sys
items = json.load(open(sys.argv[1]))["install"]
torch = [i for i in items if i["metadata"]["name"] == "torch"]
needs = [r for i in torch for r in i["metadata"].get("requires_dist") or []]
if not torch or any(r.startswith("nvidia") for r in needs):
    sys.exit(1)
print(torch[0]["download_info"]["url"])
EOF
  rm -f "$report"
  return $ok
}

install_torch() {
  local choice=${STACKELBERG_TORCH:-} why="STACKELBERG_TORCH=${STACKELBERG_TORCH:-}"
  if [ -z "$choice" ]; then
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
      choice=cuda why="nvidia-smi lists a GPU"
    else
      choice=cpu why="no GPU: nvidia-smi lists none"
    fi
  fi
  if [ "$choice" = cuda ]; then
    say "torch $TORCH_VERSION: the CUDA build from PyPI ($why)"
    [ -n "$DRY_RUN" ] || "$VPY" -m pip install -q --disable-pip-version-check "torch==$TORCH_VERSION"
    return
  fi
  local index=(--index-url "$TORCH_CPU_INDEX" --timeout 10 --retries 0) source
  if source=$(cpu_build_offered "${index[@]}"); then
    say "torch $TORCH_VERSION: the CPU build, $source ($why)"
    # torch alone from that index, then its dependencies from the configured indexes
    [ -n "$DRY_RUN" ] || {
      "$VPY" -m pip install -q --disable-pip-version-check --no-deps "${index[@]}" "torch==$TORCH_VERSION"
      "$VPY" -m pip install -q --disable-pip-version-check "torch==$TORCH_VERSION"
    }
  elif source=$(cpu_build_offered --timeout 10 --retries 0); then
    say "torch $TORCH_VERSION: the CPU build the configured pip indexes offer, $source ($why; $TORCH_CPU_INDEX unreachable)"
    [ -n "$DRY_RUN" ] || "$VPY" -m pip install -q --disable-pip-version-check "torch==$TORCH_VERSION"
  else
    say "error: $why, $TORCH_CPU_INDEX unreachable and no CPU build of torch $TORCH_VERSION elsewhere; set TORCH_CPU_INDEX to a reachable CPU index, put a torch+cpu wheel in a pip find-links directory, or set STACKELBERG_TORCH=cuda to accept a CUDA build" >&2
    exit 1
  fi
}

install_torch
