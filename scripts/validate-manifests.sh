#!/usr/bin/env bash
# Validates deploy/kubernetes/ (issue 13):
#  1. kubeconform (installed from the Go module proxy into a tools cache,
#     $VALIDATE_TOOLS_DIR or ~/.cache/lightllm-validate-tools, never into the
#     repository) checks the core objects — Deployments, Services,
#     ConfigMap, RBAC — against the Kubernetes JSON schemas, strictly
#     (unknown fields and duplicate keys fail). The custom resources
#     (InferencePool, HTTPRoute) are checked against the CRDs-catalog schemas
#     when those can be fetched, and skipped otherwise.
#     kubeconform downloads the schemas at run time; without network access
#     (or with no module proxy) this step reports SKIPPED, not passed.
#  2. kubectl-validate (sigs.k8s.io/kubectl-validate, the pin llm-d-router
#     uses, same install route) validates every object, custom resources
#     included, with the Kubernetes schemas built into it (so it works
#     offline) and the CRDs of the Go modules sigs.k8s.io/gateway-api and
#     sigs.k8s.io/gateway-api-inference-extension (fetched with
#     `go mod download` into the module cache; nothing is copied into the
#     repository). Its first build takes minutes (k8s.io dependencies);
#     SKIP_KUBECTL_VALIDATE=1 skips it.
#  3. go test ./pkg/deploytest: the cross-object and code-level checks
#     (labels, probes, the shm emptyDir against the real shm layout, grace
#     period vs --graceful_timeout, InferencePool selector vs the pods, the
#     EPP's engineConfigs against the metric names the API port serves).
#
# Environment: KUBECONFORM_VERSION (default v0.8.0), KUBERNETES_VERSION
# (default 1.33.0), KUBECONFORM_SCHEMA_LOCATION (an extra -schema-location,
# e.g. a local mirror of the schemas for offline use), KUBECTL_VALIDATE_VERSION
# (v0.0.4), KUBECTL_VALIDATE_K8S (1.30: the newest schemas v0.0.4 embeds),
# GAIE_VERSION (v1.5.0), GATEWAY_API_VERSION (v1.5.1), BUILD_JOBS (1).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
KUBECONFORM_VERSION=${KUBECONFORM_VERSION:-v0.8.0}
KUBERNETES_VERSION=${KUBERNETES_VERSION:-1.33.0}
manifests="$repo/deploy/kubernetes"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/validate-manifests.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
status=0
# The validators are installed once per version into a cache outside the
# repository (kubectl-validate takes minutes to build).
tools=${VALIDATE_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lightllm-validate-tools}
mkdir -p "$tools"
# install NAME VERSION PACKAGE: go install into $tools/NAME-VERSION/.
install_tool() {
  local dir="$tools/$1-$2"
  [ -x "$dir/$1" ] && return 0
  (cd "$tmp" && GOBIN="$dir" GOFLAGS=-buildvcs=false CGO_ENABLED=0 GOMAXPROCS=${BUILD_JOBS:-1} \
    nice -n 19 go install -p "${BUILD_JOBS:-1}" "$3@$2") >"$tmp/install-$1.log" 2>&1 \
    || { tail -3 "$tmp/install-$1.log"; return 1; }
}

echo "==> kubeconform $KUBECONFORM_VERSION (Kubernetes $KUBERNETES_VERSION)"
if ! install_tool kubeconform "$KUBECONFORM_VERSION" github.com/yannh/kubeconform/cmd/kubeconform; then
  echo "SKIPPED: kubeconform could not be installed from the module proxy"
