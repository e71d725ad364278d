package model

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/lightllm-go/lightllm/pkg/gguf"
	"github.com/lightllm-go/lightllm/pkg/model/builtin"
	"github.com/lightllm-go/lightllm/pkg/safetensors"
	"github.com/lightllm-go/lightllm/pkg/tensor"
	"github.com/lightllm-go/lightllm/pkg/tokenizer"
)

// LoadOptions tunes loading and execution.
type LoadOptions struct {
	// Threads is the number of worker threads for the forward pass
	// (<= 0: GOMAXPROCS).
	Threads int
	// KVType is the element type of the KV store: "f16" (default, as
	// llama.cpp's default cache), "q8_0" (llama.cpp's -ctk/-ctv q8_0: about
	// half the bytes) or "f32".
	KVType string
	// NoTokenizer skips loading the tokenizer (benchmarks, weight-only tests).
	NoTokenizer bool
	// Context is the longest sequence the model will run (the server's
	// max_req_total_len), llama.cpp's n_ctx: it picks LongRoPE's short or
	// long factors. 0: the model's training context, llama.cpp's default.
	Context int
	// MmapWeights keeps every matrix in the file mapping instead of
	// copying the streamed ones into huge-page memory (tensor.WeightArena):
	// less load time and no private copy, about 12% slower decode.
	MmapWeights bool
	// Progress, when set, hears of every tensor loaded (and once more with
	// Done when all are), from the loading goroutine: infer logs it, so a
	// big model's minutes of loading are not silent. It must be cheap.
	Progress func(LoadProgress)
}

// LoadProgress is how far a Load is.
type LoadProgress struct {
	Tensors, TotalTensors int   // tensors of the file(s) loaded so far / in all
	Bytes, TotalBytes     int64 // their bytes as stored in the file(s)
	// CopiedBytes are weights copied into private (huge-page) memory so
	// far; the rest are read from the file mapping (MmapWeights).
	CopiedBytes int64
	Done        bool
}

type layer struct {
	attnNorm, ffnNorm []float32 // [Hidden]
	wq                *tensor.Matrix
	wk, wv            *tensor.Matrix // [KVHeads*HeadDim x Hidden]
	wo                *tensor.Matrix // [Hidden x Heads*HeadDim]
	bq, bk, bv        []float32      // qwen2 biases (nil otherwise)
	bo                []float32      // attention output bias [Hidden] (gpt-oss; nil otherwise)
	sinks             []float32      // attention sink logit per query head [Heads] (gpt-oss; nil otherwise)
	qNorm, kNorm      []float32      // qwen3 per-head RMSNorm weights [HeadDim]
	postAttn, postFFN []float32      // gemma's output norms [Hidden] (nil otherwise)
	window            int            // sliding window of this layer (0: whole context)
	wGate, wUp, wDown *tensor.Matrix
	// Mixture of experts (Config.Experts > 0) in place of wGate/wUp/wDown:
	// the router [Experts x Hidden] and the experts.
	gateInp  *tensor.Matrix
	gateInpB []float32 // the router's bias [Experts] (gpt-oss; nil otherwise)
	experts  []expert
	// A shared expert (Config.SharedFFN > 0) is wGate/wUp/wDown, gated by
	// sigmoid(shexpGate · x), shexpGate [1 x Hidden].
	shexpGate *tensor.Matrix
}

