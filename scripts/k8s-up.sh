#!/usr/bin/env bash
# Builds (the first time) and starts skillscope's local test cluster: a single-node Kubernetes
# 1.20.2 made only from Debian bookworm's packages (the server binaries built from Debian's
# src:kubernetes with Debian's Go 1.19; etcd, the CNI plugins, kubectl and the image registry
# from Debian's .debs; the host's containerd and runc run as a private instance), and a
# loopback image registry (Debian's docker-registry) that the cluster's containerd pulls from.
#
# Usage (as root): scripts/k8s-up.sh [--build-only]
# Ends by printing, on stdout, the lines to evaluate in a shell:
#   export KUBECONFIG=/var/lib/skillscope-k8s/kubeconfig
#   export SKILLSCOPE_REGISTRY=127.0.0.1:15000
# e.g. `eval "$(scripts/k8s-up.sh)"`. Progress goes to stderr.
#
# Binaries and build caches are kept in SKILLSCOPE_K8S_CACHE (default /var/cache/skillscope-k8s);
# cluster state is fresh at each start (a running cluster is stopped first, so this is safe
# after a crash and idempotent). SKILLSCOPE_K8S_DROP_BUILD=1 deletes the Go build cache, the
# source and the Go toolchain after a build (about 2.5 GB) and keeps only what runs.
# Stop with scripts/k8s-down.sh, which undoes every host change made here. Docker's daemon,
# containerd instance, containers, networks and iptables rules are never touched, and no iptables
# rule is added.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
K8S_SCRIPT=k8s-up
K8S_T0=$(date +%s)
# shellcheck source=scripts/k8s-lib.sh
. "$here/k8s-lib.sh"

build_only=false
case "${1:-}" in
  --build-only) build_only=true ;;
  "") ;;
  *) k8s_die "unknown argument '$1' (usage: k8s-up.sh [--build-only])" ;;
esac
[ "$(id -u)" -eq 0 ] || k8s_die "must run as root (it starts a kubelet and containerd)"
for tool in apt-get dpkg-source curl openssl python3 gcc flock setsid ss ip sysctl; do
  command -v "$tool" >/dev/null || k8s_die "needs $tool (Debian: apt-get install dpkg-dev curl openssl python3 gcc util-linux iproute2 procps)"
done
k8s_renice_self

W=$K8S_CACHE
S=$K8S_STATE
# Bump when the build recipe below changes: binaries built by another recipe are rebuilt.
BUILD_ID="k8s-1.20.2-deb12u1 go-1.19.8 r1"
K8S_SRC_VERSION=1.20.5+really1.20.2-1.1+deb12u1
DEBS=(golang-1.19-go golang-1.19-src etcd-server containernetworking-plugins kubernetes-client
  docker-registry golang-github-modern-go-reflect2-dev)

mkdir -p "$W"
exec 9>"$W/.lock"
flock -w 600 9 || k8s_die "another k8s-up/k8s-down holds $W/.lock"

# --- build ---------------------------------------------------------------------------------

apt_private() {
  # A private apt: its own sources (with deb-src), lists and archive folder under $W; the
  # system's sources, lists and installed packages are left as they are.
  local tool=$1; shift
  "$tool" -o Dir::Etc::sourcelist="$W/apt/sources.list" -o Dir::Etc::sourceparts=/nonexistent \
    -o Dir::State::Lists="$W/apt/lists" -o Dir::Cache::archives="$W/debs" \
    -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= -o APT::Sandbox::User=root "$@"
}

