package cuda

import (
	"fmt"
	"strings"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/model"
	"github.com/lightllm-go/lightllm/pkg/tensor"
)

// Options configures Load.
type Options struct {
	// DeviceUUID pins the device by UUID ("GPU-…" or "MIG-…", as nvidia-smi
	// -L and NVML print it). It wins over Device.
	DeviceUUID string
	// Device is the CUDA ordinal used when DeviceUUID is empty.
	Device int
	// WeightType is the device type of the weights: f32, f16 or bf16; ""
	// keeps the file's type (f32, f16, bf16) and uses f16 for q8_0/q4_0.
	WeightType string
	// KVType is the KV pool's element type: f16 (default), bf16 or f32.
	KVType string
	// Split keeps a remainder copy of 16-bit activations (see the package
	// doc): near-f32 matrix products for twice the prefill arithmetic.
	Split bool
	// MemFraction is the share of the device's total memory this process may
	// hold (weights, scratch and KV); 0 means 0.9, LightLLM's default.
	MemFraction float64
	// MaxBatchTokens sizes the activation scratch (tokens per Forward); 0
	// means 8192. A larger batch grows it, if memory allows.
	MaxBatchTokens int
	// KernelCacheDir caches NVRTC's output; "" is the user cache directory
	// (…/lightllm/cuda), "off" disables the cache.
	KernelCacheDir string
	// Log receives load progress; the zero value logs nothing.
	Log zerolog.Logger
}

// Limits of the kernels (kernels.cu): a warp per query head of a GQA group,
// a block of at most 1024 threads, and at most 8 head elements per lane.
const (
	maxGroup   = 32
	maxHeadDim = 256
	// attnWarps is the query count per attention block the tile size aims at.
	attnWarps = 16
)

// dtype names the device element types.
type dtype int

const (
	dtF32 dtype = iota
	dtF16
	dtBF16
)

func (d dtype) String() string { return [...]string{"f32", "f16", "bf16"}[d] }

// size is the element size in bytes.
func (d dtype) size() int { return [...]int{4, 2, 2}[d] }

// tensorType is the pkg/tensor type of the same encoding.
func (d dtype) tensorType() tensor.DType {
	return [...]tensor.DType{tensor.F32, tensor.F16, tensor.BF16}[d]
}

func parseDType(s string) (dtype, error) {
	switch strings.ToLower(s) {
	case "f32", "float32":
		return dtF32, nil
	case "f16", "float16", "half":
		return dtF16, nil
	case "bf16", "bfloat16":
		return dtBF16, nil
	}
	return 0, fmt.Errorf("type %q (want f32, f16 or bf16)", s)
}

// resolved is Options with defaults applied and types parsed.
type resolved struct {
	Options
	wt, kvt dtype
}

// resolve applies defaults and checks the options and the model's shape
// against what the kernels support. srcType is the model's dominant weight
// type (model.Config.DType).
func (o Options) resolve(cfg model.Config) (resolved, error) {
	r := resolved{Options: o}
	// The device forward pass has the llama/qwen2/qwen3 block only: a
	// model needing more is refused by name, never run without it.
	longRoPE := cfg.RopeScaling != nil && cfg.RopeScaling.Type == "longrope" || cfg.RopeDim != 0 && cfg.RopeDim != cfg.HeadDim
	gemma := cfg.Act != "" || cfg.PostNorms || cfg.Window > 0
	if cfg.EmbedScale != 0 || cfg.ResidualScale != 0 || cfg.AttnScale != 0 || cfg.LogitScale != 0 || cfg.QScale != 0 || longRoPE || gemma {
		return r, fmt.Errorf("cuda: %s models (embedding/residual/attention/logit multipliers, q scaling, LongRoPE, partial rotary, GeGLU, post norms, sliding window) are not supported by the CUDA backend; use --backend cpu", cfg.Arch)
	}
	if cfg.Experts > 0 {
		return r, fmt.Errorf("cuda: mixture-of-experts models (%d experts) are not supported by the CUDA backend; use --backend cpu", cfg.Experts)
	}
	if rs := cfg.RopeScaling; rs != nil && rs.Type == "yarn" {
		return r, fmt.Errorf("cuda: YaRN RoPE scaling is not supported by the CUDA backend; use --backend cpu")
	}
	var err error
	switch {
	case o.WeightType != "":
		if r.wt, err = parseDType(o.WeightType); err != nil {
			return r, fmt.Errorf("cuda: weight %w", err)
		}
	case cfg.DType == "f32":
		r.wt = dtF32
	case cfg.DType == "bf16":
		r.wt = dtBF16
	default: // f16, q8_0, q4_0: f16 holds their values best
		r.wt = dtF16
	}
	r.kvt = dtF16
	if o.KVType != "" {
		if r.kvt, err = parseDType(o.KVType); err != nil {
			return r, fmt.Errorf("cuda: KV %w", err)
		}
	}
	if r.wt == dtF32 {
		r.Split = false // nothing to split: activations are f32 already
	}
	if r.MemFraction == 0 {
		r.MemFraction = 0.9
	}
	if r.MemFraction <= 0 || r.MemFraction > 1 {
		return r, fmt.Errorf("cuda: mem_fraction %v must be in (0, 1]", o.MemFraction)
	}
	if r.MaxBatchTokens == 0 {
		r.MaxBatchTokens = 8192
	}
	if r.MaxBatchTokens < 0 {
		return r, fmt.Errorf("cuda: MaxBatchTokens %d is negative", o.MaxBatchTokens)
	}
	if r.DeviceUUID == "" && r.Device < 0 {
		return r, fmt.Errorf("cuda: device ordinal %d is negative", o.Device)
	}
	if err := checkShape(cfg); err != nil {
		return r, err
	}
	return r, nil
}

