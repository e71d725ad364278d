package grammar

import (
	"runtime"
	"testing"
)

func BenchmarkCompileSmall(b *testing.B) {
	schema := []byte(`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0,"maximum":150},"tags":{"type":"array","items":{"type":"string"}}},"required":["name","age"]}`)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var leaves leafDFAs
	c0 := threadCPU()
	for i := 0; i < b.N; i++ {
		if _, err := CompileJSONSchema(schema, Options{leaves: &leaves}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((threadCPU()-c0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
