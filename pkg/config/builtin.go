package config

import "github.com/lightllm-go/lightllm/pkg/model/builtin"

// builtinInfo describes a builtin model from its table entry: the weights
// are f32 and built by each role that needs them.
func builtinInfo(spec string) (*ModelInfo, error) {
	s, err := builtin.Lookup(spec)
	if err != nil {
		return nil, err
	}
	return &ModelInfo{
		Format: FormatBuiltin, Path: spec, Arch: s.Arch, ContextLength: s.MaxPos,
		NumLayers: s.Layers, NumHeads: s.Heads, NumKVHeads: s.KVHeads, HeadDim: s.HeadDim(),
		HiddenSize: s.Hidden, EOS: []int{s.EOS}, DType: "fp32",
	}, nil
}
