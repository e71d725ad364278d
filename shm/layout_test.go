package shm

import (
	"bufio"
	"encoding/binary"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestLayoutSizes pins the struct sizes to the constants the header records.
func TestLayoutSizes(t *testing.T) {
	var (
		h  Header
		q  Req
		rs RoleState
		ld Load
		rh RingHeader
		re RingEntry
		te TopEntry
		ta TopAlt
	)
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"Header", unsafe.Sizeof(h), HeaderSize},
		{"TopEntry", unsafe.Sizeof(te), TopEntrySize},
		{"TopAlt", unsafe.Sizeof(ta), TopAltSize},
		{"Req", unsafe.Sizeof(q), SlotSize},
		{"RoleState", unsafe.Sizeof(rs), RoleStateSize},
		{"Load", unsafe.Sizeof(ld), LoadSize},
		{"RingHeader", unsafe.Sizeof(rh), RingHeaderSize},
		{"RingEntry", unsafe.Sizeof(re), RingEntrySize},
	} {
		if c.got != c.want {
			t.Errorf("sizeof(%s) = %d, want %d", c.name, c.got, c.want)
		}
	}
	if got := binary.LittleEndian.Uint64([]byte("LLMGOSHM")); got != Magic {
		t.Errorf("Magic = %#x, want %#x (\"LLMGOSHM\")", Magic, got)
	}
}

// TestLayoutOffsets checks the fields other roles depend on most with
// unsafe.Offsetof, independently of the doc tables.
func TestLayoutOffsets(t *testing.T) {
	var (
		h  Header
		q  Req
		rh RingHeader
		re RingEntry
	)
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"Header.Magic", unsafe.Offsetof(h.Magic), 0},
		{"Header.Version", unsafe.Offsetof(h.Version), 8},
		{"Header.FileSize", unsafe.Offsetof(h.FileSize), 16},
		{"Header.Slots", unsafe.Offsetof(h.Slots), 24},
		{"Header.RingOff", unsafe.Offsetof(h.RingOff), 72},
		{"Header.Load", unsafe.Offsetof(h.Load), 96},
		{"Header.Roles", unsafe.Offsetof(h.Roles), 160},
		{"Header.LogprobsOff", unsafe.Offsetof(h.LogprobsOff), 416},
		{"Header.TopEntrySize", unsafe.Offsetof(h.TopEntrySize), 436},
		{"Req.TopLogprobs", unsafe.Offsetof(q.TopLogprobs), 176},
		{"Req.TopRead", unsafe.Offsetof(q.TopRead), 180},
		{"Req.NumBannedTokenIDs", unsafe.Offsetof(q.NumBannedTokenIDs), 184},
		{"Req.BannedTokenIDs", unsafe.Offsetof(q.BannedTokenIDs), 188},
		{"Req.DecayStart", unsafe.Offsetof(q.DecayStart), 228},
		{"Req.DecayFactor", unsafe.Offsetof(q.DecayFactor), 232},
		{"Req.ExtrasLen", unsafe.Offsetof(q.ExtrasLen), 236},
		{"Req.ExtrasOff", unsafe.Offsetof(q.ExtrasOff), 240},
		{"Header.ExtrasOff", unsafe.Offsetof(h.ExtrasOff), 440},
		{"Header.ExtrasBytes", unsafe.Offsetof(h.ExtrasBytes), 448},
		{"Header.IntakeOff", unsafe.Offsetof(h.IntakeOff), 456},
		{"Header.DetokIntakeOff", unsafe.Offsetof(h.DetokIntakeOff), 464},
		{"Req.StateGen", unsafe.Offsetof(q.StateGen), 0},
		{"Req.PromptLen", unsafe.Offsetof(q.PromptLen), 48},
		{"Req.Abort", unsafe.Offsetof(q.Abort), 92},
		{"Req.CandetokenOutLen", unsafe.Offsetof(q.CandetokenOutLen), 104},
		{"Req.TextHead", unsafe.Offsetof(q.TextHead), 152},
		{"Req.TextTail", unsafe.Offsetof(q.TextTail), 160},
		{"Req.StopTokenIDs", unsafe.Offsetof(q.StopTokenIDs), 256},
		{"RingHeader.DataSeq", unsafe.Offsetof(rh.DataSeq), 16},
		{"RingEntry.Seq", unsafe.Offsetof(re.Seq), 0},
		{"RingEntry.Arg", unsafe.Offsetof(re.Arg), 20},
	} {
		if c.got != c.want {
			t.Errorf("offsetof(%s) = %d, want %d", c.name, c.got, c.want)
		}
	}
}

// docRow is one "offset size field" line of a layout.go doc-comment table.
type docRow struct {
	offset, size uintptr
	field        string
}

// parseDocTables reads the tables in layout.go's doc comments, keyed by the
// struct they precede.
func parseDocTables(t *testing.T) map[string][]docRow {
	t.Helper()
	f, err := os.Open("layout.go")
	if err != nil {
		t.Fatalf("open layout.go: %v", err)
	}
	defer f.Close()
	tables := map[string][]docRow{}
	var rows []docRow
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "type "); ok {
			name, _, _ = strings.Cut(name, " ")
			if rows != nil {
				tables[name] = rows
			}
			rows = nil
			continue
		}
		body, ok := strings.CutPrefix(line, "//\t")
		if !ok {
			if !strings.HasPrefix(line, "//") {
				rows = nil
			}
			continue
		}
		fs := strings.Fields(body)
		if len(fs) < 3 {
			continue
		}
		off, err1 := strconv.Atoi(fs[0])
		size, err2 := strconv.Atoi(fs[1])
		if err1 != nil || err2 != nil {
			continue // the heading row
		}
		name, _, _ := strings.Cut(fs[2], "[")
		rows = append(rows, docRow{uintptr(off), uintptr(size), name})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return tables
}

