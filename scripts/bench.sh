#!/usr/bin/env bash
# `make bench`: measures, in one run on this machine,
#  1. OTLP/HTTP protobuf ingestion into ClickHouse, per span mix (agent,
#     generation): a stock pass-through pipeline (otlp receiver -> nop, same
#     binary), today's pipeline (the binary and configs/all-in-one.yaml of
#     BENCH_BASELINE_REV, built here) and the new one (this tree's bin/glassbox
#     and configs/all-in-one.yaml): spans/s acknowledged and stored, CPU per
#     span of the collector and of ClickHouse, peak RSS, ack latency; beside
#     them the ClickHouse CPU of a Native bulk insert of the same rows (the
#     floor), the ack latency of the new pipeline at half its throughput, its
#     peak RSS through a ClickHouse outage under load, and a PASS/FAIL line per
#     target of the ingest-efficiency issue; a CPU profile says where the time
#     goes;
#  2. trace list and single-trace read latency with 1M observations loaded,
#     and the dashboards' metrics queries with 10M;
#  3. the web UI with 1M observations: the traces page and a trace page
#     rendered server-side, a 10,000-observation trace opened in Chromium,
#     and the JS+CSS each page ships.
# Figures are printed as Markdown; docs/benchmarks.md keeps the recorded ones.
#
# env: BENCH_DURATION (20s) of each load, BENCH_WORKERS (8), BENCH_BATCH (200 spans a request),
#      BENCH_OUTAGE (60s) ClickHouse stays down under load, BENCH_BASELINE_REV (aaab77e) today's pipeline,
#      BENCH_SKIP_INGEST=1, BENCH_SKIP_READ=1 (skips reads, metrics and UI),
#      BENCH_RESULTS=FILE keeps the ingestion runs' raw results (JSON lines)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

duration=${BENCH_DURATION:-20s}
workers=${BENCH_WORKERS:-8}
batch=${BENCH_BATCH:-200}
outage=${BENCH_OUTAGE:-60s}
baseline_rev=${BENCH_BASELINE_REV:-aaab77e}
work=$(mktemp -d "${TMPDIR:-/tmp}/glassbox-bench.XXXXXX")
pid=""
load_pid=""
cleanup() {
  [ -n "$load_pid" ] && kill "$load_pid" 2>/dev/null && wait "$load_pid" 2>/dev/null
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  ./scripts/clickhouse.sh stop "$work/clickhouse" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

ch_tcp=$(free_port); ch_http=$(free_port)
ch_dsn=$(./scripts/clickhouse.sh start "$work/clickhouse" "$ch_tcp" "$ch_http" | tail -n 1)
./scripts/build.sh >/dev/null
go build -o "$work/loadgen" ./test/loadgen

if [ "${BENCH_SKIP_INGEST:-}" != 1 ]; then

# Today's pipeline: the tree of BENCH_BASELINE_REV, built as scripts/build.sh
# builds the collector (the Go build cache makes this cheap after the first time).
baseline_commit=$(git rev-parse --verify --short "$baseline_rev^{commit}")
mkdir -p "$work/baseline"
git archive "$baseline_commit" | tar -x -C "$work/baseline"
(cd "$work/baseline" && "$(ensure_builder)" --config builder-config.yaml --skip-compilation >"$work/baseline-build.log" 2>&1 &&
  cd _build && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o ../bin/glassbox .) ||
  { cat "$work/baseline-build.log" >&2; exit 1; }

pk=pk-lf-bench-0123456789abcdef
sk=sk-lf-bench-0123456789abcdef-0123456789a
port=$(free_port)
# Every pipeline gets the same environment.
export GLASSBOX_LISTEN=127.0.0.1:$port
export GLASSBOX_HEALTH_LISTEN=127.0.0.1:$(free_port)
export GLASSBOX_METRICS_PORT=$(free_port)
export GLASSBOX_PPROF_LISTEN=127.0.0.1:$(free_port)
export GLASSBOX_PPROF_ENDPOINT=$GLASSBOX_PPROF_LISTEN
export GLASSBOX_CLICKHOUSE_DSN=$ch_dsn
export GLASSBOX_INIT_ORG_ID=bench GLASSBOX_INIT_PROJECT_ID=bench GLASSBOX_INIT_PUBLIC_KEY=$pk GLASSBOX_INIT_SECRET_KEY=$sk

ch() { clickhouse-client --port "$ch_tcp" "$@"; }
ch_pid() { cat "$work/clickhouse/server.pid"; }

# start_collector BIN CONFIG [ARGS...]: runs a collector in the background until stop_collector.
start_collector() {
  local bin=$1
  shift
  "$bin" --config "$@" >"$work/collector.log" 2>&1 &
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

# pipeline NAME [DATABASE] starts the named pipeline; the all-in-one ones on a
# fresh data directory writing to DATABASE.
pipeline() {
  case $1 in
    pass-through) start_collector ./bin/glassbox configs/bench-passthrough.yaml; return ;;
    today) bin=$work/baseline/bin/glassbox config=$work/baseline/configs/all-in-one.yaml ;;
    new) bin=./bin/glassbox config=configs/all-in-one.yaml ;;
  esac
  export GLASSBOX_DATA_DIR=$work/data-$2
  export GLASSBOX_CONTROL_PLANE_DSN=sqlite://$GLASSBOX_DATA_DIR/glassbox.db
  export GLASSBOX_CLICKHOUSE_DATABASE=$2
  start_collector "$bin" "$config"
}

