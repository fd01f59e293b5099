#!/usr/bin/env bash
# Regenerates screenshots/*.png from a real run of the built-in example tasks: the dashboard runs
# in tmux, each view is captured with its colours (`capture-pane -e`) and rendered to PNG by
# scripts/ansi2png.py (pyte + Pillow, installed into target/screenshot-venv). Needs Docker
# (scripts/docker-up.sh), tmux and fonts-dejavu-core.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
out="$repo/screenshots"
venv="$repo/target/screenshot-venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q pillow pyte
fi
cargo build --release -q
bin="$repo/target/release/skillscope"
work=$(mktemp -d)
session="skillscope-shots-$$"
trap 'tmux kill-session -t "$session" 2>/dev/null || true; rm -rf "$work"' EXIT

shot() { # name cols rows
  tmux capture-pane -e -p -t "$session" > "$work/$1.ansi"
  "$venv/bin/python" "$repo/scripts/ansi2png.py" "$work/$1.ansi" "$out/$1.png" "$2" "$3"
  echo "screenshots/$1.png"
}
keys() { for k in "$@"; do tmux send-keys -t "$session" "$k"; sleep 0.4; done; }

mkdir -p "$out"
cd "$work"
tmux new-session -d -s "$session" -x 120 -y 40 \
  "XDG_DATA_HOME=$work/data $bin run --trials 5 --concurrency 2 --db $work/s.db --jobs-dir $work/jobs; sleep 600"
sleep 7
shot dashboard-running 120 40
# Let the run finish, then the detail of a failed no-skills trial (ledger-code-mapping needs its skill).
for _ in $(seq 120); do
  "$bin" status --db "$work/s.db" --json | "$venv/bin/python" -c '
import json, sys
runs = json.load(sys.stdin)["runs"]
sys.exit(0 if runs and all(c["done"] == c["n_planned"] for c in runs[0]["conditions"]) else 1)' && break
  sleep 1
done
sleep 3
shot dashboard-finished 120 40
keys / ledger Enter
keys Enter
shot detail-summary 120 40
keys Tab Tab
shot detail-verifier 120 40
keys Escape Escape Tab d
shot domains-by-difficulty 120 40
keys d Tab ?
shot help 120 40
keys x
tmux resize-window -t "$session" -x 80 -y 24
sleep 1
keys Escape
shot dashboard-80x24 80 24

# The learning phase: the example experiment against the Acontext stand-in shipped in the binary
# (it learns nothing real), then its skill browser (a learned skill's SKILL.md, the diff against
# the curated version, the sessions).
port=$((20000 + RANDOM % 20000))
"$bin" acontext-standin --port "$port" --key sk-ac-shots > "$work/fake.log" 2>&1 &
fake=$!
trap 'kill $fake 2>/dev/null || true; tmux kill-session -t "$session" 2>/dev/null || true; rm -rf "$work"' EXIT
sed -e 's/^name = .*/name = "shots"/' -e 's/^trials = .*/trials = 1/' -e "s#\"../exports\"#\"$work/exports\"#" -e "s#\"../jobs\"#\"$work/jobs\"#" -e "s#\"../reports\"#\"$work/reports\"#" \
  "$repo/plans/examples.toml" > "$work/shots.toml"
ACONTEXT_API_KEY=sk-ac-shots XDG_DATA_HOME=$work/data "$bin" experiment "$work/shots.toml" --headless \
  --db "$work/e.db" --base-url "http://127.0.0.1:$port/api/v1" > "$work/experiment.log" 2>&1
# Killing the last session ends the tmux server, which tmux 3.3 reports as an error.
tmux kill-session -t "$session" 2>/dev/null || true
tmux new-session -d -s "$session" -x 120 -y 40 "$bin watch --db $work/e.db --experiment shots; sleep 600"
sleep 3
shot experiment-overview 120 40
keys K Down Enter Enter Enter G
shot skill-browser-learned 120 40
keys d
shot skill-browser-diff 120 40
keys d Tab
shot skill-browser-sessions 120 40
