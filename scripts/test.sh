#!/usr/bin/env bash
# `make test`: starts a private ClickHouse and PostgreSQL on free ports under a
# temporary directory, installs the SDK test packages, builds the binaries,
# replays the ClickHouse schema and queries on ClickHouse 26.7 (chDB), runs
# every Go test (unit, integration, end-to-end with the official Langfuse JS SDK
# and the OTel Go SDK, the UI in Debian's Chromium), then the scale-out
# topology under faults (scripts/topology.sh), then stops the servers.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

work=$(mktemp -d "${TMPDIR:-/tmp}/glassbox-test.XXXXXX")
# PostgreSQL runs as its own OS user when started as root; it must reach its directory.
chmod 755 "$work"
cleanup() {
  ./scripts/clickhouse.sh stop "$work/clickhouse" >/dev/null 2>&1 || true
  ./scripts/postgres.sh stop "$work/postgres" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "== servers"
ch_tcp=$(free_port); ch_http=$(free_port)
ch_dsn=$(./scripts/clickhouse.sh start "$work/clickhouse" "$ch_tcp" "$ch_http" | tail -n 1)
pg_port=$(free_port)
pg_dsn=$(./scripts/postgres.sh start "$work/postgres" "$pg_port" | tail -n 1)
export GLASSBOX_TEST_CLICKHOUSE_DSN=$ch_dsn GLASSBOX_TEST_POSTGRES_DSN=$pg_dsn
echo "clickhouse: $GLASSBOX_TEST_CLICKHOUSE_DSN"
echo "postgres:   $GLASSBOX_TEST_POSTGRES_DSN"
# Lets tests that need a server of their own (outage tests) start one the same way.
export GLASSBOX_CLICKHOUSE_SCRIPT=$PWD/scripts/clickhouse.sh

echo "== browser"
ensure_chromium || echo "chromium could not be installed: browser tests skip (and fail under CI=true)"
chromium --version 2>/dev/null || true

echo "== node packages"
ensure_node_modules test/sdk
ensure_node_modules test/integrations
ensure_node_modules internal/chstore/chdbcheck

echo "== build"
./scripts/build.sh
export GLASSBOX_BIN=$PWD/bin/glassbox
export GLASSBOX_SDK_DIR=$PWD/test/sdk
export GLASSBOX_INTEGRATIONS_DIR=$PWD/test/integrations

echo "== lint"
make --no-print-directory lint
./scripts/check-versions.sh

echo "== schema and queries on ClickHouse 26.7 (chDB)"
GLASSBOX_CHDB_SUITE=$work/chdb-suite.jsonl go test -count=1 -run TestPortableSuite ./internal/chstore/
(cd internal/chstore/chdbcheck && node check.mjs "$work/chdb-suite.jsonl")

echo "== go test"
# The race detector needs cgo, hence a C compiler.
ensure_debian_packages gcc gcc libc6-dev
# Every package runs under the race detector except the browser and
# end-to-end suites, whose concurrency lives in Chromium and in the
# binaries they start.
plain='/apiserver/ui$|/test/'
race_pkgs=$(go list ./... | grep -Ev "$plain")
plain_pkgs=$(go list ./... | grep -E "$plain")
status=0
go test -race -count=1 -timeout 30m $race_pkgs 2>&1 | tee "$work/go-test.log" || status=1
go test -count=1 -timeout 30m $plain_pkgs 2>&1 | tee -a "$work/go-test.log" || status=1

# The scale-out deployment under load and faults (about 5 minutes); it
# starts its own servers, so the ones above are not needed any more.
./scripts/clickhouse.sh stop "$work/clickhouse" >/dev/null 2>&1 || true
GLASSBOX_API_BIN=$PWD/bin/glassbox-api ./scripts/topology.sh || status=1
exit "$status"
