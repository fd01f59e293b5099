#!/usr/bin/env bash
# Stops skillscope's local test cluster (scripts/k8s-up.sh) and undoes every host change it made:
# the pods' processes and cgroups, the daemons it started (by their recorded pids, each checked
# to still be the program started), mounts under its state folder, the bridge, the sysctls the
# kubelet rewrote, and /var/log/pods, /var/log/containers and /var/lib/cni when it created them.
# Then removes the state folder (SKILLSCOPE_K8S_STATE, default /var/lib/skillscope-k8s); the
# cache of built binaries stays. Idempotent: with nothing running it does nothing; after a crash
# it cleans what is left. Docker's daemon, containerd, containers, networks and iptables rules
# are never touched.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
K8S_SCRIPT=k8s-down
K8S_T0=$(date +%s)
# shellcheck source=scripts/k8s-lib.sh
. "$here/k8s-lib.sh"

[ "$(id -u)" -eq 0 ] || k8s_die "must run as root"
S=$K8S_STATE
if [ "${SKILLSCOPE_K8S_LOCKED:-0}" != 1 ] && [ -d "$K8S_CACHE" ]; then
  exec 9>"$K8S_CACHE/.lock"
  flock -w 600 9 || k8s_die "another k8s-up/k8s-down holds $K8S_CACHE/.lock"
fi
if [ ! -d "$S" ]; then
  k8s_log "nothing to stop ($S does not exist)"
  exit 0
fi
failed=0

stop_daemon() {
  local name=$1 pid
  pid=$(k8s_live_pid "$name") || { rm -f "$K8S_PIDS/$name.pid"; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  if ! k8s_wait_gone 15 "$pid"; then
    k8s_log "$name (pid $pid) ignored SIGTERM for 15s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    k8s_wait_gone 5 "$pid" || { k8s_log "$name (pid $pid) does not exit"; failed=1; }
  fi
  rm -f "$K8S_PIDS/$name.pid"
}

# Every pid in the cluster's cgroups (they hold only the pods' processes), in every hierarchy.
pod_pids() {
  local d
  for d in /sys/fs/cgroup/*/"$K8S_CGROUP"; do
    [ -d "$d" ] && find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null
  done | sort -un
}

# The shims our containerd started (found by the socket path in their arguments).
shim_pids() {
  local p
  for p in /proc/[0-9]*; do
    if tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -q -- "-address $K8S_SOCK "; then
      basename "$p"
    fi
  done
}

kill_pods() {
  # The kubelet is down first so nothing restarts; then every pod process, then the shims.
  local pids pid i
  for i in 1 2 3 4 5; do
    pids=$(pod_pids)
    [ -z "$pids" ] && break
    for pid in $pids; do kill -KILL "$pid" 2>/dev/null || true; done
    sleep 0.3
  done
  [ -z "$(pod_pids)" ] || { k8s_log "pod processes survive: $(pod_pids | tr '\n' ' ')"; failed=1; }
  for pid in $(shim_pids); do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in $(shim_pids); do
    k8s_wait_gone 5 "$pid" || kill -KILL "$pid" 2>/dev/null || true
  done
}

remove_cgroups() {
  local d
  [ -f "$K8S_UNDO/cgroups" ] || return 0
  for d in /sys/fs/cgroup/*/"$K8S_CGROUP"; do
    [ -d "$d" ] || continue
    # Deepest first; a cgroup folder is removed with rmdir (its files are the kernel's).
    find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
    [ -d "$d" ] && { k8s_log "cgroup $d remains"; failed=1; }
  done
  [ "$failed" -ne 0 ] || rm -f "$K8S_UNDO/cgroups"
}

unmount_state() {
  # Mount points under the state folder (overlay rootfs, netns, emptyDir and secret tmpfs),
  # deepest first. /proc/self/mountinfo escapes spaces as \040; our paths have none.
  local m i
  for i in 1 2 3; do
    mapfile -t mounts < <(awk -v s="$S/" 'index($5, s) == 1 {print $5}' /proc/self/mountinfo | sort -r)
    [ ${#mounts[@]} -eq 0 ] && return 0
    for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
  done
  mapfile -t mounts < <(awk -v s="$S/" 'index($5, s) == 1 {print $5}' /proc/self/mountinfo)
  if [ ${#mounts[@]} -gt 0 ]; then
    k8s_log "mounts remain: ${mounts[*]}"
    failed=1
  fi
}

remove_bridge() {
  [ -f "$K8S_UNDO/bridge" ] || return 0
  local link
  # Host ends of pod veths still attached (their namespaces should be gone already).
  for link in $(ip -o link show master "$K8S_BRIDGE" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
    ip link del "$link" 2>/dev/null || true
  done
  if ip link show "$K8S_BRIDGE" >/dev/null 2>&1; then
    ip link del "$K8S_BRIDGE" || { k8s_log "could not delete $K8S_BRIDGE"; failed=1; return 0; }
  fi
  rm -f "$K8S_UNDO/bridge"
}

restore_sysctls() {
  [ -f "$K8S_UNDO/sysctl" ] || return 0
  local line key old now
  while IFS= read -r line; do
    key=${line%%=*}
    old=${line#*=}
    now=$(sysctl -n "$key" 2>/dev/null) || continue
    if [ "$now" != "$old" ]; then
      sysctl -q -w "$key=$old" >/dev/null || { k8s_log "could not restore $key=$old"; failed=1; }
    fi
  done <"$K8S_UNDO/sysctl"
  rm -f "$K8S_UNDO/sysctl"
}

remove_created() {
  local key path
  for key in var-log-pods var-log-containers var-lib-cni; do
    [ -f "$K8S_UNDO/created-$key" ] || continue
    path=/${key//-//}
    rm -rf "$path"
    rm -f "$K8S_UNDO/created-$key"
  done
}

k8s_log "stopping the local cluster ($S)"
for name in kubelet kube-scheduler kube-controller-manager kube-apiserver; do stop_daemon "$name"; done
kill_pods
for name in registry containerd etcd; do stop_daemon "$name"; done
# A shim could outlive its containerd; none may stay.
for pid in $(shim_pids); do kill -KILL "$pid" 2>/dev/null || true; done
unmount_state
remove_cgroups
remove_bridge
restore_sysctls
remove_created
if [ "$failed" -ne 0 ]; then
  k8s_die "some of the cluster is left (see above); $S is kept for a second k8s-down.sh"
fi
rm -rf "$S"
k8s_log "stopped; host changes undone"
