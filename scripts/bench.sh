#!/usr/bin/env bash
# `make bench`: measures, in one run on this machine,
#  1. OTLP/HTTP protobuf ingestion into ClickHouse through the shipped
#     all-in-one pipeline (spans/s until every acknowledged span is stored,
#     acknowledgement latency p50/p99, peak RSS) for two span mixes, beside the
#     same load against a stock pass-through pipeline (otlp receiver -> nop) in
#     the same binary, and the ratio between them; a CPU profile of the
#     Glassbox run says where the time goes;
#  2. trace list and single-trace read latency with 1M observations loaded,
#     and the dashboards' metrics queries with 10M;
#  3. the web UI with 1M observations: the traces page and a trace page
#     rendered server-side, a 10,000-observation trace opened in Chromium,
#     and the JS+CSS each page ships.
# Figures are printed as Markdown; docs/benchmarks.md keeps the recorded ones.
#
# env: BENCH_DURATION (20s), BENCH_WORKERS (8), BENCH_BATCH (200), BENCH_SKIP_READ=1
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

duration=${BENCH_DURATION:-20s}
workers=${BENCH_WORKERS:-8}
batch=${BENCH_BATCH:-200}
work=$(mktemp -d "${TMPDIR:-/tmp}/glassbox-bench.XXXXXX")
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  ./scripts/clickhouse.sh stop "$work/clickhouse" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

ch_tcp=$(free_port); ch_http=$(free_port)
ch_dsn=$(./scripts/clickhouse.sh start "$work/clickhouse" "$ch_tcp" "$ch_http" | tail -n 1)
./scripts/build.sh >/dev/null
go build -o "$work/loadgen" ./test/loadgen

pk=pk-lf-bench-0123456789abcdef
sk=sk-lf-bench-0123456789abcdef-0123456789a
port=$(free_port)
export GLASSBOX_LISTEN=127.0.0.1:$port
export GLASSBOX_HEALTH_LISTEN=127.0.0.1:$(free_port)
export GLASSBOX_METRICS_PORT=$(free_port)
export GLASSBOX_PPROF_LISTEN=127.0.0.1:$(free_port)
export GLASSBOX_CLICKHOUSE_DSN=$ch_dsn
export GLASSBOX_INIT_ORG_ID=bench GLASSBOX_INIT_PROJECT_ID=bench GLASSBOX_INIT_PUBLIC_KEY=$pk GLASSBOX_INIT_SECRET_KEY=$sk

# start_collector ARGS...: runs bin/glassbox in the background until stop_collector.
start_collector() {
  ./bin/glassbox "$@" >"$work/collector.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 300); do
    code=$(curl -s -o /dev/null -w '%{http_code}' -u "$pk:$sk" -X POST -H 'Content-Type: application/json' \
      --data '{}' "http://$GLASSBOX_LISTEN/api/public/otel/v1/traces" || true)
    [ "$code" = 200 ] && return 0
    sleep 0.1
  done
  cat "$work/collector.log" >&2
  return 1
}

# stop_collector prints the collector's peak RSS in MiB and stops it.
stop_collector() {
  awk '/VmHWM/ {printf "%.0f", $2/1024}' "/proc/$pid/status"
  kill "$pid"; wait "$pid" 2>/dev/null || true
  pid=""
}

# cpu_seconds PID prints the CPU time (user + system) PID has used so far.
cpu_seconds() {
  awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$1/stat"
}
ch_pid=$(cat "$work/clickhouse/server.pid")
minus() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a - b }'; }

# record PIPELINE RSS [COLLECTOR_CPU_S CLICKHOUSE_CPU_S DISK_BYTES UNCOMPRESSED_BYTES ROWS]
# appends the last load result to the results.
record() {
  node -e 'const r=JSON.parse(process.argv[1]); r.pipeline=process.argv[2]; r.rss_mib=+process.argv[3];
    const [c, h, d, u, n] = process.argv.slice(4).map(Number);
    if (c) { r.collector_cpu_s = c; r.clickhouse_cpu_s = h; r.disk_bytes = d; r.uncompressed_bytes = u; r.rows = n; }
    console.log(JSON.stringify(r))' \
    "$(cat "$work/out.json")" "$@" >>"$results"
}

# stored_bytes DATABASE prints the bytes on disk, the uncompressed bytes and
# the rows of observations, after merging the database's tables; the bytes
# cover every table of the database (the indexes too).
stored_bytes() {
  local q="clickhouse-client --port $ch_tcp -q"
  for t in $($q "SELECT name FROM system.tables WHERE database = '$1' AND engine LIKE '%MergeTree'"); do
    $q "OPTIMIZE TABLE $1.$t FINAL" || true
  done
  $q "SELECT sum(data_compressed_bytes + marks_bytes), sum(data_uncompressed_bytes), sumIf(rows, table = 'observations')
      FROM system.parts WHERE active AND database = '$1' FORMAT TSV"
}

# load [ARGS...] runs the load generator with the current mix.
load() {
  "$work/loadgen" -url "http://$GLASSBOX_LISTEN/api/public/otel/v1/traces" -user "$pk" -pass "$sk" -mix "$mix" \
    -duration "$duration" -workers "$workers" -batch "$batch" "$@" >"$work/out.json"
}

