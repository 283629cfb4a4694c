#!/usr/bin/env bash
# Shared helpers for the run/test/bench scripts. Sourced, not executed.

# The Go release that builds, tests and lints Glassbox. It carries the
# standard library's security fixes that govulncheck (make lint) requires;
# the go command fetches it once from the module proxy (golang.org/toolchain)
# whatever Go the machine has. The Makefile sets the same.
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.3}

# free_port prints a TCP port on 127.0.0.1 that nothing listens on. It picks
# from 20000-32767, below the kernel's ephemeral range, so that no outgoing
# connection takes the port before the server binds it (as
# internal/testutil/freeport does for Go tests).
free_port() {
  # A $(free_port) subshell cannot tell the script what it gave, so the
  # ports given are listed in the script's work directory (removed with it):
  # two picks never share a port.
  local port given="${work:?free_port needs the work directory of its script}/free-ports"
  for _ in $(seq 1 200); do
    port=$(( (SRANDOM % 12768) + 20000 ))
    grep -qx "$port" "$given" 2>/dev/null && continue
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port" >>"$given"
      echo "$port"
      return 0
    fi
  done
  echo "no free port found" >&2
  return 1
}

# ensure_builder installs the collector builder at the pinned version.
BUILDER_VERSION=v0.161.0
ensure_builder() {
  local gobin
  gobin=$(go env GOPATH)/bin
  if [ ! -x "$gobin/builder" ] || ! "$gobin/builder" version 2>/dev/null | grep -q "${BUILDER_VERSION#v}"; then
    (cd / && GOFLAGS= go install "go.opentelemetry.io/collector/cmd/builder@$BUILDER_VERSION")
  fi
  echo "$gobin/builder"
}

# ensure_golangci_lint installs the pinned golangci-lint (make lint) when it is
# missing, from the Go module proxy, and prints its path.
GOLANGCI_LINT_VERSION=v2.15.0
ensure_golangci_lint() {
  local gobin
  gobin=$(go env GOPATH)/bin
  # Built with the Go it checks, so that it reads that Go's standard library.
  if [ ! -x "$gobin/golangci-lint" ] || ! "$gobin/golangci-lint" version 2>/dev/null | grep "${GOLANGCI_LINT_VERSION#v}" | grep -q "$(go env GOVERSION)"; then
    (cd / && GOFLAGS= go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION") >&2
  fi
  echo "$gobin/golangci-lint"
}

# ensure_govulncheck installs the pinned govulncheck (make vulncheck) when it
# is missing, from the Go module proxy, and prints its path.
GOVULNCHECK_VERSION=v1.9.0
ensure_govulncheck() {
  local gobin
  gobin=$(go env GOPATH)/bin
  # Built with the Go it checks, like golangci-lint above.
  if [ ! -x "$gobin/govulncheck" ] || ! "$gobin/govulncheck" -version 2>/dev/null | grep -q "govulncheck@${GOVULNCHECK_VERSION}" ||
    [ "$(go version "$gobin/govulncheck" | awk '{print $2}')" != "$(go env GOVERSION)" ]; then
    (cd / && GOFLAGS= go install "golang.org/x/vuln/cmd/govulncheck@$GOVULNCHECK_VERSION") >&2
  fi
  echo "$gobin/govulncheck"
}

# ensure_vulndb builds the Go vulnerability database in govulncheck's format
# from a snapshot of golang.org/x/vulndb, which carries every report as OSV
# JSON (data/osv) and the tool that indexes them (cmd/indexdb); both come
# through the Go module proxy, for machines that cannot reach the database's
# own server. GLASSBOX_VULNDB_VERSION picks the snapshot (default: the
# newest). Prints the database's directory; each snapshot is built once.
ensure_vulndb() {
  local version=${GLASSBOX_VULNDB_VERSION:-latest} src out
  if [ "$version" = latest ]; then
    version=$(cd / && GOFLAGS= go list -m -f '{{.Version}}' golang.org/x/vulndb@latest)
  fi
  out=${XDG_CACHE_HOME:-$HOME/.cache}/glassbox/vulndb/$version
  if [ ! -f "$out/index/db.json" ]; then
    echo "building the vulnerability database from golang.org/x/vulndb@$version" >&2
    src=$(cd / && GOFLAGS= go mod download -json "golang.org/x/vulndb@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    rm -rf "$out.tmp"
    mkdir -p "$(dirname "$out")"
    (cd / && GOFLAGS= go run "golang.org/x/vulndb/cmd/indexdb@$version" -vulns "$src/data/osv" -out "$out.tmp") >&2
    mv "$out.tmp" "$out"
  fi
  echo "$out"
}

# ensure_node_modules DIR installs DIR's locked packages when the lockfile
# changed. `npm install` rather than `npm ci`: chdb's lockfile records only this
# platform's optional native package, which `npm ci` refuses as out of sync.
ensure_node_modules() {
  local dir=$1
  if [ ! -d "$dir/node_modules" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    (cd "$dir" && npm install --no-audit --no-fund --loglevel=error)
  fi
}

# ensure_debian_packages FILE PACKAGE... installs the Debian packages when
# FILE (a program's path, or a name looked up on PATH) is missing.
ensure_debian_packages() {
  local file=$1
  shift
  if [ -e "$file" ] || { [[ $file != */* ]] && command -v "$file" >/dev/null 2>&1; }; then
    return 0
  fi
  echo "installing $* from Debian packages" >&2
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

# ensure_chromium installs Debian's Chromium for the UI's browser tests when
# it is missing.
ensure_chromium() {
  if command -v chromium >/dev/null 2>&1; then
    return 0
  fi
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
}
