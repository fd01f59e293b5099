#!/usr/bin/env bash
# Usage: scripts/ci-watch.sh <quiet-minutes> -- <command> [args…]
#
# Runs <command> in a process group of its own, its output passed through, and stops it when it
# has printed nothing for <quiet-minutes>: a hang then ends CI with what the machine was doing —
# the process tree, what each test and skillscope process's threads wait in, the Docker daemon's
# containers and its goroutines blocked longest, disk and memory — instead of running into CI's
# time limit with nothing said (a submission's CI once printed nothing for over an hour after two
# docker tests passed 60 s). `cargo test` prints a line per test and one when a test passes
# 60 s, so a quiet stretch of many minutes is a hang, not a slow test.
#
# Exit status: the command's own, or 124 when it was stopped for its silence.
set -uo pipefail

if [ $# -lt 3 ] || [ "$2" != "--" ]; then
  echo "usage: $0 <quiet-minutes> -- <command> [args…]" >&2
  exit 2
fi
quiet_secs=$(( $1 * 60 ))
shift 2

log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Without job control a background job is no group leader, so setsid makes the command's own
# process group (its pid) without forking.
setsid "$@" > >(tee -a "$log") 2>&1 &
pid=$!

say() { printf 'ci-watch: %s\n' "$*"; }

# Lines of a goroutine dump: the goroutines blocked for `min` minutes or more, each header with
# its first frames, at most 400 lines.
long_goroutines() {
  awk -v min="$2" '
    /^goroutine [0-9]+ \[/ {
      show = 0
      if (match($0, /, [0-9]+ minutes/)) {
        n = substr($0, RSTART + 2, RLENGTH - 10) + 0
        if (n >= min) show = 1
      }
      frames = 0
    }
    show && frames < 16 { print; frames++ }
  ' "$1" | head -n 400
}

diagnose() {
  say "no output for $(( quiet_secs / 60 )) min: stopping the command; what the machine is doing:"
  say "--- uptime, memory, disk"
  uptime
  free -m
  df -h / /var/lib/docker 2>/dev/null
  say "--- process tree (pid ppid pgid state seconds wait-channel command)"
  ps -eo pid,ppid,pgid,stat,etimes,wchan:28,args --forest | grep -v ' \[[^]]*\]$' | cut -c1-240
  say "--- containers"
  timeout 20 docker ps -a --format '{{.ID}} {{.Names}} | {{.Status}} | {{.Labels}}' | cut -c1-300 |
    head -n 60 || say "docker ps did not answer in 20 s"
  local dockerd
  dockerd=$(pgrep -xo dockerd)
  if [ -n "$dockerd" ]; then
    # Blocked at least half the quiet stretch: a hang's goroutines, and the daemon's idle ones.
    local min=$(( quiet_secs / 120 ))
    say "--- dockerd $dockerd: goroutines blocked $min minutes or more"
    local before after stacks
    before=$(ls -1 /var/run/docker/goroutine-stacks-*.log 2>/dev/null | wc -l)
    kill -USR1 "$dockerd" 2>/dev/null
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      after=$(ls -1 /var/run/docker/goroutine-stacks-*.log 2>/dev/null | wc -l)
      [ "$after" -gt "$before" ] && break
      sleep 1
    done
    stacks=$(ls -1t /var/run/docker/goroutine-stacks-*.log 2>/dev/null | head -n 1)
    if [ -n "$stacks" ]; then
      say "($(grep -c '^goroutine ' "$stacks") goroutines in $stacks)"
      long_goroutines "$stacks" "$min"
    else
      say "dockerd wrote no goroutine dump"
    fi
    say "--- dockerd's last log lines"
    tail -n 30 /var/log/skillscope-dockerd.log 2>/dev/null | cut -c1-300
  fi
  # Where each test binary's and skillscope's threads wait (a debugger's backtraces, cut short).
  local p
  for p in $(pgrep -g "$pid" 2>/dev/null); do
    case "$(cat "/proc/$p/comm" 2>/dev/null)" in
      skillscope|docker-*|kubernetes-*|offline-*|terminal-*|cluster_restart*)
        say "--- threads of $p: $(tr '\0' ' ' < "/proc/$p/cmdline" | cut -c1-200)"
        timeout 60 gdb -p "$p" -batch -ex 'thread apply all bt 14' 2>/dev/null |
          grep -E '^(Thread|#)' | cut -c1-220 | head -n 150
        ;;
    esac
  done
}

quiet_since=$(date +%s)
last=0
while kill -0 "$pid" 2>/dev/null; do
  sleep 5
  size=$(stat -c %s "$log" 2>/dev/null || echo 0)
  if [ "$size" != "$last" ]; then
    last=$size
    quiet_since=$(date +%s)
  elif [ $(( $(date +%s) - quiet_since )) -ge "$quiet_secs" ]; then
    diagnose
    kill -TERM -- "-$pid" 2>/dev/null
    sleep 10
    kill -KILL -- "-$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    say "stopped after $(( quiet_secs / 60 )) min without output"
    exit 124
  fi
done
wait "$pid"
rc=$?
# The last of the output, through tee, before this script's own end.
sleep 1
exit "$rc"
