#!/usr/bin/env bash
# Puts a health check's results into the docs: copies <jobs>/<run>/health-check.json (written by
# `skillscope tasks --check`) to docs/health-check/skillsbench-87.json, then renders it with
# today's code into the generated block of docs/tasks.md (between the BEGIN/END health-check
# markers) through the offline test that checks that block, so the block is never typed by hand
# and follows the renderer even when the check ran on an older build.
#
# usage: scripts/health-check-doc.sh JOBS_DIR/CHECK_RUN
set -euo pipefail
run=${1:?usage: scripts/health-check-doc.sh JOBS_DIR/CHECK_RUN}
run=$(cd "$run" && pwd)
cd "$(dirname "$0")/.."
[ -f "$run/health-check.json" ] || {
  echo "no health-check.json in $run" >&2
  exit 1
}
mkdir -p docs/health-check
cp "$run/health-check.json" docs/health-check/skillsbench-87.json
SKILLSCOPE_WRITE_DOCS=1 cargo test --quiet --test offline \
  the_docs_health_check_is_generated_from_the_stored_check > /dev/null
cargo test --quiet --test offline the_docs_health_check_is_generated_from_the_stored_check > /dev/null
echo "docs/tasks.md and docs/health-check/skillsbench-87.json updated from $run"
