#!/usr/bin/env bash
# Lays report.html out in headless Chromium (Debian's `chromium`) at a desktop and a phone width
# and fails on what a reader would see as broken (issue 48):
#   1280 px: the page uses the width (no empty third beside tables that scroll), the conditions
#            table fits without scrolling sideways, and no table header is cut;
#    390 px: the conditions table's pass rate is on screen without scrolling, and chart labels are
#            at least 8 px high.
# The page is measured by a script added to a copy of it (the report itself is not changed); the
# measures come back through --dump-dom.
#
# usage: scripts/report-html-layout.sh REPORT.html...
# Exit 0 when every page passes, 1 otherwise, 2 on usage errors.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 REPORT.html..." >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
profile="$work/profile"
source "$(dirname "$0")/chromium-flags.sh"
flags=("${chromium_flags[@]}" --hide-scrollbars)
# What is measured, written as JSON into <pre id="layout">.
cat >"$work/measure.js" <<'JS'
(function () {
  var vw = window.innerWidth, out = { width: vw, problems: [] };
  var say = function (p) { out.problems.push(p); };
  var main = document.querySelector("main").getBoundingClientRect();
  out.main = Math.round(main.width);
  var cond = document.getElementById("conditions-table");
  if (!cond) { say("no conditions table"); }
  if (vw >= 1000) {
    if (main.width < 0.85 * vw) { say("main uses " + Math.round(main.width) + " of " + vw + " px"); }
    if (cond && cond.parentNode.scrollWidth > cond.parentNode.clientWidth + 1) {
      say("the conditions table scrolls sideways (" + cond.parentNode.scrollWidth + " > " + cond.parentNode.clientWidth + ")");
    }
    document.querySelectorAll("th").forEach(function (th) {
      if (th.scrollWidth > th.clientWidth + 1 || th.scrollHeight > th.clientHeight + 1) {
        say("header cut: " + th.textContent);
      }
    });
  } else {
    if (cond) {
      var th = Array.prototype.filter.call(cond.querySelectorAll("th"), function (h) {
        return h.textContent.indexOf("Pass rate") === 0;
      })[0];
      var r = th && th.getBoundingClientRect();
      if (!r || r.right > vw) { say("the pass-rate column ends at " + (r ? Math.round(r.right) : "?") + " px, past " + vw); }
    }
    document.querySelectorAll("figure svg text").forEach(function (t, i) {
      var h = t.getBoundingClientRect().height;
      if (i < 40 && t.textContent.trim() && h > 0 && h < 8) { say("chart text " + h.toFixed(1) + " px high: " + t.textContent); }
    });
  }
  // In the phone's frame: to the page around it, which --dump-dom prints.
  if (window.parent !== window) { window.parent.postMessage(JSON.stringify(out), "*"); return; }
  var pre = document.createElement("pre");
  pre.id = "layout";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
JS
status=0
for page in "$@"; do
  copy="$work/$(basename "$(dirname "$(realpath "$page")")").html"
  python3 - "$page" "$work/measure.js" "$copy" <<'PY'
import sys
page, js, copy = sys.argv[1:]
html = open(page, encoding="utf-8").read()
script = "<script>" + open(js, encoding="utf-8").read() + "</script>"
open(copy, "w", encoding="utf-8").write(html.replace("</body>", script + "</body>", 1))
PY
  # Headless Chromium's window is at least 500 px wide: the phone is a 390 px frame in a page
  # that takes the frame's measures from its message.
  cat >"$work/phone.html" <<HTML
<!doctype html><html><body style="margin:0"><iframe src="file://$copy" style="width:390px;height:800px;border:0"></iframe>
<script>window.addEventListener("message", function (e) { var p = document.createElement("pre");
p.id = "layout"; p.textContent = e.data; document.body.appendChild(p); });</script></body></html>
HTML
  for size in 1280,900 390,800; do
    url="file://$copy"
    [ "$size" = 1280,900 ] || url="file://$work/phone.html"
    dom=$(timeout 120 chromium "${flags[@]}" --window-size="$size" --virtual-time-budget=5000 \
      --dump-dom "$url" 2>/dev/null || true)
    result=$(python3 -c '
import html, json, re, sys
m = re.search(r"<pre id=\"layout\">(.*?)</pre>", sys.stdin.read(), re.S)
if not m:
    print("no measures"); sys.exit(1)
r = json.loads(html.unescape(m.group(1)))
print("\n".join(r["problems"]) if r["problems"] else "")
sys.exit(1 if r["problems"] else 0)
' <<<"$dom") && ok=1 || ok=0
    if [ $ok = 1 ]; then
      echo "report-html-layout: $page at ${size%,*} px: ok"
    else
      echo "report-html-layout: $page at ${size%,*} px:" >&2
      sed 's/^/  /' <<<"$result" >&2
      status=1
    fi
  done
done
exit $status
