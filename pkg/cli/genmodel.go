package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lightllm-go/lightllm/pkg/model"
)

// newGenModelCmd writes a random-weight model (GGUF, and optionally the
// same model as a Hugging Face directory) for tests and benchmarks.
func newGenModelCmd() *cobra.Command {
	var o model.GenOptions
	var out, hfOut string
	cmd := &cobra.Command{
		Use:   "gen-model",
		Short: "Write a random-weight model (GGUF readable by llama.cpp, and optionally an HF directory)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" && hfOut == "" {
				return fmt.Errorf("gen-model: give --out FILE.gguf and/or --hf_out DIR")
			}
			if out != "" {
				if err := model.GenerateGGUF(out, o); err != nil {
					return err
				}
				fmt.Fprintln(cmd.ErrOrStderr(), "wrote", out)
			}
			if hfOut != "" {
				if err := model.GenerateHF(hfOut, o); err != nil {
					return err
				}
				fmt.Fprintln(cmd.ErrOrStderr(), "wrote", hfOut)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Arch, "arch", "llama", "architecture: "+strings.Join(model.Architectures(), ", "))
	f.IntVar(&o.Hidden, "hidden", 256, "hidden size")
	f.IntVar(&o.Layers, "layers", 2, "number of layers")
	f.IntVar(&o.Heads, "heads", 4, "attention heads")
	f.IntVar(&o.KVHeads, "kv_heads", 0, "key/value heads (0: same as --heads)")
	f.IntVar(&o.HeadDim, "head_dim", 0, "head dimension (0: hidden/heads)")
	f.IntVar(&o.FFN, "ffn", 512, "feed-forward size")
	f.IntVar(&o.Vocab, "vocab", 512, "vocabulary size (at least 260)")
	f.IntVar(&o.MaxPos, "max_pos", 2048, "context length")
	f.Float64Var(&o.YarnFactor, "yarn_factor", 0, "YaRN RoPE scaling factor (0: none)")
	f.IntVar(&o.YarnOrigCtx, "yarn_orig_ctx", 0, "YaRN: the trained context the factor extends (original_max_position_embeddings)")
	f.StringVar(&o.DType, "dtype", "f32", "weight type: f32, f16, bf16, q8_0, q4_0, q4_K, q5_K, or one of llama.cpp's mixes as llama-quantize writes them (q6_K output, more bits for some layers' attn_v/ffn_down/attn_output): q4_K_M, q5_K_M, q6_K, q3_K_M, q2_K, iq4_xs, iq4_nl, q4_1, q5_0, q5_1; mxfp4_moe (MXFP4 experts, q8_0 elsewhere: gpt-oss's GGUF layout), mxfp4_f16 (MXFP4 experts, f16 elsewhere: gpt-oss's released checkpoints, --hf_out writes their *_blocks/_scales)")
	f.Uint64Var(&o.Seed, "seed", 1, "random seed")
	f.BoolVar(&o.Tied, "tied", false, "share the output head with the embedding")
	f.Float64Var(&o.EmbedScale, "embedding_multiplier", 0, "granite: embedding multiplier (0: Granite 3.0's 12)")
	f.Float64Var(&o.ResidualScale, "residual_multiplier", 0, "granite: residual multiplier (0: 0.22)")
	f.Float64Var(&o.AttnScale, "attention_multiplier", 0, "granite: attention logit scale (0: 0.015625)")
	f.Float64Var(&o.LogitScale, "logits_scaling", 0, "granite: logits divisor (0: 8)")
	f.IntVar(&o.RopeDim, "rope_dim", 0, "rotated dimensions of each head (0: all; phi3 writes partial_rotary_factor)")
	f.IntVar(&o.RopeOrigMaxPos, "rope_orig_max_pos", 0, "phi3: LongRoPE with this original context (--max_pos the extended one; 0: none)")
	f.Float64Var(&o.RopeTheta, "rope_theta", 0, "RoPE base (0: 10000)")
	f.IntVar(&o.SlidingWindow, "sliding_window", 0, "gemma, gpt-oss: sliding-window size of the local layers (0: none; gpt-oss 128)")
	f.IntVar(&o.SWAPattern, "swa_pattern", 0, "gemma, gpt-oss: layer il is local iff il % N < N-1 (0: the family's, gemma3 6, gemma2 and gpt-oss 2)")
	f.Float64Var(&o.RopeThetaLocal, "rope_theta_local", 0, "gemma: RoPE base of the local layers (0: 10000)")
	f.Float64Var(&o.RopeLinear, "rope_linear", 0, "gemma3: linear RoPE scaling factor of the global layers (0: none)")
	f.Float64Var(&o.AttnSoftcap, "attn_softcap", 0, "gemma2: attention logit soft-cap (0: 50)")
	f.Float64Var(&o.FinalSoftcap, "final_softcap", 0, "gemma2: final logit soft-cap (0: 30)")
	f.IntVar(&o.Experts, "experts", 0, "MoE families (mixtral, qwen2moe, qwen3moe, olmoe, gpt-oss): number of experts (0: 8)")
	f.IntVar(&o.ExpertsUsed, "experts_used", 0, "MoE families: experts used per token (0: 2)")
	f.IntVar(&o.SharedFFN, "shared_ffn", 0, "qwen2moe: width of the shared expert (0: 2 x --ffn)")
	f.StringVar(&out, "out", "", "GGUF file to write")
	f.StringVar(&hfOut, "hf_out", "", "Hugging Face directory to write (quantized types are stored as f32)")
	f.StringVar(&o.Tokenizer, "tokenizer", "", "Hugging Face tokenizer directory to carry (tokenizer.json, tokenizer_config.json with its chat template); sets the vocabulary size (--hf_out only)")
	return cmd
}