fetch_inputs() {
  mkdir -p "$W/apt/lists/partial" "$W/debs/partial" "$W/src"
  local extra=()
  command -v containerd >/dev/null || extra+=(containerd)
  command -v runc >/dev/null || extra+=(runc)
  command -v containerd-shim-runc-v2 >/dev/null || extra+=(containerd)
  local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  [ -f "$keyring" ] || k8s_die "$keyring is missing (package debian-archive-keyring)"
  cat >"$W/apt/sources.list" <<EOF
deb [signed-by=$keyring] http://deb.debian.org/debian bookworm main
deb-src [signed-by=$keyring] http://deb.debian.org/debian bookworm main
deb [signed-by=$keyring] http://deb.debian.org/debian bookworm-updates main
deb [signed-by=$keyring] http://deb.debian.org/debian-security bookworm-security main
deb-src [signed-by=$keyring] http://deb.debian.org/debian-security bookworm-security main
EOF
  k8s_log "apt update (private lists in $W/apt)"
  apt_private apt-get update -qq
  if [ ! -f "$W/src/kubernetes_$K8S_SRC_VERSION.dsc" ]; then
    k8s_log "downloading Debian's src:kubernetes $K8S_SRC_VERSION"
    (cd "$W/src" && apt_private apt-get source --download-only -qq "kubernetes=$K8S_SRC_VERSION")
  fi
  k8s_log "downloading ${DEBS[*]} ${extra[*]}"
  (cd "$W/debs" && apt_private apt-get download -qq "${DEBS[@]}" "${extra[@]}")
}

