# Shared by scripts/k8s-up.sh and scripts/k8s-down.sh (sourced, not run): where the local test
# cluster keeps its files, the addresses it listens on, and small helpers. docs/operations.md
# ("The local test cluster") describes the whole route.
#
# Two folders, both overridable:
#   SKILLSCOPE_K8S_CACHE (default /var/cache/skillscope-k8s) is kept between runs on one machine:
#     the private apt lists, the downloaded .debs and Kubernetes source, the Go build cache and the
#     built binaries (bin/, cni/, images/). Deleting it only costs the next start a cold build.
#   SKILLSCOPE_K8S_STATE (default /var/lib/skillscope-k8s) is one cluster's life: certificates,
#     kubeconfig, etcd data, containerd's image store, the kubelet's pods, the registry's blobs,
#     pid files and the records of every host change (undo/). k8s-up.sh makes it fresh each start;
#     k8s-down.sh removes it.
# Logs of the last cluster stay in $K8S_CACHE/logs for reading after a failure.

K8S_CACHE=${SKILLSCOPE_K8S_CACHE:-/var/cache/skillscope-k8s}
K8S_STATE=${SKILLSCOPE_K8S_STATE:-/var/lib/skillscope-k8s}
K8S_LOGS=$K8S_CACHE/logs
K8S_PIDS=$K8S_STATE/pids
K8S_UNDO=$K8S_STATE/undo
K8S_SOCK=$K8S_STATE/containerd/containerd.sock

# The bridge is both the node's IP and the pods' gateway (the kubelet refuses a loopback node IP).
K8S_BRIDGE=k8sbr0
K8S_NODE_IP=10.244.0.1
K8S_POD_SUBNET=10.244.0.0/24
K8S_NODE_NAME=skillscope-node
K8S_NAMESPACE=skillscope
K8S_ETCD_PORT=12379
K8S_ETCD_PEER_PORT=12380
K8S_APISERVER_PORT=16443
K8S_KUBELET_PORT=20250
K8S_KUBELET_HEALTHZ_PORT=20248
K8S_REGISTRY=127.0.0.1:15000
K8S_PAUSE_IMAGE=skillscope.local/pause:3.2
# The kubelet's cgroup root (in every cgroup v1 hierarchy): the pods' cgroups live under it and
# nowhere else, so k8s-down.sh finds every pod process there.
K8S_CGROUP=skillscope-k8s

# The sysctls the 1.20 kubelet rewrites at start (setupKernelTunables, with no switch to stop
# it) and the one the CNI bridge plugin turns on for a gateway: saved before, restored after.
K8S_SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward)

k8s_log() { printf '%s: [%4ss] %s\n' "${K8S_SCRIPT:-k8s}" "$(( $(date +%s) - ${K8S_T0:-$(date +%s)} ))" "$*" >&2; }
k8s_die() { k8s_log "error: $*"; exit 1; }

# Runs the caller under `nice` once (CPU is shared with parallel cargo builds), unless it already
# is niced as much.
k8s_renice_self() {
  local want=${SKILLSCOPE_K8S_NICE:-10}
  if [ "$(nice)" -lt "$want" ]; then
    renice -n "$want" -p $$ >/dev/null
  fi
}

# The pid of daemon $1 if it is alive and still the program skillscope started (pid files can
# outlive a reboot or a crash; a reused pid must never be killed).
k8s_live_pid() {
  local name=$1 pid exe
  [ -f "$K8S_PIDS/$name.pid" ] || return 1
  pid=$(cat "$K8S_PIDS/$name.pid")
  exe=$(cat "$K8S_PIDS/$name.exe" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
  [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$exe" ] || return 1
  echo "$pid"
}

# Waits up to $1 seconds for pid $2 to exit.
k8s_wait_gone() {
  local limit=$1 pid=$2 i
  for ((i = 0; i < limit * 10; i++)); do
    [ -d "/proc/$pid" ] || return 0
    # A zombie child of this shell counts as gone.
    [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] && return 0
    sleep 0.1
  done
  return 1
}

# The kubectl the cluster was built with (Debian's kubernetes-client 1.20), with the cluster's
# kubeconfig.
k8s_kubectl() { "$K8S_CACHE/bin/kubectl" --kubeconfig "$K8S_STATE/kubeconfig" "$@"; }

# True while the process recorded for daemon $1 exists and is not a zombie (right after start it
# may not have exec'd its program yet, so this does not compare executables).
k8s_running() {
  local pid
  pid=$(cat "$K8S_PIDS/$1.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ -d "/proc/$pid" ] && [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]
}
