#!/usr/bin/env bash
# A private PostgreSQL server for development and tests.
#
#   scripts/postgres.sh start DIR PORT   initialise DIR if needed, start on 127.0.0.1:PORT,
#                                        create database "glassbox", print its DSN
#   scripts/postgres.sh stop DIR         stop the server whose data lives in DIR
#
# Authentication is trust, so the server listens on 127.0.0.1 only and keeps its
# socket inside DIR. PostgreSQL refuses to run as root; as root the server runs
# as the "postgres" OS user, which owns DIR.
set -euo pipefail

usage() {
  echo "usage: $0 start DIR PORT | stop DIR" >&2
  exit 2
}

# find_bindir prints the directory holding initdb and postgres, newest major first.
find_bindir() {
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/initdb" ] && [ -x "$d/postgres" ] && [ -x "$d/pg_ctl" ]; then
      echo "$d"
      return 0
    fi
  done
  return 1
}

ensure_bindir() {
  if ! bindir=$(find_bindir); then
    echo "installing PostgreSQL from Debian packages" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    bindir=$(find_bindir) || { echo "postgresql installed but initdb not found" >&2; exit 1; }
  fi
}

# as_owner runs a command as the OS user that owns the cluster.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

ensure_owner() {
  [ "$(id -u)" -eq 0 ] || return 0
  if ! id postgres >/dev/null 2>&1; then
    useradd --system --home-dir /nonexistent --shell /usr/sbin/nologin postgres
  fi
  chown postgres: "$dir"
  if ! as_owner test -w "$dir"; then
    echo "$dir is not reachable by the postgres user; choose a directory outside private homes (e.g. under /tmp)" >&2
    exit 1
  fi
}

# running_port prints the port of the server running on $dir/data, if any.
running_port() {
  as_owner "$bindir/pg_ctl" status -D "$dir/data" >/dev/null 2>&1 || return 1
  sed -n 4p "$dir/data/postmaster.pid"
}

start() {
  local port=$1 current
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  ensure_bindir
  ensure_owner
  as_owner mkdir -p "$dir/run"

  if [ ! -f "$dir/data/PG_VERSION" ]; then
    as_owner "$bindir/initdb" -D "$dir/data" --username=postgres --auth=trust \
      --encoding=UTF8 --no-locale >"$dir/initdb.log" 2>&1 ||
      { cat "$dir/initdb.log" >&2; exit 1; }
    printf '%s\n' 'local all all trust' 'host all all 127.0.0.1/32 trust' |
      as_owner tee "$dir/data/pg_hba.conf" >/dev/null
  fi

  if current=$(running_port); then
    if [ "$current" != "$port" ]; then
      echo "server in $dir already runs on port $current, not $port" >&2
      exit 1
    fi
  else
    as_owner "$bindir/pg_ctl" start -D "$dir/data" -w -t 60 -l "$dir/run/postgres.log" \
      -o "-p $port -k $dir/run -c listen_addresses=127.0.0.1" >/dev/null ||
      { tail -n 20 "$dir/run/postgres.log" >&2; exit 1; }
  fi

  local psql=("$bindir/psql" -h 127.0.0.1 -p "$port" -U postgres -X -q -t -A)
  if [ "$("${psql[@]}" -d postgres -c "SELECT 1 FROM pg_database WHERE datname = 'glassbox'")" != 1 ]; then
    "${psql[@]}" -d postgres -c "CREATE DATABASE glassbox"
  fi
  echo "postgres://postgres@127.0.0.1:$port/glassbox?sslmode=disable"
}

stop() {
  [ -d "$dir/data" ] || return 0
  ensure_bindir
  if running_port >/dev/null; then
    as_owner "$bindir/pg_ctl" stop -D "$dir/data" -m fast -w >/dev/null
  fi
}

[ $# -ge 2 ] || usage
cmd=$1
dir=$2
case "$cmd" in
  start)
    [ $# -eq 3 ] || usage
    start "$3"
    ;;
  stop)
    [ $# -eq 2 ] || usage
    stop
    ;;
  *) usage ;;
esac
