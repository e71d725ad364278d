package tokenizer

import (
	"encoding/json"
	"fmt"
)

// FromJSON builds a tokenizer from the bytes of a tokenizer.json and the
// parsed tokenizer_config.json (zero Config when there is none).
func FromJSON(data []byte, cfg Config) (*Tokenizer, error) {
	var f hfFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parse tokenizer.json: %w", err)
	}
	model, err := parseModel(f.Model)
	if err != nil {
		return nil, err
	}
	t := &Tokenizer{bos: -1, eos: -1, unk: -1, pad: -1, chatTemplate: cfg.ChatTemplate}

	size := 0
	for _, id := range model.Vocab {
		size = max(size, int(id)+1)
	}
	for _, a := range f.AddedTokens {
		size = max(size, int(a.ID)+1)
	}
	vocab, byID := make([]string, size), make(map[string]int32, size)
	t.known, t.special = make([]bool, size), make([]bool, size)
	for s, id := range model.Vocab {
		if id < 0 {
			return nil, fmt.Errorf("vocab: negative id %d for %q", id, s)
		}
		vocab[id], t.known[id] = s, true
		byID[s] = id
	}

	if t.norm, err = parseNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	var byteLevel bool
	if t.pre, byteLevel, err = parsePreTokenizer(f.PreTokenizer); err != nil {
		return nil, err
	}
	t.bl = newByteLevelMap()
	if t.dec, err = parseDecoder(f.Decoder, t.bl); err != nil {
		return nil, err
	}
	if !byteLevel {
		t.bl = nil // TokenBytes then reads ▁ / <0xXX> forms
	}
	if t.bpe, err = newBPEFromHF(model, t.bl); err != nil {
		return nil, err
	}

	var raw, normed []addedToken
	for _, a := range f.AddedTokens {
		if a.ID < 0 {
			return nil, fmt.Errorf("added token %q: negative id", a.Content)
		}
		vocab[a.ID], t.known[a.ID], t.special[a.ID] = a.Content, true, a.Special
		byID[a.Content] = a.ID
		at := addedToken{id: a.ID, content: a.Content, special: a.Special, lstrip: a.LStrip,
			rstrip: a.RStrip, normalized: a.Normalized, singleWord: a.SingleWord}
		if a.Normalized && t.norm != nil {
			at.content = t.norm.normalize(a.Content)
			normed = append(normed, at)
		} else {
			raw = append(raw, at)
		}
	}
	t.added, t.addedNorm = newAddedMatcher(raw), newAddedMatcher(normed)
	t.vocab, t.byID = newStrList(vocab), newStrIndex(byID)

	lookup := func(s string) (int32, bool) {
		id, ok := t.byID.get(s)
		return id, ok && s != ""
	}
	t.bos, t.eos, t.pad = lookupOr(lookup, cfg.BOSToken), lookupOr(lookup, cfg.EOSToken), lookupOr(lookup, cfg.PADToken)
	t.unk = lookupOr(lookup, cfg.UNKToken)
	if model.UnkToken != nil {
		t.unk = lookupOr(lookup, *model.UnkToken)
	}
	prefix, suffix, found, err := parsePostProcessor(f.PostProcessor, lookup)
	if err != nil {
		return nil, err
	}
	if t.bos < 0 && len(prefix) == 1 {
		t.bos = prefix[0]
	}
	switch {
	case usesConfigFlags(cfg.TokenizerClass):
		// transformers rebuilds the template from the flags (defaults: BOS only).
		prefix, suffix = flagIDs(deref(cfg.AddBOS, true), t.bos), flagIDs(deref(cfg.AddEOS, false), t.eos)
	case !found:
		prefix, suffix = flagIDs(deref(cfg.AddBOS, false), t.bos), flagIDs(deref(cfg.AddEOS, false), t.eos)
	}
	t.prefixIDs, t.suffixIDs = prefix, suffix
	modelTokens := make([]string, 0, len(model.Vocab))
	for s := range model.Vocab {
		modelTokens = append(modelTokens, s)
	}
	t.splitMeta = t.pre == nil && metaSplitSafe(modelTokens, nil)
	t.cache = newWordCache()
	return t, nil
}

