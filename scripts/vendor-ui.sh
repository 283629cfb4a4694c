#!/usr/bin/env bash
# Fetches the UI's third-party JavaScript from npm, checks each package
# tarball against its pinned sha256, and writes the files the UI embeds into
# apiserver/ui/web/static/vendor/ together with their own sha256s (SHA256SUMS,
# checked by the web package's tests). The files are committed: `make build`
# needs no Node. Run it only to change a version, then update the pins here.
set -euo pipefail
cd "$(dirname "$0")/.."

# package@version  sha256 of the npm tarball  files to take from it (dest=src)
pins=(
  "htmx.org@2.0.11 165a2655073e9e6e55e307a7c74e8ebcdb76afb7701f9c16cfd106a13add408e htmx.min.js=dist/htmx.min.js htmx.LICENSE=LICENSE"
  "uplot@1.6.32 4b8a8191e425658e3ea8c8c1314b0fc679c861ee3a1af2b20c7b16ba50b5133d uPlot.iife.min.js=dist/uPlot.iife.min.js uPlot.min.css=dist/uPlot.min.css uPlot.LICENSE=LICENSE"
)

dest=apiserver/ui/web/static/vendor
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$dest"
for pin in "${pins[@]}"; do
  read -r pkg sum files <<<"$pin"
  tgz=$(cd "$work" && npm pack --silent "$pkg" 2>/dev/null | tail -n 1)
  got=$(sha256sum "$work/$tgz" | cut -d' ' -f1)
  if [ "$got" != "$sum" ]; then
    echo "$pkg: tarball sha256 $got, pinned $sum" >&2
    exit 1
  fi
  mkdir -p "$work/${tgz%.tgz}"
  tar xzf "$work/$tgz" -C "$work/${tgz%.tgz}"
  for f in $files; do
    cp "$work/${tgz%.tgz}/package/${f#*=}" "$dest/${f%%=*}"
  done
done
(cd "$dest" && sha256sum $(ls | grep -v '^SHA256SUMS$' | sort) > SHA256SUMS)
echo "vendored into $dest:"
cat "$dest/SHA256SUMS"
