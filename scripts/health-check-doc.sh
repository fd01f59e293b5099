#!/usr/bin/env bash
# Puts a health check's results into the docs: copies <jobs>/<run>/health-check.json to
# docs/health-check/skillsbench-87.json and replaces the generated block of docs/tasks.md (between
# the BEGIN/END health-check markers) with <jobs>/<run>/health-check.md, which `skillscope tasks
# --check` rendered from that JSON. An offline test renders the JSON again and compares, so the
# block is never typed by hand.
#
# usage: scripts/health-check-doc.sh JOBS_DIR/CHECK_RUN
set -euo pipefail
cd "$(dirname "$0")/.."
run=${1:?usage: scripts/health-check-doc.sh JOBS_DIR/CHECK_RUN}
[ -f "$run/health-check.json" ] && [ -f "$run/health-check.md" ] || {
  echo "no health-check.json and health-check.md in $run" >&2
  exit 1
}
mkdir -p docs/health-check
cp "$run/health-check.json" docs/health-check/skillsbench-87.json
python3 - "$run/health-check.md" <<'PY'
import sys
doc = "docs/tasks.md"
text = open(doc).read()
begin = text.index("<!-- BEGIN health-check")
begin = text.index("\n", begin) + 1
end = text.index("<!-- END health-check -->")
block = open(sys.argv[1]).read()
open(doc, "w").write(text[:begin] + block + text[end:])
PY
echo "docs/tasks.md and docs/health-check/skillsbench-87.json updated from $run"