// checkShape rejects models the kernels cannot run.
func checkShape(c model.Config) error {
	switch {
	case c.Heads <= 0 || c.KVHeads <= 0 || c.Heads%c.KVHeads != 0:
		return fmt.Errorf("cuda: %d heads over %d KV heads", c.Heads, c.KVHeads)
	case c.Heads/c.KVHeads > maxGroup:
		return fmt.Errorf("cuda: %d query heads per KV head; the attention kernel takes at most %d", c.Heads/c.KVHeads, maxGroup)
	case c.HeadDim <= 0 || c.HeadDim%2 != 0 || c.HeadDim > maxHeadDim:
		return fmt.Errorf("cuda: head dimension %d (want even, at most %d)", c.HeadDim, maxHeadDim)
	case c.Hidden <= 0 || c.FFN <= 0 || c.Vocab <= 0 || c.Layers <= 0:
		return fmt.Errorf("cuda: non-positive model size in %+v", c)
	}
	return nil
}

// kvBytesPerToken is the device KV memory one token slot takes.
func kvBytesPerToken(c model.Config, kvt dtype) int64 {
	return 2 * int64(c.Layers) * int64(c.KVHeads*c.HeadDim) * int64(kvt.size())
}

// kvCapacity is how many token slots fit, profiled as LightLLM does: of the
// device's free memory, keep back what would exceed memFraction of the
// total, and divide the rest by the bytes of one slot.
func kvCapacity(free, total uint64, memFraction float64, bytesPerToken int64) int {
	if bytesPerToken <= 0 {
		return 0
	}
	reserve := float64(total) * (1 - memFraction)
	usable := float64(free) - reserve
	if usable <= 0 {
		return 0
	}
	n := int64(usable) / bytesPerToken
	const maxSlots = 1<<31 - 1 // slot indexes are int32
	return int(min(n, maxSlots))
}

// rowsPerTile is how many new tokens of one sequence an attention block
// takes: enough that R*group warps reach attnWarps, never more than the
// longest sequence of the batch.
func rowsPerTile(group, maxLen int) int {
	r := max(1, attnWarps/group)
	return max(1, min(r, maxLen))
}

// attnSharedBytes is the attention kernel's dynamic shared memory: K and V
// chunks of 32 padded rows, then one query per warp.
func attnSharedBytes(headDim int, kvt dtype, warps int) int {
	rowWords := headDim*kvt.size()/4 + 1
	return 2*32*rowWords*4 + warps*headDim*4
}

// pickArch chooses what to compile for a device of compute capability cc
// (major*10+minor) given NVRTC's supported list (nil: unknown, assume cc).
func pickArch(cc int, supported []int) (arch string, cubin bool, err error) {
	if len(supported) == 0 {
		return fmt.Sprintf("sm_%d", cc), true, nil
	}
	best := 0
	for _, a := range supported {
		if a == cc {
			return fmt.Sprintf("sm_%d", cc), true, nil
		}
		if a < cc && a > best {
			best = a
		}
	}
	if best == 0 {
		return "", false, fmt.Errorf("cuda: NVRTC supports none of the architectures up to sm_%d (it knows %v)", cc, supported)
	}
	return fmt.Sprintf("compute_%d", best), false, nil
}
