package shm

import (
	"reflect"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/sampler"
)

// distinctParams sets every field of sampler.Params by reflection: field i
// gets a value derived from i (numbers i+1 or (i+1)/8, true, slices of
// two ids), or, with only >= 0, just field only (the rest zero). A field a
// future change adds is filled too, so a field the slot does not carry
// fails TestParamsRoundTrip until shm stores it.
func distinctParams(t *testing.T, only int) sampler.Params {
	t.Helper()
	var p sampler.Params
	v := reflect.ValueOf(&p).Elem()
	for i := range v.NumField() {
		if only >= 0 && i != only {
			continue
		}
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int32, reflect.Int64:
			// Small values: every integer field's slot range holds them
			// (TopLogprobs <= 20, counts and ids >= 0).
			f.SetInt(int64(i%MaxTopLogprobs + 1))
		case reflect.Float32, reflect.Float64:
			f.SetFloat(float64(i+1) / 8)
		case reflect.Slice:
			if f.Type().Elem().Kind() != reflect.Int32 {
				t.Fatalf("sampler.Params.%s: slice of %s; teach distinctParams and the slot to carry it", v.Type().Field(i).Name, f.Type().Elem())
			}
			f.Set(reflect.ValueOf([]int32{int32(i + 3), int32(i + 5)}))
		default:
			t.Fatalf("sampler.Params.%s has kind %s; teach distinctParams and the slot to carry it", v.Type().Field(i).Name, f.Kind())
		}
	}
	return p
}

// TestParamsRoundTrip stores sampler.Params in a slot and reads them back:
// once with every field set to a distinct value, and once per field with
// only that field set, so that a field dropped by Fill or Params, or two
// fields swapped (e.g. two flag bits), fails by name.
func TestParamsRoundTrip(t *testing.T) {
	r := newTestRegion(t, smallSizes)
	n := reflect.TypeFor[sampler.Params]().NumField()
	for only := -1; only < n; only++ {
		name := "all fields"
		if only >= 0 {
			name = reflect.TypeFor[sampler.Params]().Field(only).Name
		}
		t.Run(name, func(t *testing.T) {
			s, gen, err := r.Alloc(1)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Release(gen)
			want := distinctParams(t, only)
			if err := s.Fill(gen, Request{Prompt: []int32{1}, Params: want}); err != nil {
				t.Fatal(err)
			}
			got := s.Params()
			gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
			for i := range n {
				if !reflect.DeepEqual(gv.Field(i).Interface(), wv.Field(i).Interface()) {
					t.Errorf("%s: stored %v, read back %v", gv.Type().Field(i).Name, wv.Field(i), gv.Field(i))
				}
			}
		})
	}
}
