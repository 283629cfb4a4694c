#!/usr/bin/env bash
# `make vulncheck`: govulncheck over every package. GLASSBOX_VULNDB names the
# database as govulncheck's -db flag takes it (https://vuln.go.dev, or
# file:///path to a copy); unset, the database is built from the
# golang.org/x/vulndb module (scripts/lib.sh ensure_vulndb), since the
# database's own server may not be reachable.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
govulncheck=$(ensure_govulncheck)
db=${GLASSBOX_VULNDB:-}
if [ -z "$db" ]; then
  db="file://$(ensure_vulndb)"
fi
echo "govulncheck $("$govulncheck" -version 2>/dev/null | sed -n 's/^Scanner: //p'), database $db" >&2
exec "$govulncheck" -db "$db" ./...
