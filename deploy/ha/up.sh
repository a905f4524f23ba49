#!/usr/bin/env bash
# Brings up the reference HA deployment on one machine, for trying it: etcd, two PostgreSQL nodes
# run by Patroni (synchronous replication, automatic failover) and HAProxy leading to the primary.
# Everything lives in $PAYHOOKS_HA_DIR (default /tmp/payhooks-ha); ./down.sh stops it and deletes it.
# Needs Debian's patroni, etcd-server, haproxy and postgresql packages; run as root (PostgreSQL
# and Patroni then run as the postgres user) or as the postgres user.
# Prints the DATABASE_URL that reaches the primary through HAProxy.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${PAYHOOKS_HA_DIR:-/tmp/payhooks-ha}"
etcd_port="${PAYHOOKS_HA_ETCD_PORT:-23790}"
primary_port="${PAYHOOKS_HA_PORT:-5440}"
pg1="${PAYHOOKS_HA_PG1_PORT:-5441}" pg2="${PAYHOOKS_HA_PG2_PORT:-5442}"
rest1="${PAYHOOKS_HA_REST1_PORT:-8108}" rest2="${PAYHOOKS_HA_REST2_PORT:-8109}"

die() { echo "deploy/ha/up.sh: $*" >&2; exit 1; }
for tool in patroni etcd haproxy curl; do command -v "$tool" >/dev/null || die "$tool is missing (apt-get install patroni etcd-server haproxy curl)."; done
bin_dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)"
[ -x "$bin_dir/postgres" ] || die "no PostgreSQL server under /usr/lib/postgresql/<version>/bin (apt-get install postgresql)."
[ -e "$dir/etcd.pid" ] && die "$dir is in use: run ./down.sh first."

as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
# Starts a daemon as postgres in the background; its own pid (not runuser's) goes to $1.
spawn() { local pidfile="$1" log="$2"; shift 2; as_postgres sh -c 'echo $$ > "$0"; exec "$@"' "$pidfile" "$@" >"$log" 2>&1 & }
mkdir -p "$dir"
[ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"
chmod 700 "$dir"

echo "== etcd on 127.0.0.1:$etcd_port"
spawn "$dir/etcd.pid" "$dir/etcd.log" etcd --name payhooks-ha --data-dir "$dir/etcd" \
  --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
  --listen-peer-urls "http://127.0.0.1:$((etcd_port + 10))" --initial-advertise-peer-urls "http://127.0.0.1:$((etcd_port + 10))" \
  --initial-cluster "payhooks-ha=http://127.0.0.1:$((etcd_port + 10))"
for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$etcd_port/health" >/dev/null 2>&1 && break; sleep 0.2; done
curl -fsS "http://127.0.0.1:$etcd_port/health" >/dev/null || die "etcd did not start; see $dir/etcd.log"

node() { # name pg_port rest_port
  sed -e "s|@NAME@|$1|g" -e "s|@PG_PORT@|$2|g" -e "s|@REST_PORT@|$3|g" -e "s|@ETCD_PORT@|$etcd_port|g" \
    -e "s|@DIR@|$dir|g" -e "s|@BIN_DIR@|$bin_dir|g" "$here/patroni.yml.in" >"$dir/$1.yml"
  [ "$(id -u)" = 0 ] && chown postgres:postgres "$dir/$1.yml"
  spawn "$dir/$1.pid" "$dir/$1.log" patroni "$dir/$1.yml"
}
echo "== Patroni node1 (PostgreSQL 127.0.0.1:$pg1, REST $rest1)"
node node1 "$pg1" "$rest1"
for _ in $(seq 1 300); do curl -fsS "http://127.0.0.1:$rest1/primary" >/dev/null 2>&1 && break; sleep 0.2; done
curl -fsS "http://127.0.0.1:$rest1/primary" >/dev/null || die "node1 did not become the primary; see $dir/node1.log"
echo "== Patroni node2 (PostgreSQL 127.0.0.1:$pg2, REST $rest2), a synchronous standby"
node node2 "$pg2" "$rest2"
for _ in $(seq 1 600); do
  curl -fsS "http://127.0.0.1:$rest1/cluster" 2>/dev/null | grep -q '"role": *"sync_standby"' && break
  sleep 0.2
done
curl -fsS "http://127.0.0.1:$rest1/cluster" | grep -q '"role": *"sync_standby"' || die "node2 did not become a synchronous standby; see $dir/node2.log"

echo "== HAProxy on 127.0.0.1:$primary_port (to the primary)"
sed -e "s|@PRIMARY_PORT@|$primary_port|g" -e "s|@PG1_PORT@|$pg1|g" -e "s|@PG2_PORT@|$pg2|g" \
  -e "s|@REST1_PORT@|$rest1|g" -e "s|@REST2_PORT@|$rest2|g" "$here/haproxy.cfg.in" >"$dir/haproxy.cfg"
haproxy -f "$dir/haproxy.cfg" -D -p "$dir/haproxy.pid"
for _ in $(seq 1 100); do psql -h 127.0.0.1 -p "$primary_port" -U postgres -d postgres -Atc 'select 1' >/dev/null 2>&1 && break; sleep 0.2; done
psql -h 127.0.0.1 -p "$primary_port" -U postgres -d postgres -Atc "SELECT 1" >/dev/null || die "HAProxy does not reach the primary"
psql -h 127.0.0.1 -p "$primary_port" -U postgres -d postgres -qc "CREATE DATABASE payhooks" 2>/dev/null || true

echo
echo "Ready. DATABASE_URL=postgres://postgres@127.0.0.1:$primary_port/payhooks"
echo "Cluster: curl -s http://127.0.0.1:$rest1/cluster ; switch over: curl -s -XPOST http://127.0.0.1:$rest1/switchover -d '{\"leader\":\"<current>\"}'"
echo "Stop and delete: $here/down.sh"
