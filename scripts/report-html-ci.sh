#!/usr/bin/env bash
# CI's check of report.html (issue 37): installs Debian's chromium when missing, writes the report
# of a one-trial example run and of the dry-run experiment with the debug build, and opens both in
# headless Chromium (scripts/report-html-check.sh: no console message allowed) and lays them out at
# a desktop and a phone width (scripts/report-html-layout.sh). Each format is also
# written alone, each by a fresh process (issue 48: `--format html` alone once failed for want of
# a font that only the PNG charts registered).
#
# usage: scripts/report-html-ci.sh [SKILLSCOPE]   (default: target/debug/skillscope)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-target/debug/skillscope}")
if ! command -v chromium >/dev/null; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get install -y --no-install-recommends chromium >/dev/null
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
( cd "$work" && "$bin" run --headless --trials 1 >/dev/null 2>&1 && "$bin" report --out report >/dev/null )
for format in html json csv leaderboard md; do
  ( cd "$work" && "$bin" report --format "$format" --out "alone-$format" >/dev/null ) \
    || { echo "report-html-ci: report --format $format alone failed" >&2; exit 1; }
done
( cd "$work" && "$bin" experiment --dry-run --headless >/dev/null 2>&1 )
dry=$(ls "$work"/dry-run/*/reports/*/report.html)
scripts/report-html-check.sh "$work/report/report.html" "$dry"
# Laid out at 1280 and 390 px: nothing a reader would see as broken (issue 48).
scripts/report-html-layout.sh "$work/report/report.html" "$dry"