unpack_inputs() {
  rm -rf "$W/root" "$W/src/k8s"
  mkdir -p "$W/root"
  local deb
  for deb in "$W"/debs/*.deb; do dpkg -x "$deb" "$W/root"; done
  k8s_log "unpacking the Kubernetes source"
  dpkg-source -q -x --no-check "$W/src/kubernetes_$K8S_SRC_VERSION.dsc" "$W/src/k8s" >/dev/null
}

patch_source() {
  local k=$W/src/k8s
  # reflect2 v1.0.1 is known to break on Go >= 1.18: Debian's v1.0.2 instead.
  rm -rf "$k/vendor/github.com/modern-go/reflect2"
  cp -a "$W/root/usr/share/gocode/src/github.com/modern-go/reflect2" "$k/vendor/github.com/modern-go/reflect2"
  # The in-tree cloud credential providers probe cloud metadata addresses at kubelet start (the
  # AWS one connected to 169.254.169.254); the local cluster needs none of them.
  sed -i '/_ "k8s.io\/kubernetes\/pkg\/credentialprovider\/\(aws\|azure\|gcp\)"/d' "$k/cmd/kubelet/app/plugins.go"
  grep -q credentialprovider/aws "$k/cmd/kubelet/app/plugins.go" && k8s_die "could not drop the AWS credential provider"
  return 0
}

go_env() {
  export GOROOT=$W/root/usr/lib/go-1.19
  export PATH=$GOROOT/bin:$PATH
  export GOPATH=$W/gopath GOCACHE=$W/gocache GO111MODULE=off CGO_ENABLED=0 GOFLAGS=
  export GOTOOLCHAIN=local GOPROXY=off
  mkdir -p "$GOPATH/src/k8s.io"
  ln -sfn "$W/src/k8s" "$GOPATH/src/k8s.io/kubernetes"
}

generate_openapi() {
  # The source tarball lacks pkg/generated/openapi/zz_generated.openapi.go: build openapi-gen from
  # vendor/ and run it on the package set Makefile.generated_files computes for KUBE (every Go
  # folder outside vendor/, staging named as vendor/, whose files carry a `// +k8s:` tag and
  # `+k8s:openapi-gen=`, less code-generator and sample-apiserver).
  local k=$GOPATH/src/k8s.io/kubernetes dirs
  (cd "$k" && nice -n 19 go build -o "$W/build/openapi-gen" ./vendor/k8s.io/kube-openapi/cmd/openapi-gen)
  dirs=$(cd "$k" && find -H . \( -path ./_\* -o -path ./.\* -o -path ./vendor \) -prune -o -type f -name '*.go' -print \
    | sed 's|^./staging/src|vendor|; s|^./||; s|/[^/]*$||' | LC_ALL=C sort -u \
    | while read -r d; do find "$d/" -maxdepth 1 -type f -name '*.go' 2>/dev/null; done \
    | xargs grep --color=never -l '^// *+k8s:' \
    | grep -v -e '^vendor/k8s.io/code-generator/' -e '^vendor/k8s.io/sample-apiserver/' \
    | xargs grep --color=never -l '+k8s:openapi-gen=' | xargs -n1 dirname | LC_ALL=C sort -u \
    | sed 's|^|k8s.io/kubernetes/|' | paste -sd, -)
  [ -n "$dirs" ] || k8s_die "no openapi-gen input packages found"
  (cd "$k" && nice -n 19 "$W/build/openapi-gen" --logtostderr -i "$dirs" \
    -p k8s.io/kubernetes/pkg/generated/openapi -O zz_generated.openapi \
    -h vendor/k8s.io/code-generator/hack/boilerplate.go.txt -r "$W/build/openapi-violations.report" >/dev/null 2>"$W/build/openapi-gen.log") \
    || { tail -20 "$W/build/openapi-gen.log" >&2; k8s_die "openapi-gen failed"; }
  [ -s "$k/pkg/generated/openapi/zz_generated.openapi.go" ] || k8s_die "openapi-gen wrote nothing"
}

build_binaries() {
  local k=$GOPATH/src/k8s.io/kubernetes v=k8s.io/kubernetes/vendor/k8s.io/component-base/version
  local ld="-s -w -X $v.gitVersion=v1.20.2 -X $v.gitMajor=1 -X $v.gitMinor=20 -X $v.gitTreeState=clean -X $v.buildDate=2021-01-13T13:20:00Z"
  local cmd t
  for cmd in kube-apiserver kubelet kube-controller-manager kube-scheduler; do
    t=$(date +%s)
    # dockerless: no dockershim, and cadvisor never asks the host's Docker for anything.
    (cd "$k" && nice -n 19 go build -p 2 -tags dockerless -ldflags "$ld" -o "$W/build/$cmd" "./cmd/$cmd")
    k8s_log "built $cmd in $(( $(date +%s) - t ))s"
  done
  # The pod sandbox's pause process, from the same tree.
  gcc -Os -static -o "$W/build/pause" "$k/build/pause/linux/pause.c" -DVERSION=3.2
}

make_pause_image() {
  # A docker-save archive (manifest.json, config, one layer) that `ctr images import` reads.
  python3 - "$W/build/pause" "$W/build/pause.tar" "$K8S_PAUSE_IMAGE" <<'PY'
import hashlib, io, json, sys, tarfile
binary, out, ref = sys.argv[1:4]
layer = io.BytesIO()
with tarfile.open(fileobj=layer, mode="w", format=tarfile.USTAR_FORMAT) as t:
    info = tarfile.TarInfo("pause"); data = open(binary, "rb").read()
    info.size, info.mode, info.mtime = len(data), 0o755, 0
    t.addfile(info, io.BytesIO(data))
layer = layer.getvalue()
diff = "sha256:" + hashlib.sha256(layer).hexdigest()
config = json.dumps({"architecture": "amd64", "os": "linux",
    "config": {"Entrypoint": ["/pause"], "User": "65535:65535"},
    "rootfs": {"type": "layers", "diff_ids": [diff]}, "history": [{"created_by": "skillscope k8s-up.sh"}]}).encode()
cfg = hashlib.sha256(config).hexdigest() + ".json"
manifest = json.dumps([{"Config": cfg, "RepoTags": [ref], "Layers": ["layer/layer.tar"]}]).encode()
with tarfile.open(out, "w", format=tarfile.USTAR_FORMAT) as t:
    for name, data in ((cfg, config), ("layer/layer.tar", layer), ("manifest.json", manifest)):
        info = tarfile.TarInfo(name); info.size, info.mtime = len(data), 0
        t.addfile(info, io.BytesIO(data))
PY
}

install_runtime() {
  # What a cluster needs to run, out of the build folders (so those can be dropped).
  rm -rf "$W/bin" "$W/cni" "$W/images"
  mkdir -p "$W/bin" "$W/cni" "$W/images"
  local b
  for b in kube-apiserver kubelet kube-controller-manager kube-scheduler; do mv "$W/build/$b" "$W/bin/"; done
  cp "$W/root/usr/bin/etcd" "$W/root/usr/bin/docker-registry" "$W/root/usr/bin/kubectl" "$W/bin/"
  for b in bridge host-local loopback; do cp "$W/root/usr/lib/cni/$b" "$W/cni/"; done
  mv "$W/build/pause.tar" "$W/images/"
  # The host's containerd and runc when it has them (Docker's packages), else Debian's copies.
  for b in containerd containerd-shim-runc-v2 ctr; do
    command -v "$b" >/dev/null || cp "$W/root/usr/bin/$b" "$W/bin/"
  done
  command -v runc >/dev/null || cp "$W/root/usr/sbin/runc" "$W/bin/"
  echo "$BUILD_ID" >"$W/bin/BUILD"
}

build() {
  if [ "$(cat "$W/bin/BUILD" 2>/dev/null)" = "$BUILD_ID" ] && [ -x "$W/bin/kubelet" ] && [ -f "$W/images/pause.tar" ]; then
    k8s_log "binaries are built ($W/bin)"
    return
  fi
  k8s_log "building the cluster's binaries into $W (cold: about 5.5 min of 2 cores; 15-20 min under load)"
  rm -rf "$W/build"
  mkdir -p "$W/build"
  fetch_inputs
  unpack_inputs
  patch_source
  go_env
  k8s_log "generating the OpenAPI definitions"
  generate_openapi
  build_binaries
  make_pause_image
  install_runtime
  rm -rf "$W/build"
  if [ "${SKILLSCOPE_K8S_DROP_BUILD:-0}" = 1 ]; then
    k8s_log "dropping the Go cache, source and toolchain (SKILLSCOPE_K8S_DROP_BUILD=1)"
    rm -rf "$W/gocache" "$W/gopath" "$W/src/k8s" "$W/root"
  fi
  k8s_log "build done: $(du -sh "$W" | cut -f1) in $W"
}

# --- start ---------------------------------------------------------------------------------

# Starts daemon $1 (the command follows) in its own session, logging to $K8S_LOGS/$1.log, and
# records its pid and executable for k8s-down.sh.
start_daemon() {
  local name=$1; shift
  # 9>&-: the daemon must not keep the scripts' lock.
  setsid "$@" </dev/null >"$K8S_LOGS/$name.log" 2>&1 9>&- &
  local pid=$!
  echo "$pid" >"$K8S_PIDS/$name.pid"
  local exe
  exe=$(readlink -f "$(command -v "$1")")
  echo "$exe" >"$K8S_PIDS/$name.exe"
}

# Waits up to $2 seconds for command $3... to succeed, failing with daemon $1's log.
wait_for() {
  local name=$1 limit=$2 i; shift 2
  for ((i = 0; i < limit * 5; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    if ! k8s_running "$name"; then
      tail -n 25 "$K8S_LOGS/$name.log" >&2
      k8s_die "$name exited (log: $K8S_LOGS/$name.log)"
    fi
    sleep 0.2
  done
  tail -n 25 "$K8S_LOGS/$name.log" >&2
  k8s_die "$name did not come up in ${limit}s (log: $K8S_LOGS/$name.log)"
}

port_free() { ! ss -Hltn "sport = :$1" | grep -q .; }

check_host() {
  local p
  for p in $K8S_ETCD_PORT $K8S_ETCD_PEER_PORT $K8S_APISERVER_PORT $K8S_KUBELET_PORT $K8S_KUBELET_HEALTHZ_PORT "${K8S_REGISTRY##*:}"; do
    port_free "$p" || k8s_die "port $p is in use (ss -ltnp 'sport = :$p' names the program)"
  done
  ip link show "$K8S_BRIDGE" >/dev/null 2>&1 && k8s_die "a link $K8S_BRIDGE exists that k8s-down.sh did not remove: not ours, not touched"
  local clash
  clash=$(ip -4 route show match "$K8S_NODE_IP" | grep -v '^default' | head -1 || true)
  [ -z "$clash" ] || k8s_die "$K8S_POD_SUBNET overlaps a route of this machine: $clash"
  command -v containerd >/dev/null || [ -x "$W/bin/containerd" ] || k8s_die "no containerd"
  [ -d /sys/fs/cgroup/memory ] || k8s_die "the local cluster needs cgroup v1 (no /sys/fs/cgroup/memory)"
  return 0
}

# Records the state of a host path before the cluster may create it, so k8s-down.sh removes it
# only if it was absent.
note_absent() {
  local path=$1 key=$2
  [ -e "$path" ] || touch "$K8S_UNDO/created-$key"
}

host_changes() {
  mkdir -p "$K8S_UNDO"
  local s
  : >"$K8S_UNDO/sysctl"
  for s in "${K8S_SYSCTLS[@]}"; do
    echo "$s=$(sysctl -n "$s")" >>"$K8S_UNDO/sysctl"
  done
  # The 1.20 kubelet always writes pod logs here; libcni keeps its result cache in /var/lib/cni.
  note_absent /var/log/pods var-log-pods
  note_absent /var/log/containers var-log-containers
  note_absent /var/lib/cni var-lib-cni
  # The kubelet's cgroup root must exist in every hierarchy; the hierarchies' own roots are
  # left as they are.
  local h
  for h in /sys/fs/cgroup/*/; do
    [ -f "$h/cgroup.procs" ] || continue
    [ -e "$h$K8S_CGROUP" ] && k8s_die "cgroup $h$K8S_CGROUP exists: not ours, not touched"
  done
  touch "$K8S_UNDO/cgroups"
  for h in /sys/fs/cgroup/*/; do
    [ -f "$h/cgroup.procs" ] && mkdir "$h$K8S_CGROUP"
  done
  ip link add "$K8S_BRIDGE" type bridge
  touch "$K8S_UNDO/bridge"
  ip addr add "$K8S_NODE_IP/24" dev "$K8S_BRIDGE"
  ip link set "$K8S_BRIDGE" up
}

make_pki() {
  local p=$S/pki
  mkdir -p "$p"
  chmod 700 "$p"
  (
    cd "$p"
    openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -keyout ca.key -out ca.crt \
      -days 30 -subj "/CN=skillscope-local-ca" 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    # name, subject, SANs (empty for a client-only certificate)
    cert() {
      local name=$1 subj=$2 sans=$3
      openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -keyout "$name.key" -out "$name.csr" \
        -subj "$subj" 2>/dev/null
      {
        echo "basicConstraints=CA:FALSE"
        echo "keyUsage=critical,digitalSignature,keyEncipherment"
        echo "extendedKeyUsage=serverAuth,clientAuth"
        [ -n "$sans" ] && echo "subjectAltName=$sans"
      } >"$name.ext"
      openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$name.crt" -days 30 \
        -extfile "$name.ext" 2>/dev/null
      rm -f "$name.csr" "$name.ext"
    }
    cert apiserver "/CN=kube-apiserver" \
      "IP:127.0.0.1,IP:$K8S_NODE_IP,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
    cert apiserver-kubelet-client "/CN=kube-apiserver-kubelet-client/O=system:masters" ""
    cert admin "/CN=skillscope-admin/O=system:masters" ""
    cert controller-manager "/CN=system:kube-controller-manager" ""
    cert scheduler "/CN=system:kube-scheduler" ""
    cert node "/CN=system:node:$K8S_NODE_NAME/O=system:nodes" ""
    cert kubelet "/CN=$K8S_NODE_NAME" "IP:$K8S_NODE_IP,DNS:$K8S_NODE_NAME"
  )
}

# Writes a kubeconfig for certificate $2 to $1 (namespace $3), certificates embedded.
kubeconfig() {
  local out=$1 who=$2 ns=$3 p=$S/pki
  cat >"$out" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: skillscope-local
  cluster:
    server: https://127.0.0.1:$K8S_APISERVER_PORT
    certificate-authority-data: $(base64 -w0 "$p/ca.crt")
users:
- name: $who
  user:
    client-certificate-data: $(base64 -w0 "$p/$who.crt")
    client-key-data: $(base64 -w0 "$p/$who.key")
contexts:
- name: skillscope-local
  context:
    cluster: skillscope-local
    user: $who
    namespace: $ns
current-context: skillscope-local
EOF
  chmod 600 "$out"
}

write_configs() {
  local p=$S/pki
  kubeconfig "$S/kubeconfig" admin "$K8S_NAMESPACE"
  kubeconfig "$S/controller-manager.kubeconfig" controller-manager default
  kubeconfig "$S/scheduler.kubeconfig" scheduler default
  kubeconfig "$S/node.kubeconfig" node default
  mkdir -p "$S/cni/net.d" "$S/containerd"
  cat >"$S/cni/net.d/10-skillscope.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "skillscope",
  "plugins": [{
    "type": "bridge", "bridge": "$K8S_BRIDGE", "isGateway": true, "ipMasq": false,
    "ipam": {"type": "host-local", "dataDir": "$S/cni/ipam",
             "ranges": [[{"subnet": "$K8S_POD_SUBNET", "rangeStart": "10.244.0.10", "gateway": "$K8S_NODE_IP"}]]}
  }]
}
EOF
  local runc
  runc=$(command -v runc || echo "$W/bin/runc")
  cat >"$S/containerd/config.toml" <<EOF
# A private containerd (not Docker's): its own socket, root, state and runc root.
version = 2
root = "$S/containerd/root"
state = "$S/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "$K8S_SOCK"
[ttrpc]
  address = "$K8S_SOCK.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$S/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$K8S_PAUSE_IMAGE"
  # Root here lacks CAP_SYS_RESOURCE: a negative oom_score_adj for the pause process is refused.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$runc"
        Root = "$S/containerd/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$W/cni"
    conf_dir = "$S/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."$K8S_REGISTRY"]
    endpoint = ["http://$K8S_REGISTRY"]
EOF
  cat >"$S/registry.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $S/registry
  delete:
    enabled: true
http:
  addr: $K8S_REGISTRY
EOF
  mkdir -p "$S/kubelet"
  cat >"$S/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $K8S_NODE_IP
port: $K8S_KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $K8S_KUBELET_HEALTHZ_PORT
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $p/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $p/kubelet.crt
tlsPrivateKeyFile: $p/kubelet.key
cgroupDriver: cgroupfs
cgroupRoot: /$K8S_CGROUP
failSwapOn: false
# No iptables chains of the kubelet's own (KUBE-MARK-*, KUBE-FIREWALL).
makeIPTablesUtilChains: false
hairpinMode: none
resolvConf: /etc/resolv.conf
volumePluginDir: $S/kubelet/volume-plugins
serializeImagePulls: false
# The node sits on the machine's own disk: relaxed thresholds so a busy host does not evict.
evictionHard: {memory.available: "100Mi", nodefs.available: "2%", imagefs.available: "2%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
}

start_cluster() {
  k8s_log "starting etcd"
  start_daemon etcd "$W/bin/etcd" --name default --data-dir "$S/etcd" \
    --listen-client-urls "http://127.0.0.1:$K8S_ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$K8S_ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$K8S_ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$K8S_ETCD_PEER_PORT" \
    --initial-cluster "default=http://127.0.0.1:$K8S_ETCD_PEER_PORT" --log-level warn

  k8s_log "starting containerd (private: $K8S_SOCK)"
  local ctrd
  ctrd=$(command -v containerd || echo "$W/bin/containerd")
  start_daemon containerd "$ctrd" --config "$S/containerd/config.toml"
  k8s_log "starting the registry on $K8S_REGISTRY"
  start_daemon registry "$W/bin/docker-registry" serve "$S/registry.yml"

  wait_for etcd 30 curl -fsS "http://127.0.0.1:$K8S_ETCD_PORT/health"
  wait_for containerd 30 test -S "$K8S_SOCK"
  wait_for registry 30 curl -fsS "http://$K8S_REGISTRY/v2/"
  local ctr
  ctr=$(command -v ctr || echo "$W/bin/ctr")
  "$ctr" --address "$K8S_SOCK" -n k8s.io images import "$W/images/pause.tar" >/dev/null

  k8s_log "starting kube-apiserver on 127.0.0.1:$K8S_APISERVER_PORT"
  local p=$S/pki
  start_daemon kube-apiserver "$W/bin/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$K8S_ETCD_PORT" \
    --bind-address 127.0.0.1 --secure-port "$K8S_APISERVER_PORT" --insecure-port 0 \
    --advertise-address "$K8S_NODE_IP" --service-cluster-ip-range 10.96.0.0/24 \
    --client-ca-file "$p/ca.crt" --tls-cert-file "$p/apiserver.crt" --tls-private-key-file "$p/apiserver.key" \
    --kubelet-client-certificate "$p/apiserver-kubelet-client.crt" --kubelet-client-key "$p/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$p/ca.crt" --kubelet-preferred-address-types InternalIP \
    --service-account-key-file "$p/sa.pub" --service-account-signing-key-file "$p/sa.key" \
    --service-account-issuer https://kubernetes.default.svc \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --profiling=false --cert-dir "$S/apiserver-certs" --v 1
  wait_for kube-apiserver 180 curl -fsS --cacert "$p/ca.crt" --cert "$p/admin.crt" --key "$p/admin.key" \
    "https://127.0.0.1:$K8S_APISERVER_PORT/readyz"
  k8s_log "kube-apiserver is ready"

  start_daemon kube-controller-manager "$W/bin/kube-controller-manager" \
    --kubeconfig "$S/controller-manager.kubeconfig" --port 0 --secure-port 0 --leader-elect=false \
    --service-account-private-key-file "$p/sa.key" --root-ca-file "$p/ca.crt" --use-service-account-credentials \
    --controllers '*,-nodeipam,-cloud-node-lifecycle,-service,-route' --v 1
  start_daemon kube-scheduler "$W/bin/kube-scheduler" \
    --kubeconfig "$S/scheduler.kubeconfig" --port 0 --secure-port 0 --leader-elect=false --v 1

  k8s_log "starting the kubelet (node $K8S_NODE_NAME at $K8S_NODE_IP)"
  # The in-tree cloud code must not reach for instance metadata (a second guard: the AWS
  # credential provider is already left out of the build).
  AWS_EC2_METADATA_DISABLED=true start_daemon kubelet "$W/bin/kubelet" \
    --config "$S/kubelet/config.yaml" --kubeconfig "$S/node.kubeconfig" \
    --container-runtime remote --container-runtime-endpoint "unix://$K8S_SOCK" --image-service-endpoint "unix://$K8S_SOCK" \
    --root-dir "$S/kubelet" --cert-dir "$S/kubelet/pki" --node-ip "$K8S_NODE_IP" --hostname-override "$K8S_NODE_NAME" \
    --pod-infra-container-image "$K8S_PAUSE_IMAGE" --docker "unix://$S/no-docker.sock" --containerd "$K8S_SOCK" \
    --v 1
  wait_for kubelet 180 sh -c "'$W/bin/kubectl' --kubeconfig '$S/kubeconfig' get node '$K8S_NODE_NAME' \
    -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
  k8s_log "node $K8S_NODE_NAME is Ready"
  k8s_kubectl create namespace "$K8S_NAMESPACE" >/dev/null
  wait_for kube-controller-manager 60 k8s_kubectl -n "$K8S_NAMESPACE" get serviceaccount default
}

cleanup_on_failure() {
  local rc=$?
  if [ "$rc" -ne 0 ] && [ "$build_only" = false ]; then
    k8s_log "start failed (exit $rc): stopping what was started"
    SKILLSCOPE_K8S_LOCKED=1 "$here/k8s-down.sh" >&2 || true
  fi
}

build
if [ "$build_only" = true ]; then
  exit 0
fi
# A cluster left running (or half-started by a killed run) goes first: state is fresh each start.
SKILLSCOPE_K8S_LOCKED=1 "$here/k8s-down.sh" >&2
trap cleanup_on_failure EXIT
check_host
rm -rf "$S"
mkdir -p "$S" "$K8S_PIDS" "$K8S_UNDO" "$K8S_LOGS"
rm -f "$K8S_LOGS"/*.log
host_changes
make_pki
write_configs
start_cluster
trap - EXIT
k8s_log "cluster up in $(( $(date +%s) - K8S_T0 ))s; state $(du -sh "$S" 2>/dev/null | cut -f1), cache $(du -sh "$W" 2>/dev/null | cut -f1)"
echo "export KUBECONFIG=$S/kubeconfig"
echo "export SKILLSCOPE_REGISTRY=$K8S_REGISTRY"