# settle_merges waits until ClickHouse runs no merge (three looks in a row),
# so that one measurement does not pay for the merges of the one before.
settle_merges() {
  local quiet=0
  for _ in $(seq 1 3000); do
    if [ "$(ch -q 'SELECT count() FROM system.merges')" = 0 ]; then
      quiet=$((quiet + 1))
      [ "$quiet" -ge 3 ] && return 0
    else
      quiet=0
    fi
    sleep 0.2
  done
  echo "merges still running after 10 minutes" >&2
  return 1
}

# cpu_seconds PID prints the CPU time (user + system) PID has used so far.
cpu_seconds() {
  awk -v hz="$(getconf CLK_TCK)" '{sub(/.*\) /, ""); printf "%.2f", ($12 + $13) / hz}' "/proc/$1/stat"
}

# record RUN RSS [KEY=NUMBER...] appends the last load result, named RUN, to the results.
record() {
  node -e 'const r=JSON.parse(process.argv[1]); r.mix=process.argv[2]; r.run=process.argv[3]; r.rss_mib=+process.argv[4];
    for (const kv of process.argv.slice(5)) { const [k, v] = kv.split("="); r[k] = +v; }
    console.log(JSON.stringify(r))' \
    "$(cat "$work/out.json")" "$mix" "$@" >>"$results"
}

# stored_bytes DATABASE prints disk_bytes=, uncompressed_bytes= and rows= of
# the database after merging its tables; the bytes cover every table of the
# database (the indexes too), the rows those of observations.
stored_bytes() {
  for t in $(ch -q "SELECT name FROM system.tables WHERE database = '$1' AND engine LIKE '%MergeTree'"); do
    ch -q "OPTIMIZE TABLE $1.$t FINAL" || true
  done
  ch -q "SELECT sum(data_compressed_bytes + marks_bytes), sum(data_uncompressed_bytes), sumIf(rows, table = 'observations')
      FROM system.parts WHERE active AND database = '$1' FORMAT TSV" |
    awk '{printf "disk_bytes=%s uncompressed_bytes=%s rows=%s", $1, $2, $3}'
}

# load [ARGS...] runs the load generator with the current mix, watching the collector's CPU.
load() {
  "$work/loadgen" -url "http://$GLASSBOX_LISTEN/api/public/otel/v1/traces" -user "$pk" -pass "$sk" -mix "$mix" \
    -duration "$duration" -workers "$workers" -batch "$batch" -collector-pid "$pid" "$@" >"$work/out.json"
}

