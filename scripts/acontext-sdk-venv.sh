#!/usr/bin/env bash
# Prepares a Python venv holding Acontext's own Python SDK (PyPI `acontext` 0.1.22 and its
# requirements), for the test that drives skillscope's fake Acontext server through the SDK and
# checks the SDK's pydantic models accept every answer. Prints the venv's python.
# Usage: scripts/acontext-sdk-venv.sh [DIR]   (default: target/acontext-sdk-venv)
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-target/acontext-sdk-venv}
ACONTEXT_VERSION=0.1.22
ready() {
  [ -x "$DIR/bin/python" ] && "$DIR/bin/python" -c \
    "import importlib.metadata as m, sys; sys.exit(m.version('acontext') != '$ACONTEXT_VERSION')" 2>/dev/null
}
if ready; then
  echo "$DIR/bin/python"; exit 0
fi
py=""
for c in python3.12 python3.11 python3.13 python3.10 python3 "$HOME"/.pyenv/versions/3.1[0-3]*/bin/python3; do
  # pyenv shims exist for versions that are not selected: check the interpreter really runs.
  if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import sys, venv; assert sys.version_info >= (3, 10)' 2>/dev/null; then
    py=$(command -v "$c"); break
  fi
done
[ -n "$py" ] || { echo "acontext-sdk-venv: Python >= 3.10 is needed (the acontext SDK requires it)" >&2; exit 1; }
rm -rf "$DIR"
"$py" -m venv "$DIR"
"$DIR/bin/pip" install -q --disable-pip-version-check "acontext==$ACONTEXT_VERSION" >&2
ready || { echo "acontext-sdk-venv: acontext $ACONTEXT_VERSION did not install into $DIR" >&2; exit 1; }
echo "$DIR/bin/python"
