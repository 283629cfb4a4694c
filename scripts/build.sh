#!/usr/bin/env bash
# Builds bin/glassbox (the collector distribution) with the pinned builder,
# and bin/glassbox-api (the standalone API server).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
builder=$(ensure_builder)
"$builder" --config builder-config.yaml --skip-compilation >/dev/null 2>"_build.log" || { cat _build.log >&2; exit 1; }
rm -f _build.log
(cd _build && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o ../bin/glassbox .)
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o bin/glassbox-api ./cmd/glassbox-api
echo "built bin/glassbox and bin/glassbox-api"
