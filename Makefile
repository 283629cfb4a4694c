# Glassbox: `make run` starts the product, `make test` runs every test.
# Both install what is missing and start the servers they need themselves.

GO ?= go
# The Go release of every target (scripts/lib.sh says why); fetched once.
export GOTOOLCHAIN ?= go1.27.3
PKGS := ./...

.PHONY: all build build-api run test test-unit test-topology bench lint vulncheck fmt check-versions clean

all: build

## build: the collector distribution (bin/glassbox) and the API server (bin/glassbox-api)
build:
	./scripts/build.sh

## run: ClickHouse under .data/ and the all-in-one collector on 127.0.0.1:3000
run:
	./scripts/run.sh

## test: unit, integration and SDK tests against real ClickHouse and PostgreSQL
test:
	./scripts/test.sh

## test-topology: the scale-out deployment (ZooKeeper, ClickHouse 2x2, gateways, writers, API servers, nginx) under load and faults
test-topology:
	./scripts/topology.sh

## test-unit: only the Go tests, against servers the caller already started
test-unit:
	$(GO) test -race -count=1 $(PKGS)

## bench: ingestion and read benchmarks; figures go to docs/benchmarks.md
bench:
	./scripts/bench.sh

## lint: gofmt, go vet, golangci-lint (.golangci.yml: errorlint, gosec, staticcheck, unused, ineffassign) and govulncheck
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	@lint=$$(. scripts/lib.sh && ensure_golangci_lint) && $$lint run ./...
	./scripts/vulncheck.sh

## vulncheck: govulncheck over every package; GLASSBOX_VULNDB=URL picks the database (default: built from golang.org/x/vulndb)
vulncheck:
	./scripts/vulncheck.sh

fmt:
	gofmt -w $$(git ls-files '*.go')

## check-versions: every collector module stays on the pinned train
check-versions:
	./scripts/check-versions.sh

clean:
	rm -rf bin _build
