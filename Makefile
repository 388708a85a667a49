# Kubeocean build, code generation, verification and tests.
# `make test` is what CI runs (see README.md and .ci/run).

SHELL := /usr/bin/env bash -o pipefail
GO ?= go
BIN := bin
# Packages with unit tests (fake clientsets, no processes): all but test/.
UNIT_PKGS = $(shell $(GO) list ./... | grep -v '/test/')
# Packages that start real control planes (etcd, kube-apiserver, ...).
INTEGRATION_PKGS := ./test/...

.PHONY: all build test test-unit test-integration verify codegen crds testbin fmt vet clean bench-bottomup bench-topdown

all: build

build:
	$(GO) build ./...
	@if compgen -G 'cmd/*/main.go' >/dev/null; then $(GO) build -o $(BIN)/ ./cmd/...; fi

## codegen: regenerate clients, listers, informers, applyconfigurations, deepcopy and CRDs
codegen:
	hack/update-codegen.sh
	hack/update-crds.sh

## verify: formatting, vet, and no drift between API types and generated files
verify: vet
	@bad=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^hack/tools/')); \
	  if [ -n "$$bad" ]; then echo "gofmt needed: $$bad"; exit 1; fi
	hack/verify-codegen.sh
	hack/verify-crds.sh

vet:
	$(GO) vet ./...

## testbin: build (or reuse from the cache) the control-plane binaries for integration tests
testbin:
	hack/testbin.sh

test: verify test-unit test-integration

test-unit:
	$(GO) test -race -count=1 $(UNIT_PKGS)

test-integration: testbin
	KUBEOCEAN_TESTBIN=$$(hack/testbin.sh) $(GO) test -race -count=1 -timeout 30m -p 1 $(INTEGRATION_PKGS)

clean:
	rm -rf $(BIN)

## bench-bottomup: bottom-up syncer figures on real clusters (design.md §5); prints a table
bench-bottomup: build testbin
	KUBEOCEAN_TESTBIN=$$(hack/testbin.sh) $(GO) run ./test/bench/bottomup --syncer=$(BIN)/kubeocean-syncer $(BENCH_ARGS)

## bench-topdown: top-down syncer figures on real clusters (design.md §5); prints a table
bench-topdown: build testbin
	KUBEOCEAN_TESTBIN=$$(hack/testbin.sh) $(GO) run ./test/bench/topdown --syncer=$(BIN)/kubeocean-syncer $(BENCH_ARGS)
