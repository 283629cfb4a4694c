#!/usr/bin/env bash
# A private ClickHouse server for development and tests.
#
#   scripts/clickhouse.sh start DIR TCP_PORT HTTP_PORT   start a server whose config, data and logs
#                                                        live in DIR, on 127.0.0.1 only; print its DSN
#   scripts/clickhouse.sh stop DIR                       stop the server started for DIR
#
# Both commands are idempotent: starting a running server prints its DSN again,
# stopping a stopped one does nothing. Only the pid recorded in DIR is ever signalled.
# The Debian packages are installed when the server binary is missing.
#
# env: CLICKHOUSE_WAIT_SECS (default 60) readiness timeout; CLICKHOUSE_STOP_SECS (default 20)
# grace period before SIGKILL; CLICKHOUSE_TLS_PORT, when set, also serves the native protocol
# over TLS on that port, with the certificate and key in DIR/tls/server.pem and server-key.pem.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() {
  echo "usage: $0 start DIR TCP_PORT HTTP_PORT | stop DIR" >&2
  exit 2
}

say() { echo "clickhouse.sh: $*" >&2; }

find_server() {
  command -v clickhouse-server 2>/dev/null && return 0
  [ -x /usr/sbin/clickhouse-server ] && echo /usr/sbin/clickhouse-server
}

ensure_server() {
  if ! server=$(find_server); then
    ensure_debian_packages /usr/sbin/clickhouse-server clickhouse-server clickhouse-client
    server=$(find_server) || { say "clickhouse-server installed but not found"; exit 1; }
  fi
}

# port_busy PORT succeeds when something accepts connections on 127.0.0.1:PORT.
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# answers_ping PORT succeeds when the HTTP interface on PORT answers /ping with "Ok.".
answers_ping() {
  local reply
  reply=$( (exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
            printf 'GET /ping HTTP/1.0\r\n\r\n' >&3
            timeout 2 cat <&3) 2>/dev/null) || return 1
  [[ $reply == *"Ok."* ]]
}

# alive PID succeeds while PID runs (a zombie waiting for its reaper counts as gone).
alive() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ]
}

# own_pid prints the recorded pid when that process is a server running on our config.
own_pid() {
  local pid
  [ -f "$dir/server.pid" ] || return 1
  pid=$(<"$dir/server.pid")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' '\n' <"/proc/$pid/cmdline" | grep -qxF -- "--config-file=$dir/config.xml" || return 1
  echo "$pid"
}

write_config() {
  local tcp=$1 http=$2 tls=
  mkdir -p "$dir/data" "$dir/tmp" "$dir/user_files" "$dir/format_schemas" "$dir/log"
  if [ -n "${CLICKHOUSE_TLS_PORT:-}" ]; then
    tls="<tcp_port_secure>$CLICKHOUSE_TLS_PORT</tcp_port_secure>
  <openSSL><server>
    <certificateFile>$dir/tls/server.pem</certificateFile><privateKeyFile>$dir/tls/server-key.pem</privateKeyFile>
    <verificationMode>none</verificationMode><loadDefaultCAFile>false</loadDefaultCAFile>
    <disableProtocols>sslv2,sslv3,tlsv1,tlsv1_1</disableProtocols>
  </server></openSSL>"
  fi
  cat >"$dir/config.xml" <<XML
<?xml version="1.0"?>
<!-- Written by scripts/clickhouse.sh on every start. -->
<yandex>
  <logger>
    <level>warning</level>
    <log>$dir/log/server.log</log>
    <errorlog>$dir/log/error.log</errorlog>
    <size>20M</size>
    <count>2</count>
  </logger>
  <listen_host>127.0.0.1</listen_host>
  <tcp_port>$tcp</tcp_port>
  <http_port>$http</http_port>
  $tls
  <path>$dir/data/</path>
  <tmp_path>$dir/tmp/</tmp_path>
  <user_files_path>$dir/user_files/</user_files_path>
  <format_schema_path>$dir/format_schemas/</format_schema_path>
  <users_config>$dir/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
  <mark_cache_size>268435456</mark_cache_size>
  <max_concurrent_queries>100</max_concurrent_queries>
  <max_table_size_to_drop>0</max_table_size_to_drop>
  <max_partition_size_to_drop>0</max_partition_size_to_drop>
</yandex>
XML
  # LowCardinality needs allow_experimental_low_cardinality_type on 18.x. Current
  # servers reject that setting, so it lives in the server profile, not in the app.
  cat >"$dir/users.xml" <<'XML'
<?xml version="1.0"?>
<!-- Written by scripts/clickhouse.sh on every start. -->
<yandex>
  <profiles>
    <default>
      <allow_experimental_low_cardinality_type>1</allow_experimental_low_cardinality_type>
      <max_memory_usage>4000000000</max_memory_usage>
    </default>
  </profiles>
  <users>
    <default>
      <password></password>
      <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
      <profile>default</profile>
      <quota>default</quota>
    </default>
  </users>
  <quotas><default></default></quotas>
</yandex>
XML
}

start() {
  local tcp=$1 http=$2 pid deadline
  [[ $tcp =~ ^[0-9]+$ && $http =~ ^[0-9]+$ && $tcp != "$http" ]] || { say "ports must be two different numbers"; exit 2; }
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd -P)

  if pid=$(own_pid); then
    if [ "$(cat "$dir/ports" 2>/dev/null)" != "$tcp $http" ]; then
      say "server for $dir already runs (pid $pid) on ports $(cat "$dir/ports" 2>/dev/null); stop it first"
      exit 1
    fi
  else
    ensure_server
    for p in "$tcp" "$http"; do
      if port_busy "$p"; then say "port $p is already in use"; exit 1; fi
    done
    write_config "$tcp" "$http"
    echo "$tcp $http" >"$dir/ports"
    : >"$dir/log/error.log"
    # setsid: the server outlives the calling shell and ignores its Ctrl-C.
    setsid "$server" --config-file="$dir/config.xml" </dev/null >>"$dir/log/stdout.log" 2>&1 &
    pid=$!
    echo "$pid" >"$dir/server.pid"
  fi

  deadline=$(( SECONDS + ${CLICKHOUSE_WAIT_SECS:-60} ))
  until answers_ping "$http" && port_busy "$tcp"; do
    if ! alive "$pid"; then
      say "server exited during start-up:"
      tail -n 30 "$dir/log/error.log" "$dir/log/stdout.log" >&2 || true
      rm -f "$dir/server.pid"
      exit 1
    fi
    if (( SECONDS >= deadline )); then
      say "server not ready after ${CLICKHOUSE_WAIT_SECS:-60}s:"
      tail -n 30 "$dir/log/error.log" >&2 || true
      stop
      exit 1
    fi
    sleep 0.1
  done
  echo "clickhouse://127.0.0.1:$tcp"
}

stop() {
  local pid waited=0
  [ -d "$dir" ] || return 0
  dir=$(cd "$dir" && pwd -P)
  if pid=$(own_pid); then
    kill -TERM "$pid" 2>/dev/null || true
    while alive "$pid"; do
      if (( waited >= ${CLICKHOUSE_STOP_SECS:-20} * 10 )); then
        say "pid $pid still running after SIGTERM; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
      fi
      sleep 0.1
      waited=$(( waited + 1 ))
    done
  fi
  rm -f "$dir/server.pid"
}

[ $# -ge 2 ] || usage
cmd=$1
dir=$2
case "$cmd" in
  start)
    [ $# -eq 4 ] || usage
    start "$3" "$4"
    ;;
  stop)
    [ $# -eq 2 ] || usage
    stop
    ;;
  *) usage ;;
esac
