#!/usr/bin/env bash
# Prepares a Python 3.12 venv holding Harbor's pydantic models (the harbor wheel, unpacked, without
# its heavy runtime dependencies), for the conformance test that validates every file skillscope
# writes. Prints the venv's python; its Harbor source is in DIR/harbor-src (put it on PYTHONPATH).
# Usage: scripts/harbor-venv.sh [DIR] [VERSION]
#   VERSION 0.25.0 (default; DIR default target/harbor-venv): the models need pydantic, shortuuid,
#   toml, and (for the job config and lock models) pathspec, packaging and platformdirs.
#   VERSION 0.26.0 (DIR default target/harbor-venv-0.26): the same with pydantic >= 2.14 (0.26
#   uses Field(exclude_if=...)).
set -euo pipefail
cd "$(dirname "$0")/.."
HARBOR_VERSION=${2:-0.25.0}
case "$HARBOR_VERSION" in
  0.25.*) DEFAULT_DIR=target/harbor-venv; DEPS=("pydantic>=2.12" shortuuid toml pathspec packaging platformdirs) ;;
  0.26.*) DEFAULT_DIR=target/harbor-venv-0.26; DEPS=("pydantic>=2.14" shortuuid toml pathspec packaging platformdirs) ;;
  *) echo "harbor-venv: unknown Harbor version $HARBOR_VERSION (0.25.x or 0.26.x)" >&2; exit 1 ;;
esac
DIR=${1:-$DEFAULT_DIR}
[ -n "$DIR" ] || DIR=$DEFAULT_DIR
# Tests run in parallel and two may ask for the same venv at once: one makes it while the
# other waits on the lock, then finds it made (without it, one removed the other's venv half-made).
mkdir -p "$(dirname "$DIR")"
exec 9>"$DIR.lock"
flock 9
# What the venv was made of: a venv made by another version of this script is made again.
STAMP="harbor==$HARBOR_VERSION ${DEPS[*]}"
if [ -x "$DIR/bin/python" ] && [ -d "$DIR/harbor-src/harbor" ] \
   && [ "$(cat "$DIR/harbor-venv.stamp" 2>/dev/null)" = "$STAMP" ]; then
  echo "$DIR/bin/python"; exit 0
fi
py=""
for c in python3.12 "$HOME"/.pyenv/versions/3.12*/bin/python3.12 /usr/local/bin/python3.12; do
  # pyenv shims exist for versions that are not selected: check the interpreter really runs.
  if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then
    py=$(command -v "$c"); break
  fi
done
[ -n "$py" ] || { echo "harbor-venv: Python 3.12 is needed (Harbor requires it)" >&2; exit 1; }
rm -rf "$DIR"
"$py" -m venv "$DIR"
"$DIR/bin/pip" install -q --disable-pip-version-check "${DEPS[@]}" >&2
"$DIR/bin/pip" download -q --disable-pip-version-check --no-deps "harbor==$HARBOR_VERSION" -d "$DIR/wheel" >&2
"$DIR/bin/python" -m zipfile -e "$DIR"/wheel/harbor-*.whl "$DIR/harbor-src"
echo "$STAMP" > "$DIR/harbor-venv.stamp"
echo "$DIR/bin/python"
