#!/usr/bin/env bash
# The scale-out topology test (test/topology): installs what is missing from
# Debian's packages (ZooKeeper, ClickHouse, nginx, PostgreSQL), starts
# PostgreSQL for the control plane under a temporary directory, builds the
# binaries unless GLASSBOX_BIN and GLASSBOX_API_BIN name them, and runs the
# Go test, which starts ZooKeeper, ClickHouse 2 shards x 2 replicas, two
# writers, two gateways, two API servers and nginx on free ports there,
# sends load through nginx, injects faults and prints its figures.
# Everything it started is stopped on exit.
#
# env: GLASSBOX_TOPOLOGY_REPLICA_DOWN (default 60s) how long a ClickHouse
# replica stays stopped; GLASSBOX_TOPOLOGY_PHASE (default 10s) load per phase;
# GLASSBOX_TOPOLOGY_KEEP=1 keeps the directory (logs) after the run.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

echo "== topology: packages"
ensure_debian_packages /usr/share/java/zookeeper.jar zookeeper
ensure_debian_packages /usr/sbin/clickhouse-server clickhouse-server clickhouse-client
ensure_debian_packages /usr/sbin/nginx nginx-light

work=$(mktemp -d "${TMPDIR:-/tmp}/glassbox-topology.XXXXXX")
# PostgreSQL runs as its own OS user when started as root; it must reach its directory.
chmod 755 "$work"
cleanup() {
  local f pid
  # Whatever the test left running: only pids it recorded whose command
  # line (servers, nginx's title) or environment (the collectors, which the
  # test passes the directory to) names this run's directory.
  for f in "$work"/run/pids/*.pid; do
    [ -f "$f" ] || continue
    pid=$(<"$f")
    [[ $pid =~ ^[0-9]+$ ]] || continue
    if tr "\0" " " 2>/dev/null <"/proc/$pid/cmdline" | grep -qF "$work/" ||
      tr "\0" "\n" 2>/dev/null <"/proc/$pid/environ" | grep -qxF "GLASSBOX_TOPOLOGY_DIR=$work/run"; then
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  ./scripts/postgres.sh stop "$work/postgres" >/dev/null 2>&1 || true
  if [ "${GLASSBOX_TOPOLOGY_KEEP:-}" = 1 ]; then
    echo "topology: kept $work"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== topology: control plane"
pg_port=$(free_port)
pg_dsn=$(./scripts/postgres.sh start "$work/postgres" "$pg_port" | tail -n 1)

if [ -z "${GLASSBOX_BIN:-}" ] || [ -z "${GLASSBOX_API_BIN:-}" ]; then
  echo "== topology: build"
  ./scripts/build.sh
  export GLASSBOX_BIN=$PWD/bin/glassbox GLASSBOX_API_BIN=$PWD/bin/glassbox-api
fi

echo "== topology: test"
mkdir -p "$work/run"
GLASSBOX_TOPOLOGY=1 GLASSBOX_TOPOLOGY_DIR="$work/run" GLASSBOX_TOPOLOGY_POSTGRES_DSN="$pg_dsn" \
  go test -count=1 -v -timeout 9m -run TestTopology ./test/topology/
