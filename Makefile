# Kubeocean build, code generation, verification and tests.
# `make test` is what CI runs (see README.md and .ci/run).

SHELL := /usr/bin/env bash -o pipefail
GO ?= go
BIN := bin
# The version the binaries report (--version, kubeocean_build_info): the
# release tag, or v0.0.0 with the commit between releases; the date is the
# commit's, so a build is reproducible.
VERSION ?= $(shell git describe --tags --match 'v*' --dirty 2>/dev/null || echo v0.0.0-$$(git rev-parse --short HEAD 2>/dev/null || echo unknown))
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
VERSION_PKG := github.com/kubeocean/kubeocean/internal/version
LDFLAGS := -X $(VERSION_PKG).gitVersion=$(VERSION) -X $(VERSION_PKG).gitCommit=$(COMMIT) \
	-X $(VERSION_PKG).buildDate=$(shell git log -1 --format=%cI 2>/dev/null)
# Packages with unit tests (fake clientsets, no processes): all but test/.
UNIT_PKGS = $(shell $(GO) list ./... | grep -v '/test/')
# Packages that start real control planes (etcd, kube-apiserver, ...).
INTEGRATION_PKGS := ./test/...

.PHONY: all build test test-unit test-integration test-demo demo images verify verify-cold codegen crds charts testbin fmt vet clean bench-bottomup bench-topdown bench-kubelet bench-churn bench-scale

all: build

build:
	$(GO) build ./...
	@if compgen -G 'cmd/*/main.go' >/dev/null; then $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...; fi

## codegen: regenerate clients, listers, informers, applyconfigurations, deepcopy and CRDs
codegen:
	hack/update-codegen.sh
	hack/update-crds.sh
	hack/update-charts.sh

## charts: render the Helm charts' generated templates from the plain manifests
charts:
	hack/update-charts.sh

## verify: formatting, vet, no drift between API types and generated files,
## no reference outside the repository, contextual logging only, license
## headers, imports grouped standard library / third-party / kubeocean
verify: vet
	@bad=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^hack/tools/')); \
	  if [ -n "$$bad" ]; then echo "gofmt needed: $$bad"; exit 1; fi
	hack/verify-codegen.sh
	hack/verify-crds.sh
	hack/verify-charts.sh
	hack/verify-references.sh
	hack/verify-logging.sh
	hack/verify-license.sh
	$(GO) run ./hack/importorder

## verify-cold: the module build, the generators and hack/testbin.sh from an
## empty module cache and an empty binary cache, as a new machine runs them
verify-cold:
	hack/verify-cold.sh

vet:
	$(GO) vet ./...
	$(GO) -C hack/image vet ./...

## testbin: build (or reuse from the cache) the control-plane binaries for integration tests
testbin:
	hack/testbin.sh

test: verify verify-cold test-unit test-integration test-demo

test-unit:
	$(GO) test -race -count=1 $(UNIT_PKGS)
	$(GO) -C hack/image test -race -count=1 ./...

test-integration: testbin
	KUBEOCEAN_TESTBIN=$$(hack/testbin.sh) $(GO) test -race -count=1 -timeout 30m -p 1 $(INTEGRATION_PKGS)

## demo: the README's main command: a virtual and a physical control plane on
## loopback, Kubeocean deployed from the shipped manifests, a sample
## application on virtual nodes; runs until Ctrl-C (DEMO_ARGS=--exit-after-check to stop after the check)
demo: build testbin
	KUBEOCEAN_TESTBIN=$$(hack/testbin.sh) $(GO) run ./test/demo --manager=$(BIN)/kubeocean-manager $(DEMO_ARGS)

## test-demo: the demo in its exit-after-check form, as CI runs it
test-demo:
	$(MAKE) demo DEMO_ARGS=--exit-after-check