// Model is a loaded model. Forward is not safe for concurrent use: one
// goroutine (the engine) drives it.
type Model struct {
	cfg     Config
	fam     *family
	tok     *tokenizer.Tokenizer
	embed   *tensor.Matrix // [Vocab x Hidden]
	output  *tensor.Matrix // [Vocab x Hidden]; the embedding when tied
	outNorm []float32
	layers  []layer

	// RoPE follows llama.cpp's rope type for the architecture: neox
	// (qwen2, qwen3) rotates (x[i], x[i+d/2]); llama and mistral rotate
	// adjacent pairs (x[2i], x[2i+1]) as in their GGUF files. HF llama
	// checkpoints store q/k rows in rotate-half order, so their q/k
	// activations are reordered into adjacent pairs first (permQK): both
	// forms of a model then compute the same numbers.
	ropeNeox   bool
	permQK     bool
	kqScale    float32   // attention logit scale
	ropeScale  float32   // theta multiplier per pair: base^(-2/d)
	freqScale  float32   // linear scaling: 1/factor
	freqFactor []float32 // per-pair divisors (Llama 3 scaling, LongRoPE), nil if none
	ropeMscale float32   // cos/sin multiplier (LongRoPE's attention factor); 0 or 1: none
	yarn       *yarn     // YaRN RoPE scaling, nil if none
	// Sliding-window (local) layers' RoPE when it differs from the global
	// one (Config.RopeThetaLocal, LocalRopeUnscaled): its own tables.
	localRope              bool
	ropeScaleL, freqScaleL float32
	// gelu is ggml's GELU table (GGML_GELU_FP16) for Config.Act gelu_tanh.
	gelu  []uint16
	kvF16 bool
	kvQ8  bool // KV store in q8_0 blocks (kvF16 false)
	lanes int  // f32 vector width of the llama.cpp build whose rounding we follow
	// panel8: some matrix is iq4_xs, which llama.cpp computes with its IQ
	// panel gemm for chunks of 8 or more tokens (another rounding class).
	panel8 bool
	// rowBlock is the most token rows Forward computes the per-row parts
	// of a layer for at once (defaultRowBlock; tests make it small).
	rowBlock int
	// gemm4: some matrix is q4_K or q2_K, which llama.cpp computes with its
	// repacked gemm on a chunk's rows in fours and the rest with its gemv.
	gemm4 bool

	ctx *tensor.Ctx
	s   scratch
	// trace, when set (tests only), receives intermediate activations
	// [rows x width] under llama.cpp's tensor names.
	trace   func(name string, layer int, data []float32)
	attn    attnTask
	pack    packTask
	pass    rowPass
	closers []io.Closer
}

