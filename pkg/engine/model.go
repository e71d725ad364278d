package engine

import "github.com/lightllm-go/lightllm/pkg/model"

// The engine drives any Forwarder: *model.Model is the real one,
// enginetest.FakeModel the test double. The batch types are pkg/model's.
type (
	Batch       = model.Batch
	Seq         = model.Seq
	KV          = model.KV
	ModelConfig = model.Config
)

// Forwarder is what the engine needs from a model.
type Forwarder interface {
	Config() ModelConfig
	// NewKV allocates K/V storage for slots token slots.
	NewKV(slots int) *KV
	// Forward runs one batch; logits[i] (len Vocab) receives the logits of
	// Seqs[i] when Seqs[i].WantLogits.
	Forward(b *Batch, kv *KV, logits [][]float32) error
}

// WindowedKVer is a model whose sliding-window (local) layers can keep
// K/V for the last LocalWindow positions of a sequence only, in a store of
// their own (model.Model.NewWindowKV; Seq.Local). The engine then frees a
// position's local slot once no later token's window reaches it (kv.go).
type WindowedKVer interface {
	// LocalWindow is the longest local window (0: no local layers).
	LocalWindow() int
	// NewWindowKV allocates slots global and up to slots local slots.
	NewWindowKV(slots int) *KV
}

var (
	_ Forwarder    = (*model.Model)(nil)
	_ WindowedKVer = (*model.Model)(nil)
)
