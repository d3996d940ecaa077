#!/usr/bin/env bash
# in-network-namespace.sh COMMAND…: runs COMMAND in a network namespace of its own whose loopback
# has an Ethernet's MTU (1,500), as the attack suites and the bench's "under attack" scenario need
# (docs/operations.md, "Connections"): over the host's loopback (MTU 65,536) the kernel
# grows each unread socket's send buffer to 4 MiB, which no real client path gives.
# Inside, 127.0.0.0/8 is this namespace's own loopback: nothing of the host is reachable over TCP
# (start PostgreSQL inside, or reach the host's through its Unix socket). Needs root (or a working
# `unshare --user --map-root-user`), util-linux's unshare and iproute2's ip; fails loudly without.
set -euo pipefail
if [ "$#" -eq 0 ]; then
  echo "usage: $0 COMMAND [ARG…]" >&2
  exit 2
fi
if [ "${ANIMAL_STORE_NETWORK_NAMESPACE:-}" = "mtu1500" ] && ip -o link show lo | grep -q " mtu 1500 "; then
  exec "$@" # already inside one
fi
for program in unshare ip; do
  if ! command -v "$program" >/dev/null; then
    echo "in-network-namespace: '$program' is missing (Debian: apt-get install util-linux iproute2); the attack suites cannot run without a network namespace" >&2
    exit 1
  fi
done
user_namespace=()
[ "$(id -u)" = 0 ] || user_namespace=(--user --map-root-user)
# unshare says why when it cannot make the namespace (not root, no user namespaces) and exits 1.
# shellcheck disable=SC2016 # expanded by the inner shell
exec unshare "${user_namespace[@]}" --net -- bash -c '
  set -e
  ip link set lo mtu 1500 up
  export ANIMAL_STORE_NETWORK_NAMESPACE=mtu1500
  exec "$@"' in-network-namespace "$@"