# stored_load DATABASE [ARGS...] loads and waits until every acknowledged span
# is stored in DATABASE, watching ClickHouse's CPU too.
stored_load() {
  local db=$1
  shift
  load -clickhouse-dsn "$ch_dsn" -clickhouse-database "$db" -project bench -clickhouse-pid "$(ch_pid)" "$@"
}

# seconds DURATION prints a Go-style duration of whole seconds or minutes (20s, 2m) in seconds.
seconds() {
  node -e 'const m = /^(\d+)(s|m)$/.exec(process.argv[1]); if (!m) process.exit(1); console.log(+m[1] * (m[2] === "m" ? 60 : 1))' "$1" ||
    { echo "durations are like 20s or 2m, not $1" >&2; return 2; }
}
results=$work/results.jsonl
outage_s=$(seconds "$outage")
profile_s=$(seconds "$duration")
profile_s=$((profile_s < 10 ? profile_s : 10))
for mix in agent generation; do
  pipeline pass-through
  load
  record pass-through "$(stop_collector)"

  for p in today new; do
    settle_merges
    pipeline "$p" "bench_${mix}_$p"
    stored_load "bench_${mix}_$p"
    rss=$(stop_collector)
    # shellcheck disable=SC2046 # KEY=NUMBER words, split on purpose
    record "$p" "$rss" $(stored_bytes "bench_${mix}_$p")
  done
  acked=$(node -e 'console.log(Math.round(JSON.parse(process.argv[1]).spans_per_second))' "$(tail -n 1 "$results")")

  # Acknowledgement latency at half the new pipeline's throughput; the CPU
  # profile of the agent mix is taken here, so that it does not weigh on the
  # figures above.
  settle_merges
  pipeline new "bench_${mix}_half"
  if [ "$mix" = agent ]; then
    curl -s -o "$work/cpu-agent.prof" "http://$GLASSBOX_PPROF_LISTEN/debug/pprof/profile?seconds=$profile_s" &
    prof_pid=$!
  fi
  stored_load "bench_${mix}_half" -rate $((acked / 2))
  if [ "$mix" = agent ]; then wait "$prof_pid"; fi
  record half "$(stop_collector)"

  # The floor: ClickHouse's CPU for one bulk insert, in Native format, of the
  # rows the new pipeline stored into the same table (its schema created by
  # the new collector in a fresh database), until its merges settle.
  ch -q "SELECT * FROM bench_${mix}_new.observations FORMAT Native" >"$work/rows.native"
  rows=$(ch -q "SELECT count() FROM bench_${mix}_new.observations")
  pipeline new "bench_${mix}_floor"
  for _ in $(seq 1 300); do
    [ "$(ch -q "EXISTS TABLE bench_${mix}_floor.observations")" = 1 ] && break
    sleep 0.1
  done
  stop_collector >/dev/null
  settle_merges
  h0=$(cpu_seconds "$(ch_pid)")
  ch -q "INSERT INTO bench_${mix}_floor.observations FORMAT Native" <"$work/rows.native"
  settle_merges
  h1=$(cpu_seconds "$(ch_pid)")
  rm -f "$work/rows.native"
  echo '{}' >"$work/out.json"
  record floor 0 "rows=$rows" "clickhouse_cpu_merged_s=$(awk -v a="$h0" -v b="$h1" 'BEGIN { print b - a }')"

  # A ClickHouse outage under load: the server is stopped for BENCH_OUTAGE
  # while the load goes on at full speed, then started again; the load goes on
  # 10 s more and the run ends when every acknowledged span is stored.
  settle_merges
  pipeline new "bench_${mix}_outage"
  "$work/loadgen" -url "http://$GLASSBOX_LISTEN/api/public/otel/v1/traces" -user "$pk" -pass "$sk" -mix "$mix" \
    -duration 1h -workers "$workers" -batch "$batch" -collector-pid "$pid" -store-timeout 15m \
    -clickhouse-dsn "$ch_dsn" -clickhouse-database "bench_${mix}_outage" -project bench \
    -ready-file "$work/sending-$mix" >"$work/out.json" &
  load_pid=$!
  until [ -e "$work/sending-$mix" ]; do
    kill -0 "$load_pid" || { echo "the load generator did not start" >&2; exit 1; }
    sleep 0.1
  done
  sleep 5
  ./scripts/clickhouse.sh stop "$work/clickhouse"
  sleep "$outage_s"
  ./scripts/clickhouse.sh start "$work/clickhouse" "$ch_tcp" "$ch_http" >/dev/null
  sleep 10
  kill -TERM "$load_pid"
  wait "$load_pid" || true # a failed wait is reported as lost spans
  load_pid=""
  record outage "$(stop_collector)" "outage_s=$outage_s"
