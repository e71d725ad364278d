//go:build cuda && !cgo

package cuda

// The CUDA backend reaches the driver through cgo: build with
// CGO_ENABLED=1 and a C compiler when using -tags cuda. This undefined name
// makes the build fail with that hint instead of a list of missing symbols.
var _ = theCUDABackendNeedsCgo_buildWithCGO_ENABLED1
