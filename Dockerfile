# syntax=docker/dockerfile:1
#
# lightllm container image, multi-stage (docs/scaling.md, "Container image"):
#
#   CPU (default): a static, pure-Go build (CGO_ENABLED=0) on a distroless
#   static base: no libc, no shell, runs as an unprivileged user.
#     docker build -t ghcr.io/lightllm-go/lightllm:cpu .
#
#   CUDA: BACKEND=cuda builds with cgo and -tags cuda. The binary dlopens
#   libcuda (mounted by the NVIDIA container toolkit), cuBLAS and NVRTC at
#   run time, so the run stage is NVIDIA's runtime image, which ships them.
#     docker build --build-arg BACKEND=cuda -t ghcr.io/lightllm-go/lightllm:cuda .
#   (the name deploy/kubernetes/lightllm.yaml uses)
#
# Every role binary is installed next to `lightllm`, where the supervisor
# looks for them. Models are not baked in: mount them (e.g. at /models) and
# give /dev/shm room for the request slots (docker run --shm-size=1g;
# Kubernetes: an emptyDir with medium Memory, as deploy/kubernetes does).

ARG GO_VERSION=1.26.8
ARG BACKEND=cpu
ARG CUDA_RUNTIME=nvidia/cuda:12.8.1-runtime-ubuntu24.04

FROM golang:${GO_VERSION}-bookworm AS build
ARG BACKEND
WORKDIR /src
# Modules first: this layer is reused while only the sources change.
COPY go.mod go.sum ./
RUN go mod download
COPY cmd ./cmd
COPY pkg ./pkg
COPY shm ./shm
RUN set -eu; \
    case "$BACKEND" in \
      cpu)  export CGO_ENABLED=0; tags="" ;; \
      cuda) export CGO_ENABLED=1; tags="-tags=cuda" ;; \
      *)    echo "BACKEND must be cpu or cuda, got $BACKEND" >&2; exit 1 ;; \
    esac; \
    go build -trimpath $tags -ldflags="-s -w" -o /out/ ./cmd/...; \
    /out/lightllm version

# The two run stages; BACKEND picks one below.
FROM gcr.io/distroless/static-debian12:nonroot AS run-cpu
FROM ${CUDA_RUNTIME} AS run-cuda
RUN useradd --system --uid 65532 --home-dir /nonexistent --shell /usr/sbin/nologin nonroot || true

FROM run-${BACKEND}
COPY --from=build /out/ /usr/local/bin/
ENV LIGHTLLM_RUN_DIR=/tmp/lightllm
USER 65532:65532
EXPOSE 8000
ENTRYPOINT ["/usr/local/bin/lightllm"]
CMD ["launch", "--normal", "--host", "0.0.0.0", "--port", "8000", "--model_dir", "/models"]
