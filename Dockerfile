# syntax=docker/dockerfile:1
# Kubeocean's images, one target each. Build from the repository root:
#   docker build --target kubeocean-manager --build-arg VERSION=$(git describe) -t kubeocean-manager .
#   docker build --target kubeocean-syncer --build-arg VERSION=$(git describe) -t kubeocean-syncer .
# `make images` builds the same images without Docker (hack/image). What each
# image holds is defined once, in hack/image/images.go; its test,
# hack/image/dockerfile_test.go, fails when a target here disagrees with it.

# Pinned to a patch release so rebuilding a tag gives the same compiler.
# Compiles on the build host's platform and cross-compiles for the target,
# which is fast because the binaries are pure Go.
FROM --platform=$BUILDPLATFORM golang:1.26.8-bookworm AS build
ARG TARGETOS=linux
ARG TARGETARCH=amd64
WORKDIR /src
# Modules first, so source edits don't invalidate the download layer.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
# Only the directories the binaries are built from: the repository has no
# .dockerignore, and bin/ and test/ would otherwise bust the cache.
COPY apis/ apis/
COPY cmd/ cmd/
COPY generated/ generated/
COPY pkg/ pkg/
COPY internal/ internal/
# Static (no libc in the final image), reproducible paths, no symbols. One
# go build compiles the packages the commands share once.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH GOFLAGS=-buildvcs=false \
    go build -trimpath -ldflags "-s -w" -o /out/ \
    ./cmd/kubeocean-manager ./cmd/kubeocean-syncer ./cmd/kubeocean-dns

# Distroless static: CA certificates, /etc/passwd with nonroot, /tmp; no shell.
FROM gcr.io/distroless/static-debian12:nonroot AS base
ARG VERSION=dev
LABEL org.opencontainers.image.source="https://github.com/kubeocean/kubeocean" \
      org.opencontainers.image.version="${VERSION}"
WORKDIR /
USER 65532:65532

FROM base AS kubeocean-manager
LABEL org.opencontainers.image.title="kubeocean-manager"
COPY --from=build /out/kubeocean-manager /kubeocean-manager
ENTRYPOINT ["/kubeocean-manager"]

FROM base AS kubeocean-syncer
LABEL org.opencontainers.image.title="kubeocean-syncer"
COPY --from=build /out/kubeocean-syncer /kubeocean-syncer
# The binding's DNS server, which the syncer's Deployments run as
# "kubeocean-dns" from PATH.
COPY --from=build /out/kubeocean-dns /usr/local/bin/kubeocean-dns
ENTRYPOINT ["/kubeocean-syncer"]