done

echo "## Ingestion ($(date -u +%Y-%m-%d), $(nproc) cores, $(awk -F: '/model name/ {print $2; exit}' /proc/cpuinfo | sed 's/^ *//'), duration $duration, $workers workers, $batch spans/request)"
node - "$results" "$baseline_commit" "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!docs' || echo +changes)" <<'JS'
const [file, baseRev, newRev] = process.argv.slice(2);
const rows = require("fs").readFileSync(file, "utf8").trim().split("\n").map(JSON.parse);
const get = (mix, run) => rows.find((r) => r.mix === mix && r.run === run);
const round = (x) => (x === undefined || Number.isNaN(x) ? "–" : Math.round(x).toLocaleString("en-US"));
const fix1 = (x) => (x === undefined || Number.isNaN(x) ? "–" : x.toFixed(1));
const us = (s, n) => (s && n ? (s * 1e6) / n : undefined);
const targets = { agent: { cpu: 2, stored: 60000 }, generation: { cpu: 3, stored: 15000 } };
const verdict = (ok) => (ok ? "**PASS**" : "**FAIL**");
const names = { "pass-through": "pass-through (otlp → nop)", today: `today's pipeline (${baseRev})`, new: `new pipeline (${newRev})` };
for (const mix of ["agent", "generation"]) {
  const p = get(mix, "pass-through"), floor = get(mix, "floor"), half = get(mix, "half"), out = get(mix, "outage");
  if (!p) continue;
  const floorUs = us(floor.clickhouse_cpu_merged_s, floor.rows);
  console.log(`\n### ${mix} mix (${p.bytes_per_span} bytes/span; payload text gzips ${p.text_gzip_ratio.toFixed(1)}×; load generator ${p.loadgen_cpu_us_per_span.toFixed(1)} µs CPU/span)\n`);
  console.log("| pipeline | spans/s acknowledged | spans/s stored | collector CPU µs/span | ClickHouse CPU µs/span, until stored | ClickHouse CPU µs/span, merges settled | peak RSS MiB | ack p50 ms | ack p99 ms | failed requests |");
  console.log("|---|---|---|---|---|---|---|---|---|---|");
  for (const run of ["pass-through", "today", "new"]) {
    const r = get(mix, run);
    const n = r.stored_spans || r.spans;
    console.log(`| ${names[run]} | ${round(r.spans_per_second)} | ${round(r.stored_spans_per_second)} | ${fix1(us(r.collector_cpu_s, n))} | ${fix1(us(r.clickhouse_cpu_s, n))} | ${fix1(us(r.clickhouse_cpu_merged_s, n))} | ${r.rss_mib} | ${fix1(r.ack_p50_ms)} | ${fix1(r.ack_p99_ms)} | ${r.failed} |`);
  }
  console.log(`| bulk-insert floor (Native, same ${round(floor.rows)} rows) | | | | | ${fix1(floorUs)} | | | | |`);
  console.log("");
  const ratios = {};
  for (const run of ["today", "new"]) {
    const r = get(mix, run);
    ratios[run] = {
      cpu: us(r.collector_cpu_s, r.stored_spans) / us(p.collector_cpu_s, p.spans),
      ch: us(r.clickhouse_cpu_merged_s, r.stored_spans) / floorUs,
    };
  }
  const n = get(mix, "new"), t = targets[mix];
  console.log(`- collector CPU ÷ pass-through's: today ${ratios.today.cpu.toFixed(2)}×, new ${ratios.new.cpu.toFixed(2)}× (target ≤ ${t.cpu}×): ${verdict(ratios.new.cpu <= t.cpu)}`);
  console.log(`- ClickHouse CPU (merges settled) ÷ bulk-insert floor: today ${ratios.today.ch.toFixed(2)}×, new ${ratios.new.ch.toFixed(2)}× (target ≤ 1.5×): ${verdict(ratios.new.ch <= 1.5)}`);
  console.log(`- stored spans/s: today ${round(get(mix, "today").stored_spans_per_second)}, new ${round(n.stored_spans_per_second)} (target ≥ ${round(t.stored)}): ${verdict(n.stored_spans_per_second >= t.stored)}`);
  console.log(`- collector peak RSS under load: today ${get(mix, "today").rss_mib} MiB, new ${n.rss_mib} MiB (target ≤ 300): ${verdict(n.rss_mib <= 300)}`);
  const lost = out.spans - (out.stored_spans || 0);
  console.log(`- collector peak RSS through a ${out.outage_s} s ClickHouse outage under load (new): ${out.rss_mib} MiB (target ≤ 300): ${verdict(out.rss_mib <= 300)}`);
  console.log(`- nothing lost through the outage: ${round(out.spans)} spans acknowledged, ${round(out.stored_spans || 0)} stored${out.error ? ` (${out.error})` : ""}: ${verdict(lost <= 0 && !out.error)}`);
  console.log(`- ack p99 at half the new pipeline's throughput (${round(half.rate_target)} spans/s asked, ${round(half.spans_per_second)} acknowledged): ${fix1(half.ack_p99_ms)} ms (target < 50): ${verdict(half.ack_p99_ms < 50)}`);
}
console.log("");
console.log("CPU is user + system time from /proc, from the first request until every acknowledged span was stored");
console.log("(pass-through: until the last acknowledgement); \"merges settled\" runs on until ClickHouse had no merge left,");
console.log("as the floor does. CPU per span divides by the spans stored (pass-through: acknowledged). Nothing lost through a");
console.log("kill -9 of the collector under load is checked by `make test` (TestKillNineLosesNothing).");
console.log("");
console.log("Per stored span, for sizing (docs/scaling.md): bytes in ClickHouse after merging, every table of the database:");
console.log("");
console.log("| mix | pipeline | bytes on disk/span | uncompressed bytes/span |");
console.log("|---|---|---|---|");
for (const r of rows.filter((r) => r.disk_bytes)) {
  console.log(`| ${r.mix} | ${names[r.run]} | ${round(r.disk_bytes / r.rows)} | ${round(r.uncompressed_bytes / r.rows)} |`);
}
JS

if [ -n "${BENCH_RESULTS:-}" ]; then cp "$results" "$BENCH_RESULTS"; fi

echo
echo "## Where the time goes (new pipeline, agent mix at half its throughput, ${profile_s} s CPU profile)"
(cd _build && go tool pprof -top -cum -nodecount=60 ../bin/glassbox "$work/cpu-agent.prof" 2>/dev/null | grep -E "Duration|glassbox-dev|bbolt.\\(\\*DB\\).Update|UnmarshalProto|clickhouse-go/v2.\\(\\*batch\\).Append|runtime.mallocgc|runtime.gcBgMarkWorker" | head -25) || echo "(no profile)"

fi # BENCH_SKIP_INGEST

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
