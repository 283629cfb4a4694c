#!/usr/bin/env bash
# Builds bin/glassbox (the collector distribution) with the pinned builder,
# and bin/glassbox-api (the standalone API server).
# The builder generates the distribution's main package under _build; module
# resolution and compilation run here so that `go mod tidy -e` tolerates test-only
# modules the proxy does not serve.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
builder=$(ensure_builder)
"$builder" --config builder-config.yaml --skip-get-modules --skip-compilation >/dev/null
(
  cd _build
  go mod tidy -e -compat=1.25 >/dev/null 2>&1 || go mod tidy -e -compat=1.25
  CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o ../bin/glassbox .
)
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o bin/glassbox-api ./cmd/glassbox-api
echo "built bin/glassbox and bin/glassbox-api"
