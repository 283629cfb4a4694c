#!/usr/bin/env bash
# Fails when any OpenTelemetry Collector module drifts off the pinned train,
# in the root module or in the generated distribution under _build.
set -euo pipefail
cd "$(dirname "$0")/.."
stable=v1.67.0
beta=v0.161.0
status=0
check() {
  local dir=$1
  [ -f "$dir/go.mod" ] || return 0
  while read -r mod ver; do
    case "$ver" in
      "$stable"|"$beta") ;;
      *) echo "$dir: $mod is at $ver (want $stable or $beta)"; status=1 ;;
    esac
  done < <(cd "$dir" && go list -m -f '{{.Path}} {{.Version}}' all 2>/dev/null | grep '^go.opentelemetry.io/collector[/ ]' || true)
}
check .
check _build
if [ $status -eq 0 ]; then echo "collector modules pinned at $stable / $beta"; fi
exit $status