// Load opens a model: a Hugging Face directory (config.json +
// safetensors) or a .gguf file. Weights stay in the mmap'd files. A
// builtin spec ("builtin:tiny-random", see pkg/model/builtin) builds a
// random-weight model in memory instead.
func Load(path string, opts LoadOptions) (*Model, error) {
	if builtin.IsSpec(path) {
		return loadBuiltin(path, opts)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	m := &Model{}
	if st.IsDir() {
		err = m.loadHF(path, opts)
	} else {
		err = m.loadGGUF(path, opts)
	}
	if err != nil {
		m.closeFiles()
		return nil, err
	}
	return m.finishLoad(opts)
}

// finishLoad sets up what every format shares once the weights are in.
func (m *Model) finishLoad(opts LoadOptions) (*Model, error) {
	switch opts.KVType {
	case "", "f16":
		m.kvF16 = true
	case "f32":
	case "q8_0":
		if m.cfg.HeadDim%tensor.QK != 0 {
			m.closeFiles()
			return nil, fmt.Errorf("model: KV type q8_0 needs a head size that is a multiple of %d (it is %d)", tensor.QK, m.cfg.HeadDim)
		}
		m.kvQ8 = true
	default:
		m.closeFiles()
		return nil, fmt.Errorf("model: KV type %q (want f16, q8_0 or f32)", opts.KVType)
	}
	m.initRope(opts.Context)
	m.lanes = tensor.GGMLLanes()
	if m.cfg.Act == "gelu_tanh" {
		m.gelu = geluTable()
	}
	m.ctx = tensor.NewCtx(opts.Threads)
	return m, nil
}

// weightArena returns the arena for this load's matrix copies, closed with
// the model (after the files, whose closers run first: nothing reads the
// arena then), or nil with opts.MmapWeights or without huge pages.
func (m *Model) weightArena(opts LoadOptions) *tensor.WeightArena {
	if opts.MmapWeights {
		return nil
	}
	a := tensor.NewWeightArena()
	if a != nil {
		m.closers = append(m.closers, a)
	}
	return a
}

func (m *Model) loadGGUF(path string, opts LoadOptions) error {
	f, err := gguf.Open(path)
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	m.closers = append(m.closers, f)
	return m.loadGGUFFile(f, opts)
}

// loadGGUFFile loads a parsed GGUF image (mmap'd or in memory).
func (m *Model) loadGGUFFile(f *gguf.File, opts LoadOptions) error {
	path := f.Path
	cfg, err := ggufConfig(f)
	if err != nil {
		return fmt.Errorf("model %s: %w", path, err)
	}
	m.cfg = cfg
	if m.fam, err = lookupFamily(cfg.Arch); err != nil {
		return fmt.Errorf("model %s: %w", path, err)
	}
	m.ropeNeox = m.fam.ropeNeox
	l := newLoader(ggufSource{f}, m.weightArena(opts), opts.Progress)
	if err := m.loadWeights(l); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	// The matrices were copied (or repacked) into the arena, so what the
	// process still maps of the file is the header and tokenizer, folios at
	// tensor edges and the embedding table, read a row per token: none of
	// it need count toward RSS (peak ≈ weights + KV + buffers).
	defer l.dropFilePages(f.DropPages)
	if ff, err := l.optionalVector("rope_freqs.weight", cfg.RopeDim/2); err != nil {
		return fmt.Errorf("model: %w", err)
	} else if ff != nil {
		m.freqFactor = ff
	}
	if !opts.NoTokenizer {
		tok, err := tokenizer.FromGGUFFile(f)
		if err != nil {
			return fmt.Errorf("model %s: tokenizer: %w", path, err)
		}
		m.tok = tok
	}
	return nil
}

func (m *Model) loadHF(dir string, opts LoadOptions) error {
	cfg, err := readHFConfig(dir)
	if err != nil {
		return err
	}
	m.cfg = cfg
	if m.fam, err = lookupFamily(cfg.Arch); err != nil {
		return fmt.Errorf("model %s: %w", dir, err)
	}
	m.ropeNeox = m.fam.ropeNeox
	m.permQK = !m.ropeNeox
	if m.permQK && cfg.RopeDim != cfg.HeadDim {
		// The rotate-half to adjacent-pair permutation covers whole heads.
		return fmt.Errorf("model %s: partial rotary embeddings (%d of %d dims) of a %s checkpoint are not supported", dir, cfg.RopeDim, cfg.HeadDim, cfg.Arch)
	}
	set, err := safetensors.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	m.closers = append(m.closers, set)
	l := newLoader(hfSource{set: set, dir: dir, fam: m.fam}, m.weightArena(opts), opts.Progress)
	l.shiftNorms = m.fam.normShift
	if err := m.loadWeights(l); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	defer l.dropFilePages(set.DropPages) // as in loadGGUFFile
	if rs := cfg.RopeScaling; rs != nil && rs.Type == "llama3" {
		m.freqFactor = Llama3FreqFactors(rs, cfg.RopeTheta, cfg.RopeDim)
	}
	if !opts.NoTokenizer {
		tok, err := tokenizer.LoadDir(dir)
		if err != nil {
			return fmt.Errorf("model %s: tokenizer: %w", dir, err)
		}
		m.tok = tok
	}
	return nil
}

// loadWeights reads every tensor through l (names in GGUF form).
func (m *Model) loadWeights(l *loader) error {
	c := &m.cfg
	emb, err := l.need("token_embd.weight")
	if err != nil {
		return err
	}
	if c.Vocab == 0 && len(emb.shape) == 2 {
		c.Vocab = emb.shape[0]
	}
	if err := c.validate(); err != nil {
		return fmt.Errorf("%s: %w", l.src.path(), err)
	}
	H, qDim, kvDim := c.Hidden, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	out, err := l.src.get("output.weight")
	if err != nil {
		return err
	}
	if m.fam.tiedOnly {
		out = nil
	}
	// Tied: the table is also the output head, streamed every step.
	if m.embed, err = l.asMatrix(emb, c.Vocab, H, out == nil); err != nil {
		return err
	}
	if m.outNorm, err = l.vector("output_norm.weight", H); err != nil {
		return err
	}
	if out == nil {
		m.output = m.embed
		c.TiedEmbeddings = true
	} else {
		if m.output, err = l.asMatrix(out, c.Vocab, H, true); err != nil {
			return err
		}
		c.TiedEmbeddings = false
	}
	m.layers = make([]layer, c.Layers)
	for i := range m.layers {
		ly := &m.layers[i]
		p := fmt.Sprintf("blk.%d.", i)
		mats := []struct {
			dst        **tensor.Matrix
			name       string
			rows, cols int
		}{
			{&ly.wq, "attn_q", qDim, H}, {&ly.wk, "attn_k", kvDim, H}, {&ly.wv, "attn_v", kvDim, H},
			{&ly.wo, "attn_output", H, qDim}, {&ly.wGate, "ffn_gate", c.FFN, H}, {&ly.wUp, "ffn_up", c.FFN, H},
			{&ly.wDown, "ffn_down", H, c.FFN},
		}
		if m.fam.fusedProj {
			// q|k|v and gate|up are one tensor each: split by rows (each
			// output row is its own dot product, so the split computes
			// the same numbers as the fused product).
			if err := l.splitMatrix(p+"attn_qkv.weight", H, []splitPart{{&ly.wq, qDim}, {&ly.wk, kvDim}, {&ly.wv, kvDim}}); err != nil {
				return err
			}
			if err := l.splitMatrix(p+"ffn_up.weight", H, []splitPart{{&ly.wGate, c.FFN}, {&ly.wUp, c.FFN}}); err != nil {
				return err
			}
			mats = []struct {
				dst        **tensor.Matrix
				name       string
				rows, cols int
			}{{&ly.wo, "attn_output", H, qDim}, {&ly.wDown, "ffn_down", H, c.FFN}}
		}
		if c.Experts > 0 {
			if m.fam.fusedProj {
				return fmt.Errorf("%s: %s with experts is not supported", l.src.path(), c.Arch)
			}
			if err := m.loadExperts(l, ly, p); err != nil {
				return err
			}
			mats = mats[:4] // attention, and the shared expert if any
			if F := c.SharedFFN; F > 0 {
				mats = append(mats, []struct {
					dst        **tensor.Matrix
					name       string
					rows, cols int
				}{{&ly.wGate, "ffn_gate_shexp", F, H}, {&ly.wUp, "ffn_up_shexp", F, H}, {&ly.wDown, "ffn_down_shexp", H, F}}...)
				if ly.shexpGate, err = l.routerMatrix(p+"ffn_gate_inp_shexp.weight", 1, H); err != nil {
					return err
				}
			}
		}
		for _, mt := range mats {
			if *mt.dst, err = l.matrix(p+mt.name+".weight", mt.rows, mt.cols); err != nil {
				return err
			}
		}
		if ly.attnNorm, err = l.vector(p+"attn_norm.weight", H); err != nil {
			return err
		}
		if ly.ffnNorm, err = l.vector(p+m.fam.ffnNormName()+".weight", H); err != nil {
			return err
		}
		if m.fam.outBias {
			if ly.bo, err = l.vector(p+"attn_output.bias", H); err != nil {
				return err
			}
		}
		if m.fam.sinks {
			if ly.sinks, err = l.vector(p+"attn_sinks.weight", c.Heads); err != nil {
				return err
			}
			c.AttnSinks = true
		}
		if m.fam.postNorms {
			if ly.postAttn, err = l.vector(p+"post_attention_norm.weight", H); err != nil {
				return err
			}
			if ly.postFFN, err = l.vector(p+"post_ffw_norm.weight", H); err != nil {
				return err
			}
			c.PostNorms = true
		}
		if c.Window > 0 && c.LocalLayers[i] {
			ly.window = c.Window
		}
		qn, kn := c.HeadDim, c.HeadDim // rmsNormRows normalizes rows of the weight's length
		if m.fam.qkNormFull {
			qn, kn = qDim, kvDim
		}
		vecs := []struct {
			dst  *[]float32
			name string
			n    int
		}{{&ly.bq, "attn_q.bias", qDim}, {&ly.bk, "attn_k.bias", kvDim}, {&ly.bv, "attn_v.bias", kvDim},
			{&ly.qNorm, "attn_q_norm.weight", qn}, {&ly.kNorm, "attn_k_norm.weight", kn}}
		for _, v := range vecs {
			if *v.dst, err = l.optionalVector(p+v.name, v.n); err != nil {
				return err
			}
		}
		hasBias := ly.bq != nil || ly.bk != nil || ly.bv != nil
		hasNorm := ly.qNorm != nil || ly.kNorm != nil
		if i == 0 {
			c.QKVBias, c.QKNorm = hasBias, hasNorm
		}
		if hasBias != c.QKVBias || hasNorm != c.QKNorm || (hasNorm && (ly.qNorm == nil || ly.kNorm == nil)) {
			return fmt.Errorf("%s: layer %d: q/k/v biases or q/k norms differ from layer 0", l.src.path(), i)
		}
	}
	if m.fam.qkNorm && !c.QKNorm {
		return fmt.Errorf("%s: %s model without q/k norm weights (%s)", l.src.path(), c.Arch, nameFor(l.src, "blk.0.attn_q_norm.weight"))
	}
	l.finished()
	m.panel8 = l.counts[tensor.IQ4_XS] > 0
	m.rowBlock = defaultRowBlock
	m.gemm4 = l.counts[tensor.Q4_K] > 0 || l.counts[tensor.Q2_K] > 0
	var best int64
	for dt, n := range l.counts {
		if n > best {
			best, c.DType = n, dt.String()
		}
	}
	return nil
}

func (m *Model) initRope(context int) {
	c := &m.cfg
	if rs := c.RopeScaling; rs != nil && rs.Type == "longrope" {
		if context <= 0 {
			context = c.MaxPos
		}
		m.freqFactor = rs.ShortFactor
		if context > rs.OriginalMaxPos {
			m.freqFactor = rs.LongFactor
		}
		m.ropeMscale = rs.AttnFactor
	}
	m.ropeScale = float32(math.Pow(float64(float32(c.RopeTheta)), float64(float32(-2)/float32(c.RopeDim))))
	m.kqScale = c.AttnScale
	if c.QScale != 0 {
		m.kqScale = 1
	} else if m.kqScale == 0 {
		m.kqScale = 1 / float32(math.Sqrt(float64(c.HeadDim)))
	}
	m.freqScale = 1
	if rs := c.RopeScaling; rs != nil && (rs.Type == "linear" || rs.Type == "yarn") {
		m.freqScale = 1 / float32(rs.Factor) // rope_freq_scale_train = 1.0f/ropescale
	}
	m.ropeScaleL, m.freqScaleL = m.ropeScale, m.freqScale
	if c.RopeThetaLocal != 0 {
		m.ropeScaleL = float32(math.Pow(float64(float32(c.RopeThetaLocal)), float64(float32(-2)/float32(c.RopeDim))))
	}
	if c.LocalRopeUnscaled {
		m.freqScaleL = 1
	}
	m.localRope = c.Window > 0 && (m.ropeScaleL != m.ropeScale || m.freqScaleL != m.freqScale)
	if rs := c.RopeScaling; rs != nil && rs.Type == "yarn" {
		m.yarn = newYarn(c, m.freqScale)
	}
}

// Config returns the model's architecture.
func (m *Model) Config() Config { return m.cfg }

// Tokenizer returns the tokenizer (nil when loaded with NoTokenizer).
func (m *Model) Tokenizer() *tokenizer.Tokenizer { return m.tok }

// ChatTemplate returns the chat template ("" when none).
func (m *Model) ChatTemplate() string {
	if m.tok == nil {
		return ""
	}
	return m.tok.ChatTemplate()
}

// Threads is the number of worker threads of the forward pass.
func (m *Model) Threads() int { return m.ctx.Pool.Threads() }

// Close stops the workers and unmaps the weights; the model and any
// slices of its weights must not be used afterwards.
func (m *Model) Close() error {
	if m.ctx != nil {
		m.ctx.Close()
		m.ctx = nil
	}
	return m.closeFiles()
}

func (m *Model) closeFiles() error {
	var errs []string
	for _, c := range m.closers {
		if err := c.Close(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	m.closers = nil
	if len(errs) > 0 {
		return fmt.Errorf("model close: %s", strings.Join(errs, "; "))
	}
	return nil
}
