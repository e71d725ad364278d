package pipeline

import (
	"encoding/json"
	"fmt"
)

// SlotRef names one request slot: its index and the generation it had when
// the message was written, so a message about a slot since reused is
// recognised as stale.
type SlotRef struct {
	Index uint32 `json:"i"`
	Gen   uint32 `json:"g"`
}

// Group is LightLLM's GroupReqIndexes: the slots of one request group
// (n/best_of sequences over one prompt), in sequence order.
type Group struct {
	ID    uint64    `json:"id"`
	Slots []SlotRef `json:"slots"`
	// ArrivalUnixNano is when the HTTP request arrived.
	ArrivalUnixNano int64 `json:"t"`
}

// maxGroupSlots bounds a decoded group (LightLLM's MAX_BEST_OF is 8).
const maxGroupSlots = 64

// Marshal encodes the message.
func (g *Group) Marshal() ([]byte, error) {
	b, err := json.Marshal(g)
	if err != nil {
		return nil, fmt.Errorf("encode group %d: %w", g.ID, err)
	}
	return b, nil
}

// UnmarshalGroup decodes and checks a message.
func UnmarshalGroup(b []byte) (Group, error) {
	var g Group
	if err := json.Unmarshal(b, &g); err != nil {
		return Group{}, fmt.Errorf("decode group message: %w", err)
	}
	if len(g.Slots) == 0 || len(g.Slots) > maxGroupSlots {
		return Group{}, fmt.Errorf("group %d: %d slots, want 1..%d", g.ID, len(g.Slots), maxGroupSlots)
	}
	return g, nil
}