// TestLayoutDocTables checks each doc-comment table against the compiled
// structs: every named field at its documented offset and size, every
// field documented, and the rows tiling the struct without gaps.
func TestLayoutDocTables(t *testing.T) {
	tables := parseDocTables(t)
	for _, typ := range []reflect.Type{
		reflect.TypeFor[Header](), reflect.TypeFor[Load](), reflect.TypeFor[RoleState](),
		reflect.TypeFor[Req](), reflect.TypeFor[RingHeader](), reflect.TypeFor[RingEntry](),
		reflect.TypeFor[TopEntry](), reflect.TypeFor[TopAlt](),
	} {
		rows, ok := tables[typ.Name()]
		if !ok {
			t.Errorf("%s: no doc table in layout.go", typ.Name())
			continue
		}
		next := uintptr(0)
		documented := map[string]bool{}
		for _, r := range rows {
			if r.offset != next {
				t.Errorf("%s: row %q at %d, previous row ended at %d", typ.Name(), r.field, r.offset, next)
			}
			next = r.offset + r.size
			if strings.HasPrefix(r.field, "(") {
				continue // reserved
			}
			documented[r.field] = true
			sf, ok := typ.FieldByName(r.field)
			if !ok {
				t.Errorf("%s: doc names %q, no such field", typ.Name(), r.field)
				continue
			}
			if sf.Offset != r.offset || sf.Type.Size() != r.size {
				t.Errorf("%s.%s: doc says offset %d size %d, struct has %d %d",
					typ.Name(), r.field, r.offset, r.size, sf.Offset, sf.Type.Size())
			}
		}
		if next != typ.Size() {
			t.Errorf("%s: doc rows cover %d bytes, struct is %d", typ.Name(), next, typ.Size())
		}
		for i := range typ.NumField() {
			if f := typ.Field(i); f.Name != "_" && !documented[f.Name] {
				t.Errorf("%s.%s is not in the doc table", typ.Name(), f.Name)
			}
		}
	}
}

func TestComputeLayout(t *testing.T) {
	for name, s := range map[string]Sizes{
		"tiny":    {Slots: 1, MaxReqTotalLen: 1, TextQueueBytes: 64, RingEntries: 4, TopRingEntries: 1, ExtrasBytes: MinExtrasBytes},
		"default": Sizes{Slots: 1000, MaxReqTotalLen: 16384}.withDefaults(),
		"max":     {Slots: MaxSlots, MaxReqTotalLen: 1 << 14, TextQueueBytes: 4096, RingEntries: MaxRingEntries, TopRingEntries: 256, ExtrasBytes: MaxExtrasBytes},
	} {
		t.Run(name, func(t *testing.T) {
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			l, err := computeLayout(s)
			if err != nil {
				t.Fatal(err)
			}
			for _, off := range []uint64{l.SlotsOff, l.TokensOff, l.LogprobsOff, l.TextOff, l.TopOff, l.RingOff, l.IntakeOff, l.DetokIntakeOff, l.ExtrasOff} {
				if off%sectionAlign != 0 {
					t.Errorf("offset %d not %d-aligned", off, sectionAlign)
				}
			}
			if got, all := s.PerSlotBytes()*uint64(s.Slots), l.RingOff-l.SlotsOff; got > all || all-got > 6*sectionAlign {
				t.Errorf("PerSlotBytes × slots = %d, the sections between take %d", got, all)
			}
			tok := uint64(s.Slots) * uint64(s.MaxReqTotalLen) * 4
			if l.TokensOff < l.SlotsOff+uint64(s.Slots)*SlotSize ||
				l.LogprobsOff < l.TokensOff+tok ||
				l.TextOff < l.LogprobsOff+tok ||
				l.TopOff < l.TextOff+uint64(s.Slots)*uint64(s.TextQueueBytes) ||
				l.RingOff < l.TopOff+uint64(s.Slots)*uint64(s.TopRingEntries)*TopEntrySize ||
				l.IntakeOff < l.RingOff+RingHeaderSize+uint64(s.RingEntries)*RingEntrySize ||
				l.DetokIntakeOff < l.IntakeOff+RingHeaderSize+uint64(s.RingEntries)*RingEntrySize ||
				l.ExtrasOff < l.DetokIntakeOff+RingHeaderSize+uint64(s.RingEntries)*RingEntrySize ||
				l.FileSize < l.ExtrasOff+uint64(s.ExtrasBytes) {
				t.Errorf("sections overlap: %+v", l)
			}
		})
	}
	if _, err := computeLayout(Sizes{Slots: MaxSlots, MaxReqTotalLen: MaxReqTotalLenCap, TextQueueBytes: 64, RingEntries: 4, TopRingEntries: 1, ExtrasBytes: MinExtrasBytes}); err == nil {
		t.Error("a 1 TiB layout was accepted")
	}
}
