#!/usr/bin/env bash
# allreduce_bench across two "nodes" (one rank each): network namespaces with their own
# addresses (198.18.K.1, inside the namespaces only), joined through a router whose nftables
# redirect sends every TCP connection between them through tests/testing/fault_proxy, as
# multi_node_test's bed does. So the gRPC ring, the raw TCP ring and the raw TCP streams all
# cross the same relay (no unix streams: they do not cross hosts). Needs root, ip and nft.
#   bash bench/allreduce_bed.sh [benchmark flags]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --help ]; then sed -n 2,7p "$0" | sed 's/^# \{0,1\}//'; exit 0; fi
[ "$(id -u)" = 0 ] || { echo "allreduce_bed: needs root (network namespaces)" >&2; exit 1; }
command -v nft > /dev/null && command -v ip > /dev/null ||
  { echo "allreduce_bed: needs ip (iproute2) and nft (nftables)" >&2; exit 1; }
bazel build -c opt //bench:allreduce_bench //distributed:uopc_launch //tests/testing:fault_proxy
p=ub$$
dir=$(mktemp -d)
cleanup() {
  for n in ${p}0 ${p}1 ${p}r; do
    ip netns pids $n 2> /dev/null | xargs -r kill -9
    ip netns del $n 2> /dev/null || true
  done
  rm -rf "$dir"
}
trap cleanup EXIT
ip netns add ${p}r
ip -n ${p}r link set lo up
for k in 0 1; do
  ip netns add ${p}$k
  ip -n ${p}$k link set lo up
  ip link add ${p}n$k type veth peer name ${p}r$k
  ip link set ${p}n$k netns ${p}$k
  ip link set ${p}r$k netns ${p}r
  ip -n ${p}$k addr add 198.18.$k.1/24 dev ${p}n$k
  ip -n ${p}$k link set ${p}n$k up
  ip -n ${p}r addr add 198.18.$k.254/24 dev ${p}r$k
  ip -n ${p}r link set ${p}r$k up
  ip -n ${p}$k route add default via 198.18.$k.254
done
ip netns exec ${p}r sysctl -qw net.ipv4.ip_forward=1
printf 'table ip bed {\n chain pre {\n  type nat hook prerouting priority dstnat;\n  ip protocol tcp redirect to :9000\n }\n}\n' |
  ip netns exec ${p}r nft -f -
mkfifo "$dir/control"
ip netns exec ${p}r bazel-bin/tests/testing/fault_proxy --port 9000 --control "$dir/control" \
  > "$dir/proxy.log" 2>&1 &
for _ in $(seq 50); do grep -q "fault_proxy: ready" "$dir/proxy.log" && break; sleep 0.1; done
launch() {
  ip netns exec ${p}$1 env UOPC_JOB_TOKEN=bed bazel-bin/distributed/uopc_launch --nproc 1 \
    --nnodes 2 --node-rank $1 --master-addr 198.18.0.1 --master-port 29500 -- \
    bazel-bin/bench/allreduce_bench "${@:2}"
}
launch 1 "$@" > "$dir/node1.log" 2>&1 &
node1=$!
launch 0 "$@"
wait $node1  # (not the relay, which runs until the cleanup kills it)
