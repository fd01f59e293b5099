# Sourced by the scripts that open report.html in headless Chromium (report-html-check.sh,
# report-html-layout.sh): refuses to go on without Debian's `chromium`, and sets `chromium_flags`
# for a fresh profile in "$profile" — the flags a closed network needs (no background
# connections, no component updates; see docs/scoring.md).
command -v chromium >/dev/null || { echo "$(basename "$0"): chromium is not installed (apt-get install chromium)" >&2; exit 2; }
chromium_flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync
  --user-data-dir="$profile")