IMAGE_REGISTRY ?= ghcr.io/kubeocean
IMAGE_TAG ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
IMAGE_ARCH ?= amd64
IMAGE_CA_CERTS ?= /etc/ssl/certs/ca-certificates.crt
## images: static linux binaries and their OCI image archives in bin/images/, without Docker;
## what each image holds is hack/image/images.go's table, which the Dockerfile's targets match
images:
	@set -e; dir=$(BIN)/linux_$(IMAGE_ARCH); tool=$(BIN)/tools/image; \
	$(GO) -C hack/image build -o $(abspath $(BIN))/tools/image . ; \
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -ldflags '-s -w $(LDFLAGS)' \
	    -o $$dir/ $$($$tool --list=commands | sed 's|^|./cmd/|'); \
	for img in $$($$tool --list=images); do \
	  $$tool --image=$$img --bin-dir=$$dir --tag=$(IMAGE_REGISTRY)/$$img:$(IMAGE_TAG) \
	    --platform=linux/$(IMAGE_ARCH) $(if $(wildcard $(IMAGE_CA_CERTS)),--ca-certs=$(IMAGE_CA_CERTS)) \
	    --output=$(BIN)/images/$$img.tar; \
	done

clean:
	rm -rf $(BIN)

## bench-bottomup: bottom-up syncer figures on real clusters, beside floors measured in the same run (docs/scaling.md); prints a table
bench-bottomup: build testbin
	KUBEOCEAN_TESTBIN=$$(hack/testbin.sh) $(GO) run ./test/bench/bottomup --syncer=$(BIN)/kubeocean-syncer $(BENCH_ARGS)

## bench-topdown: top-down syncer figures on real clusters, beside a floor measured in the same run (docs/scaling.md); prints a table
bench-topdown: build testbin
	KUBEOCEAN_TESTBIN=$$(hack/testbin.sh) $(GO) run ./test/bench/topdown --syncer=$(BIN)/kubeocean-syncer $(BENCH_ARGS)

## bench-churn: foreign-pod churn on lent nodes: status writes per node per second, 409s, settling time (BENCH_ARGS=--nodes=1000 for the large run)
bench-churn: build testbin
	KUBEOCEAN_TESTBIN=$$(hack/testbin.sh) $(GO) run ./test/bench/churn --syncer=$(BIN)/kubeocean-syncer $(BENCH_ARGS)

## bench-scale: one in-process manager with several bindings and many unrelated virtual pods: RSS, heap, CPU at rest per binding and per 1,000 pods (BENCH_ARGS=--bindings=2 --nodes=20 --pods=2000 for a small run; BENCH_ARGS=--syncer=bin/kubeocean-syncer for one syncer alone, as in deployment mode)
bench-scale: build testbin
	KUBEOCEAN_TESTBIN=$$(hack/testbin.sh) $(GO) run ./test/bench/scale --manager=$(BIN)/kubeocean-manager $(BENCH_ARGS)

## bench-dns: kubeocean-dns queries per second and p50/p99 (ClusterIP, 100-endpoint headless, NXDOMAIN, forwarded) beside a static-map floor and CoreDNS (built once; BENCH_ARGS=--coredns= skips it), and its heap per 1,000 Services; then DNS programming latency p50/p99 at 1,000 Services with the real syncer and kubeocean-dns, and the syncer's heap per 1,000 Services (BENCH_ARGS=--syncer= skips it); prints tables
bench-dns: build testbin
	KUBEOCEAN_TESTBIN=$$(hack/testbin.sh) $(GO) run ./test/bench/dns --syncer=$(BIN)/kubeocean-syncer --dns=$(BIN)/kubeocean-dns $(BENCH_ARGS)

## bench-kubelet: kubelet API figures on real clusters (logs, exec, 200 follows, each beside a floor measured in the same run); prints a table
bench-kubelet: build testbin
	KUBEOCEAN_TESTBIN=$$(hack/testbin.sh) $(GO) run ./test/bench/kubelet --syncer=$(BIN)/kubeocean-syncer $(BENCH_ARGS)