results=$work/results.jsonl
for mix in agent generation; do
  start_collector --config configs/bench-passthrough.yaml
  load
  record pass-through "$(stop_collector)"

  # The shipped all-in-one pipeline, with its persistent queue and, to show
  # what the disk queue costs, with the exporter's queue in memory.
  for queue in disk memory; do
    export GLASSBOX_DATA_DIR=$work/data-$mix-$queue
    export GLASSBOX_CONTROL_PLANE_DSN=sqlite://$GLASSBOX_DATA_DIR/glassbox.db
    export GLASSBOX_CLICKHOUSE_DATABASE=bench_${mix}_$queue
    if [ "$queue" = disk ]; then
      start_collector --config configs/all-in-one.yaml
    else
      start_collector --config configs/all-in-one.yaml --set "exporters::glassbox_clickhouse::sending_queue::storage=null"
    fi
    if [ "$mix" = agent ] && [ "$queue" = disk ]; then
      curl -s -o "$work/cpu-agent.prof" "http://$GLASSBOX_PPROF_LISTEN/debug/pprof/profile?seconds=10" &
      prof_pid=$!
    fi
    c0=$(cpu_seconds "$pid"); h0=$(cpu_seconds "$ch_pid")
    load -clickhouse-dsn "$ch_dsn" -clickhouse-database "$GLASSBOX_CLICKHOUSE_DATABASE" -project bench
    c1=$(cpu_seconds "$pid"); h1=$(cpu_seconds "$ch_pid")
    if [ "$mix" = agent ] && [ "$queue" = disk ]; then wait "$prof_pid"; fi
    rss=$(stop_collector)
    # shellcheck disable=SC2046 # three numbers, split on purpose
    record "glassbox ($queue queue)" "$rss" "$(minus "$c1" "$c0")" "$(minus "$h1" "$h0")" \
      $(stored_bytes "$GLASSBOX_CLICKHOUSE_DATABASE")
  done
done

echo "## Ingestion ($(date -u +%Y-%m-%d), $(nproc) cores, duration $duration, $workers workers, $batch spans/request)"
node - "$results" <<'JS'
const rows = require("fs").readFileSync(process.argv[2], "utf8").trim().split("\n").map(JSON.parse);
console.log("| mix | pipeline | bytes/span | spans/s acknowledged | spans/s stored in ClickHouse | ack p50 ms | ack p99 ms | failed requests | peak RSS MiB |");
console.log("|---|---|---|---|---|---|---|---|---|");
for (const r of rows) {
  const stored = r.stored_spans_per_second ? Math.round(r.stored_spans_per_second) : "-";
  console.log(`| ${r.mix} | ${r.pipeline} | ${r.bytes_per_span} | ${Math.round(r.spans_per_second)} | ${stored} | ${r.ack_p50_ms.toFixed(1)} | ${r.ack_p99_ms.toFixed(1)} | ${r.failed} | ${r.rss_mib} |`);
}
console.log("");
console.log("Per stored span, for sizing (docs/scaling.md): CPU of the collector and of ClickHouse during the load");
console.log("(until every span was stored; the CPU profile's own cost included in the agent disk run), and bytes in ClickHouse after merging:");
console.log("");
console.log("| mix | pipeline | collector CPU µs/span | ClickHouse CPU µs/span | bytes on disk/span | uncompressed bytes/span |");
console.log("|---|---|---|---|---|---|");
for (const r of rows.filter((r) => r.collector_cpu_s)) {
  const us = (s) => Math.round((s * 1e6) / r.stored_spans);
  console.log(`| ${r.mix} | ${r.pipeline} | ${us(r.collector_cpu_s)} | ${us(r.clickhouse_cpu_s)} | ${Math.round(r.disk_bytes / r.rows)} | ${Math.round(r.uncompressed_bytes / r.rows)} |`);
}
console.log("");
for (const mix of ["agent", "generation"]) {
  const p = rows.find((r) => r.mix === mix && r.pipeline === "pass-through");
  for (const g of rows.filter((r) => r.mix === mix && r.pipeline.startsWith("glassbox"))) {
    console.log(`- ${mix}, ${g.pipeline}: stores ${(g.stored_spans_per_second / p.spans_per_second).toFixed(2)}x the pass-through's acknowledged spans/s`);
  }
}
JS

echo
echo "## Where the time goes (Glassbox, agent mix, 10 s CPU profile)"
(cd _build && go tool pprof -top -cum -nodecount=60 ../bin/glassbox "$work/cpu-agent.prof" 2>/dev/null | grep -E "Duration|glassbox-dev|bbolt.\\(\\*DB\\).Update|UnmarshalProto|clickhouse-go/v2.\\(\\*batch\\).Append|runtime.mallocgc|runtime.gcBgMarkWorker" | head -25) || echo "(no profile)"

if [ "${BENCH_SKIP_READ:-}" != 1 ]; then
  echo
  echo "## Reads with 1M observations"
  GLASSBOX_TEST_CLICKHOUSE_DSN=$ch_dsn go test -run XXX -bench BenchmarkRead -benchtime 1x -timeout 30m ./internal/chstore/ 2>&1 | grep -v '^goos\|^goarch\|^pkg\|^cpu'
  echo
  echo "## Metrics with 10M observations"
  GLASSBOX_TEST_CLICKHOUSE_DSN=$ch_dsn GLASSBOX_BENCH_CLICKHOUSE_PID=$(cat "$work/clickhouse/server.pid") \
    go test -run XXX -bench BenchmarkMetrics -benchtime 1x -timeout 60m ./internal/chstore/ 2>&1 | grep -v '^goos\|^goarch\|^pkg\|^cpu'
  echo
  echo "## Web UI with 1M observations"
  ensure_chromium >/dev/null 2>&1 || true
  GLASSBOX_TEST_CLICKHOUSE_DSN=$ch_dsn go test -run XXX -bench BenchmarkPages -benchtime 1x -timeout 30m ./apiserver/ui/ 2>&1 | grep -v '^goos\|^goarch\|^pkg\|^cpu'
fi
