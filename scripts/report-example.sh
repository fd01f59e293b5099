#!/usr/bin/env bash
# Regenerates the README's report chart from the published Gemini 3 Flash per-trial CSV
# (shared/skillsbench/published/shenghan): import into a scratch database, `skillscope report`,
# copy the charts into screenshots/.
set -euo pipefail
cd "$(dirname "$0")/.."
shared="${SKILLSBENCH_SHARED:-../shared/skillsbench}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cargo build --release --quiet
bin=target/release/skillscope
"$bin" import --db "$scratch/flash.db" \
  "$shared/published/shenghan/experiment_runs__gemini-cli-gemini3flash_subset.csv" >/dev/null
"$bin" report --db "$scratch/flash.db" csv-gemini-cli-gemini3flash --out "$scratch/report"
cp "$scratch/report/charts/pass_rate.png" screenshots/report-flash-pass-rate.png
cp "$scratch/report/charts/failures.png" screenshots/report-flash-failures.png
echo "wrote screenshots/report-flash-pass-rate.png and screenshots/report-flash-failures.png"
