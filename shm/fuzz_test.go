package shm

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// FuzzAttach feeds arbitrary file contents to AttachFile and, when a file is
// accepted, runs every recovery and read path over it: none may panic or
// fault, whatever the bytes (go test -fuzz=FuzzAttach ./shm).
func FuzzAttach(f *testing.F) {
	seedDir := f.TempDir()
	for i, s := range []Sizes{
		{Slots: 1, MaxReqTotalLen: 1, TextQueueBytes: 64, RingEntries: 4},
		{Slots: 2, MaxReqTotalLen: 16, TextQueueBytes: 64, RingEntries: 4},
	} {
		r, err := Create(CreateOptions{BaseDir: seedDir, Instance: "seed" + string(rune('a'+i)), Sizes: s})
		if err != nil {
			f.Fatal(err)
		}
		// Give the seed live content: a running request with text queued
		// and a command in the ring.
		sl, gen, _ := r.Alloc(1)
		sl.Fill(gen, Request{Prompt: []int32{1}, Params: Params{MaxNewTokens: 0}})
		sl.Transition(gen, StateAllocated, StateQueued)
		sl.PushText(TextPiece{Text: []byte("ab"), Final: true})
		r.Commands().Push(Command{Op: OpNew, Slot: 0, Gen: gen})
		data, err := os.ReadFile(r.Path())
		if err != nil {
			f.Fatal(err)
		}
		r.Destroy()
		f.Add(data)
		// The same file with a few header words pre-damaged.
		bad := append([]byte(nil), data...)
		binary.LittleEndian.PutUint32(bad[24:], 3)
		f.Add(bad)
	}
	f.Add([]byte{})
	f.Add(make([]byte, HeaderSize))

	// On tmpfs: rewriting a disk file whose pages a previous iteration
	// dirtied through its mapping waits for writeback and stalls the fuzzer.
	dir := testBase(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "state")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := AttachFile(path)
		if err != nil {
			return
		}
		defer r.Close()
		exercise(r)
	})
}

// exercise runs every reader and recovery path a role would after attach.
func exercise(r *Region) {
	_ = r.Validate()
	_ = r.RecoverSlots(7)
	var buf []byte
	for i := range r.NumSlots() {
		s, _ := r.Slot(i)
		_ = s.Validate()
		_, _ = s.Prompt()
		_, _ = s.Sequence()
		_, _ = s.Outputs()
		_ = s.Params()
		_ = s.TextQueued()
		for range 4 {
			p, ok, err := s.PopText(buf)
			if !ok || err != nil {
				break
			}
			buf = p.Text
		}
		_ = s.PushText(TextPiece{Text: []byte("x")})
		_ = s.SetOutput(0, 1)
		_ = s.Publish(1, FinishStop)
	}
	q := r.Commands()
	_ = q.Len()
	for range q.Cap() + 1 {
		if _, ok, _ := q.Pop(); !ok {
			break
		}
	}
	_, _ = q.Push(Command{Op: OpAbort, Slot: 0})
	for _, role := range []Role{RoleInfer, Role(200)} {
		if rs, err := r.Role(role); err == nil {
			rs.Bell().Ring()
			rs.Beat()
		}
	}
	if s, gen, err := r.Alloc(7); err == nil {
		_ = s.Release(gen)
	}
}
