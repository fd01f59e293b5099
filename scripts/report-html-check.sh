#!/usr/bin/env bash
# Opens report.html files in headless Chromium (Debian's `chromium`): fails when the page logs a
# console message (a script error) and takes a desktop and a phone screenshot of each.
#
# usage: scripts/report-html-check.sh [--shots DIR] REPORT.html...
#   --shots DIR   write <DIR>/<name>-desktop.png and <name>-phone.png (name: the report's folder)
# Needs chromium (apt-get install chromium). Exit 0 when every page loaded without a console
# message, 1 otherwise, 2 on usage errors.
set -euo pipefail
shots=""
if [ "${1:-}" = "--shots" ]; then
  shots="$2"
  shift 2
fi
[ $# -gt 0 ] || { echo "usage: $0 [--shots DIR] REPORT.html..." >&2; exit 2; }
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
source "$(dirname "$0")/chromium-flags.sh"
flags=("${chromium_flags[@]}" --enable-logging=stderr --v=0)
status=0
for page in "$@"; do
  url="file://$(realpath "$page")"
  log=$(timeout 120 chromium "${flags[@]}" --dump-dom "$url" 2>&1 >/dev/null || true)
  if grep -q "CONSOLE" <<<"$log"; then
    echo "report-html-check: $page logged to the console:" >&2
    grep "CONSOLE" <<<"$log" >&2
    status=1
  else
    echo "report-html-check: $page: no console message"
  fi
  if [ -n "$shots" ]; then
    mkdir -p "$shots"
    name=$(basename "$(dirname "$(realpath "$page")")")
    timeout 120 chromium "${flags[@]}" --window-size=1280,2400 \
      --screenshot="$shots/$name-desktop.png" "$url" >/dev/null 2>&1
    timeout 120 chromium "${flags[@]}" --window-size=390,1600 \
      --screenshot="$shots/$name-phone.png" "$url" >/dev/null 2>&1
    echo "report-html-check: $shots/$name-desktop.png, $shots/$name-phone.png"
  fi
done
exit $status
