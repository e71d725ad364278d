package cuda

import (
	"strings"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/model"
)

func smallConfig(dtype string) model.Config {
	return model.Config{Arch: "llama", Hidden: 64, Layers: 2, Heads: 8, KVHeads: 4, HeadDim: 8, FFN: 96, Vocab: 100,
		RMSEps: 1e-5, RopeTheta: 10000, DType: dtype}
}

func TestResolve(t *testing.T) {
	tests := map[string]struct {
		cfg     model.Config
		opt     Options
		wt, kvt dtype
		split   bool
		err     string
	}{
		"f32 file":            {cfg: smallConfig("f32"), wt: dtF32, kvt: dtF16},
		"bf16 file":           {cfg: smallConfig("bf16"), wt: dtBF16, kvt: dtF16},
		"f16 file":            {cfg: smallConfig("f16"), wt: dtF16, kvt: dtF16},
		"q4_0 file":           {cfg: smallConfig("q4_0"), wt: dtF16, kvt: dtF16},
		"forced types":        {cfg: smallConfig("f32"), opt: Options{WeightType: "bf16", KVType: "f32", Split: true}, wt: dtBF16, kvt: dtF32, split: true},
		"split on f32 is off": {cfg: smallConfig("f32"), opt: Options{Split: true}, wt: dtF32, kvt: dtF16},
		"bad weight type":     {cfg: smallConfig("f32"), opt: Options{WeightType: "q8_0"}, err: "weight type"},
		"bad KV type":         {cfg: smallConfig("f32"), opt: Options{KVType: "int8"}, err: "KV type"},
		"mem fraction":        {cfg: smallConfig("f32"), opt: Options{MemFraction: 1.5}, err: "mem_fraction"},
		"negative tokens":     {cfg: smallConfig("f32"), opt: Options{MaxBatchTokens: -1}, err: "MaxBatchTokens"},
		"negative device":     {cfg: smallConfig("f32"), opt: Options{Device: -1}, err: "ordinal"},
		"group too large": {cfg: func() model.Config { c := smallConfig("f32"); c.Heads, c.KVHeads, c.Hidden = 64, 1, 512; return c }(),
			err: "64 query heads per KV head"},
		"head too wide": {cfg: func() model.Config { c := smallConfig("f32"); c.HeadDim = 512; return c }(), err: "head dimension 512"},
		"granite multipliers refused": {cfg: func() model.Config { c := smallConfig("f32"); c.Arch, c.LogitScale = "granite", 8; return c }(),
			err: "granite models"},
		"phi3 q scaling refused": {cfg: func() model.Config { c := smallConfig("f32"); c.Arch, c.QScale = "phi3", 0.125; return c }(),
			err: "phi3 models"},
		"yarn refused": {cfg: func() model.Config {
			c := smallConfig("f32")
			c.RopeScaling = &model.RopeScaling{Type: "yarn", Factor: 4}
			return c
		}(), err: "YaRN"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, err := tc.opt.resolve(tc.cfg)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.wt != tc.wt || r.kvt != tc.kvt || r.Split != tc.split {
				t.Errorf("weights %v KV %v split %v, want %v %v %v", r.wt, r.kvt, r.Split, tc.wt, tc.kvt, tc.split)
			}
			if r.MemFraction != 0.9 && tc.opt.MemFraction == 0 || r.MaxBatchTokens != 8192 && tc.opt.MaxBatchTokens == 0 {
				t.Errorf("defaults not applied: %+v", r.Options)
			}
		})
	}
}

func TestKVCapacity(t *testing.T) {
	const gib = 1 << 30
	tests := []struct {
		name        string
		free, total uint64
		frac        float64
		per         int64
		want        int
	}{
		{"LightLLM's rule", 100 * gib, 140 * gib, 0.9, 1 << 20, (100*gib - 14*gib) / (1 << 20)},
		{"nothing left", 10 * gib, 140 * gib, 0.9, 1 << 20, 0},
		{"whole device", 140 * gib, 140 * gib, 1, 1 << 30, 140},
		{"bad size", gib, gib, 1, 0, 0},
		{"capped at int32", 1 << 62, 1 << 62, 1, 1, 1<<31 - 1},
	}
	for _, tc := range tests {
		if got := kvCapacity(tc.free, tc.total, tc.frac, tc.per); got != tc.want {
			t.Errorf("%s: %d slots, want %d", tc.name, got, tc.want)
		}
	}
	c := smallConfig("f32")
	if got := kvBytesPerToken(c, dtF16); got != 2*2*4*8*2 {
		t.Errorf("kvBytesPerToken = %d", got)
	}
}

func TestAttentionShape(t *testing.T) {
	tests := []struct{ group, maxLen, want int }{{1, 1, 1}, {4, 100, 4}, {4, 3, 3}, {8, 100, 2}, {16, 100, 1}, {32, 100, 1}, {7, 100, 2}}
	for _, tc := range tests {
		if got := rowsPerTile(tc.group, tc.maxLen); got != tc.want {
			t.Errorf("rowsPerTile(%d, %d) = %d, want %d", tc.group, tc.maxLen, got, tc.want)
		}
	}
	// Llama-3 8B (hd 128, group 4, 16 warps) with an f16 pool fits the
	// default 48 KiB; hd 256 with an f32 pool needs the opt-in limit.
	if n := attnSharedBytes(128, dtF16, 16); n != 2*32*65*4+16*128*4 || n > 48<<10 {
		t.Errorf("hd 128 f16: %d bytes", n)
	}
	if n := attnSharedBytes(256, dtF32, 16); n <= 48<<10 {
		t.Errorf("hd 256 f32: %d bytes, expected above 48 KiB", n)
	}
}

func TestPickArch(t *testing.T) {
	tests := []struct {
		cc        int
		supported []int
		arch      string
		cubin     bool
		err       bool
	}{
		{90, nil, "sm_90", true, false},
		{90, []int{75, 80, 86, 89, 90}, "sm_90", true, false},
		{100, []int{75, 80, 86, 89, 90}, "compute_90", false, false},
		{80, []int{90}, "", false, true},
	}
	for _, tc := range tests {
		arch, cubin, err := pickArch(tc.cc, tc.supported)
		if arch != tc.arch || cubin != tc.cubin || (err != nil) != tc.err {
			t.Errorf("pickArch(%d, %v) = %q %v %v", tc.cc, tc.supported, arch, cubin, err)
		}
	}
}

func TestUUID(t *testing.T) {
	b := [16]byte{0x2b, 0x5c, 0x79, 0x0b, 0x5f, 0x8a, 0x6f, 0x1d, 0x8e, 0x3c, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66}
	u := formatUUID("GPU", b)
	if u != "GPU-2b5c790b-5f8a-6f1d-8e3c-112233445566" {
		t.Fatalf("formatUUID = %s", u)
	}
	for want, same := range map[string]bool{
		"GPU-2b5c790b-5f8a-6f1d-8e3c-112233445566":   true,
		" gpu-2B5C790B-5F8A-6F1D-8E3C-112233445566 ": true,
		"MIG-2b5c790b-5f8a-6f1d-8e3c-112233445566":   true,
		"GPU-2b5c790b-5f8a-6f1d-8e3c-112233445567":   false,
		"": false,
	} {
		if sameUUID(want, u) != same {
			t.Errorf("sameUUID(%q) = %v", want, !same)
		}
	}
}
