#!/usr/bin/env bash
# Stops what up.sh started and deletes its directory.
set -uo pipefail
dir="${PAYHOOKS_HA_DIR:-/tmp/payhooks-ha}"
[ -d "$dir" ] || exit 0
stop() { # pidfile
  [ -f "$1" ] || return 0
  local pid; pid="$(cat "$1")"
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null
}
stop "$dir/haproxy.pid"
# Patroni stops its PostgreSQL on SIGTERM.
stop "$dir/node2.pid"
stop "$dir/node1.pid"
for data in "$dir/node1" "$dir/node2"; do
  [ -f "$data/postmaster.pid" ] && kill -9 "$(head -n1 "$data/postmaster.pid")" 2>/dev/null
done
stop "$dir/etcd.pid"
rm -rf "$dir"