else
  # Object files only: the Helm values file is not a Kubernetes object.
  files=()
  for f in "$manifests"/*.yaml; do
    [ "$(basename "$f")" = llm-d-router-values.yaml ] || files+=("$f")
  done
  locations=(-schema-location default
    -schema-location 'https://raw.githubusercontent.com/datreeio/CRDs-catalog/main/{{.Group}}/{{.ResourceKind}}_{{.ResourceAPIVersion}}.json')
  [ -n "${KUBECONFORM_SCHEMA_LOCATION:-}" ] && locations+=(-schema-location "$KUBECONFORM_SCHEMA_LOCATION")
  set +e
  "$tools/kubeconform-$KUBECONFORM_VERSION/kubeconform" -strict -summary -output text -kubernetes-version "$KUBERNETES_VERSION" \
    -cache "$tmp" "${locations[@]}" -ignore-missing-schemas "${files[@]}" >"$tmp/out.txt" 2>&1
  rc=$?
  set -e
  if grep -q 'failed downloading schema\|could not find schema\|no such host' "$tmp/out.txt"; then
    grep -m1 'failed downloading schema\|could not find schema\|no such host' "$tmp/out.txt" | cut -c1-240
    grep '^Summary' "$tmp/out.txt" || true
    # Offline: an error fetching a schema says nothing about the manifests.
    if grep -v 'failed downloading schema\|could not find schema\|no such host\|^Summary' "$tmp/out.txt" | grep -q 'is invalid\|failed validation'; then
      echo "FAILED: kubeconform found invalid objects"; status=1
    else
      echo "SKIPPED: the Kubernetes JSON schemas could not be downloaded (set KUBECONFORM_SCHEMA_LOCATION to a local copy)"
    fi
  elif cat "$tmp/out.txt" && [ $rc -ne 0 ]; then
    echo "FAILED: kubeconform"; status=1
  else
    echo "PASSED: kubeconform"
  fi
fi

KUBECTL_VALIDATE_VERSION=${KUBECTL_VALIDATE_VERSION:-v0.0.4}
KUBECTL_VALIDATE_K8S=${KUBECTL_VALIDATE_K8S:-1.30}
GAIE_VERSION=${GAIE_VERSION:-v1.5.0}
GATEWAY_API_VERSION=${GATEWAY_API_VERSION:-v1.5.1}
echo "==> kubectl-validate $KUBECTL_VALIDATE_VERSION (Kubernetes $KUBECTL_VALIDATE_K8S schemas; CRDs of gateway-api-inference-extension $GAIE_VERSION, gateway-api $GATEWAY_API_VERSION)"
moddir() { # moddir MODULE@VERSION: its directory in the module cache
  (cd "$tmp" && GOFLAGS=-mod=mod go mod download -json "$1" 2>/dev/null) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'
}
if [ "${SKIP_KUBECTL_VALIDATE:-0}" = 1 ]; then
  echo "SKIPPED: SKIP_KUBECTL_VALIDATE=1"
elif ! install_tool kubectl-validate "$KUBECTL_VALIDATE_VERSION" sigs.k8s.io/kubectl-validate; then
  echo "SKIPPED: kubectl-validate could not be installed from the module proxy"
else
  gaie=$(moddir "sigs.k8s.io/gateway-api-inference-extension@$GAIE_VERSION")
  gwapi=$(moddir "sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION")
  mkdir -p "$tmp/crds"
  if [ -n "$gaie" ] && [ -n "$gwapi" ] &&
     cp "$gaie/config/crd/bases/inference.networking.k8s.io_inferencepools.yaml" \
        "$gwapi/config/crd/standard/gateway.networking.k8s.io_httproutes.yaml" "$tmp/crds/"; then
    files=()
    for f in "$manifests"/*.yaml; do
      [ "$(basename "$f")" = llm-d-router-values.yaml ] || files+=("$f")
    done
    if "$tools/kubectl-validate-$KUBECTL_VALIDATE_VERSION/kubectl-validate" --version "$KUBECTL_VALIDATE_K8S" --local-crds "$tmp/crds" "${files[@]}"; then
      echo "PASSED: kubectl-validate"
    else
      echo "FAILED: kubectl-validate"; status=1
    fi
  else
    echo "SKIPPED: the InferencePool / HTTPRoute CRDs could not be fetched from the module proxy"
  fi
fi

echo "==> go test ./pkg/deploytest"
if (cd "$repo" && go test -count=1 ./pkg/deploytest); then
  echo "PASSED: pkg/deploytest"
else
  echo "FAILED: pkg/deploytest"; status=1
fi
exit $status