// parseModel reads the model section; only BPE is supported.
func parseModel(raw json.RawMessage) (hfModel, error) {
	var head struct {
		Type   string          `json:"type"`
		Merges json.RawMessage `json:"merges"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return hfModel{}, fmt.Errorf("model: %w", err)
	}
	if head.Type != "BPE" && !(head.Type == "" && head.Merges != nil) {
		return hfModel{}, fmt.Errorf("%w: model %q (only BPE)", ErrUnsupported, head.Type)
	}
	var m hfModel
	if err := json.Unmarshal(raw, &m); err != nil {
		return hfModel{}, fmt.Errorf("model: %w", err)
	}
	if m.Dropout != nil && *m.Dropout > 0 {
		return hfModel{}, fmt.Errorf("%w: BPE dropout %v", ErrUnsupported, *m.Dropout)
	}
	return m, nil
}

func deref(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

func flagIDs(on bool, id int32) []int32 {
	if on && id >= 0 {
		return []int32{id}
	}
	return nil
}

func lookupOr(lookup func(string) (int32, bool), s string) int32 {
	if id, ok := lookup(s); ok {
		return id
	}
	return -1
}

// newBPEFromHF builds the BPE model; bl is non-nil for byte-level models.
func newBPEFromHF(hm hfModel, bl *byteLevelMap) (*bpeModel, error) {
	pairs, err := parseMerges(hm.Merges)
	if err != nil {
		return nil, err
	}
	m := &bpeModel{
		vocab:        newStrIndex(hm.Vocab),
		unk:          -1,
		byteFallback: hm.ByteFallback,
		fuseUnk:      hm.FuseUnk,
		ignoreMerges: hm.IgnoreMerges,
		bl:           bl,
	}
	if hm.ContinuingSubwordPrefix != nil {
		m.contPrefix = *hm.ContinuingSubwordPrefix
	}
	if hm.EndOfWordSuffix != nil {
		m.endSuffix = *hm.EndOfWordSuffix
	}
	if hm.UnkToken != nil {
		id, ok := hm.Vocab[*hm.UnkToken]
		if !ok {
			return nil, fmt.Errorf("model: unk_token %q not in vocab", *hm.UnkToken)
		}
		m.unk = id
	}
	mb := newMergeBuilder(len(pairs))
	for rank, p := range pairs {
		a, okA := hm.Vocab[p[0]]
		b, okB := hm.Vocab[p[1]]
		if !okA || !okB {
			return nil, fmt.Errorf("merge %d %q %q: token not in vocab", rank, p[0], p[1])
		}
		merged := m.contPrefixStrip(p[1])
		n, ok := hm.Vocab[p[0]+merged]
		if !ok {
			return nil, fmt.Errorf("merge %d %q %q: result not in vocab", rank, p[0], p[1])
		}
		mb.add(a, b, bpeMerge{rank: int32(rank), newID: n})
	}
	m.merges = mb.build()
	m.setByteTables(bl)
	return m, nil
}

// contPrefixStrip drops the continuing-subword prefix of a merge's right
// side: HF names the merged token a + b[len(prefix):].
func (m *bpeModel) contPrefixStrip(b string) string {
	if m.contPrefix != "" && len(b) >= len(m.contPrefix) && b[:len(m.contPrefix)] == m.contPrefix {
		return b[len(m.contPrefix):]
	}
	return b
}

// setByteTables fills the per-byte lookups: byte-level symbol ids (and the
// raw-bytes vocabulary ignore_merges needs) and <0xXX> fallback ids.
func (m *bpeModel) setByteTables(bl *byteLevelMap) {
	for b := 0; b < 256; b++ {
		m.fallbackID[b] = -1
		if id, ok := m.vocab.get(fmt.Sprintf("<0x%02X>", b)); ok {
			m.fallbackID[b] = id
		}
	}
	if bl == nil {
		return
	}
	m.byteLevel = true
	m.byteFast = m.contPrefix == "" && m.endSuffix == ""
	for b := 0; b < 256; b++ {
		id, ok := m.vocab.get(string(bl.toRune[b]))
		if !ok {
			// A byte missing from the vocabulary goes the general way (unk).
			m.byteFast = false
			continue
		}
		m.byteToID[b] = id
	}
	if m.ignoreMerges {
		raw := make(map[string]int32, len(m.vocab.val))
		m.vocab.each(func(s string, id int32) {
			if b, ok := bl.decode(s); ok {
				raw[string(b)] = id
			}
		})
		m.rawToID = newStrIndex(raw)
	}
}
