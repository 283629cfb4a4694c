#!/usr/bin/env bash
# `make run`: starts ClickHouse with its data under .data/ (unless
# GLASSBOX_CLICKHOUSE_DSN points at one), makes sure a project key pair exists,
# builds the collector and runs the all-in-one deployment in the foreground.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

data=${GLASSBOX_DATA_DIR:-$PWD/.data}
mkdir -p "$data"
export GLASSBOX_DATA_DIR=$data
export GLASSBOX_LISTEN=${GLASSBOX_LISTEN:-127.0.0.1:${GLASSBOX_PORT:-3000}}

# The project and key pair: from the environment, else generated once and kept.
if [ -z "${GLASSBOX_INIT_PUBLIC_KEY:-}" ] || [ -z "${GLASSBOX_INIT_SECRET_KEY:-}" ]; then
  if [ ! -f "$data/init.env" ]; then
    umask 077
    {
      echo "GLASSBOX_INIT_PROJECT_ID=${GLASSBOX_INIT_PROJECT_ID:-$(cat /proc/sys/kernel/random/uuid)}"
      echo "GLASSBOX_INIT_PUBLIC_KEY=pk-lf-$(cat /proc/sys/kernel/random/uuid)"
      echo "GLASSBOX_INIT_SECRET_KEY=sk-lf-$(cat /proc/sys/kernel/random/uuid)"
    } > "$data/init.env"
    echo "generated a project key pair in $data/init.env"
  fi
  set -a; . "$data/init.env"; set +a
fi
# The keys that encrypt LLM connection secrets and key the API key hashes at
# rest: generated once and kept, outside the database.
server_key() { # VAR FILE
  if [ -z "${!1:-}" ]; then
    if [ ! -f "$data/$2" ]; then
      (umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$data/$2")
    fi
    export "$1=$(cat "$data/$2")"
  fi
}
server_key GLASSBOX_ENCRYPTION_KEY encryption.key
server_key GLASSBOX_HASH_KEY hash.key
# The first owner, who signs in to the UI: the password is generated once
# and kept, unless GLASSBOX_INIT_USER_PASSWORD is set.
export GLASSBOX_INIT_USER_EMAIL=${GLASSBOX_INIT_USER_EMAIL:-admin@glassbox.local}
password_note="(from GLASSBOX_INIT_USER_PASSWORD)"
if [ -z "${GLASSBOX_INIT_USER_PASSWORD:-}" ]; then
  password_note="(kept in $data/init-user.env)"
  if [ ! -f "$data/init-user.env" ]; then
    (umask 077; echo "GLASSBOX_INIT_USER_PASSWORD=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')" > "$data/init-user.env")
  fi
  set -a; . "$data/init-user.env"; set +a
fi
export GLASSBOX_INIT_PROJECT_ID=${GLASSBOX_INIT_PROJECT_ID:-default}
export GLASSBOX_INIT_PROJECT_NAME=${GLASSBOX_INIT_PROJECT_NAME:-Default project}
export GLASSBOX_INIT_ORG_ID=${GLASSBOX_INIT_ORG_ID:-default}
export GLASSBOX_INIT_ORG_NAME=${GLASSBOX_INIT_ORG_NAME:-Default organization}
export GLASSBOX_CONTROL_PLANE_DSN=${GLASSBOX_CONTROL_PLANE_DSN:-sqlite://$data/glassbox.db}

if [ -z "${GLASSBOX_CLICKHOUSE_DSN:-}" ]; then
  ch_tcp=${GLASSBOX_CLICKHOUSE_TCP_PORT:-19000}
  ch_http=${GLASSBOX_CLICKHOUSE_HTTP_PORT:-18123}
  ./scripts/clickhouse.sh start "$data/clickhouse" "$ch_tcp" "$ch_http"
  trap './scripts/clickhouse.sh stop "$data/clickhouse"' EXIT
  export GLASSBOX_CLICKHOUSE_DSN="clickhouse://127.0.0.1:$ch_tcp"
fi

./scripts/build.sh

cat <<MSG

Glassbox listens on http://$GLASSBOX_LISTEN

  Open http://$GLASSBOX_LISTEN/ and sign in:
    email:    $GLASSBOX_INIT_USER_EMAIL
    password: $GLASSBOX_INIT_USER_PASSWORD   $password_note

  SDK settings for the project:
  LANGFUSE_BASE_URL=http://$GLASSBOX_LISTEN
  LANGFUSE_PUBLIC_KEY=$GLASSBOX_INIT_PUBLIC_KEY
  LANGFUSE_SECRET_KEY=$GLASSBOX_INIT_SECRET_KEY
  project: $GLASSBOX_INIT_PROJECT_ID

MSG
./bin/glassbox --config configs/all-in-one.yaml
