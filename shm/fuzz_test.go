package shm

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/sampler"
)

// FuzzAttach feeds damaged region files to AttachFile and, when a file is
// accepted, runs every recovery and read path over it: none may panic or
// fault, whatever the bytes (go test -fuzz=FuzzAttach ./shm). With raw set
// the input is the whole file; otherwise it is pasted at offset off into a
// valid live region, so that most inputs pass attach and exercise the
// slot, text-queue and ring validation instead.
func FuzzAttach(f *testing.F) {
	seedDir := f.TempDir()
	var template []byte
	for i, s := range []Sizes{
		{Slots: 2, MaxReqTotalLen: 16, TextQueueBytes: 64, RingEntries: 4},
		{Slots: 1, MaxReqTotalLen: 1, TextQueueBytes: 64, RingEntries: 4},
	} {
		r, err := Create(CreateOptions{BaseDir: seedDir, Instance: "seed" + string(rune('a'+i)), Sizes: s})
		if err != nil {
			f.Fatal(err)
		}
		// Live content: a running request with text queued, a command in
		// the ring and an announcement in both intake rings.
		sl, gen, _ := r.Alloc(1)
		sl.Fill(gen, Request{Prompt: []int32{1}, Params: sampler.Params{MaxNewTokens: 0}})
		sl.Transition(gen, StateAllocated, StateQueued)
		sl.PushText(TextPiece{Text: []byte("ab"), Final: true})
		r.Commands().Push(Command{Op: OpNew, Slot: 0, Gen: gen})
		r.Intake().Announce([]SlotGen{{Slot: 0, Gen: gen}})
		r.DetokIntake().Announce([]SlotGen{{Slot: 0, Gen: gen}})
		data, err := os.ReadFile(r.Path())
		if err != nil {
			f.Fatal(err)
		}
		r.Destroy()
		if template == nil {
			template = data
		}
		f.Add(data, uint16(0), true)
		bad := append([]byte(nil), data...)
		binary.LittleEndian.PutUint32(bad[24:], 3)
		f.Add(bad, uint16(0), true)
	}
	f.Add([]byte{}, uint16(0), true)
	f.Add(make([]byte, HeaderSize), uint16(0), true)
	for _, off := range []uint16{HeaderSize, HeaderSize + 96, HeaderSize + 152, 4000} {
		f.Add([]byte{0xff, 0xff, 0xff, 0x7f, 9, 9, 9, 9}, off, false)
	}

	// On tmpfs: rewriting a disk file whose pages a previous iteration
	// dirtied through its mapping waits for writeback and stalls the fuzzer.
	dir := testBase(f)
	f.Fuzz(func(t *testing.T, data []byte, off uint16, raw bool) {
		file := data
		if !raw {
			file = append([]byte(nil), template...)
			copy(file[int(off)%len(file):], data)
		}
		path := filepath.Join(dir, "state")
		if err := os.WriteFile(path, file, 0o600); err != nil {
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
	_, _ = q.Push(Command{Op: OpNew, Slot: 0})
	for _, in := range []*Intake{r.Intake(), r.DetokIntake()} {
		in.Take(nil)
		in.now = func() time.Time { return time.Now().Add(time.Hour) } // every hole has timed out
		in.Take(nil)
		in.Take(nil)
		_ = in.Announce([]SlotGen{{Slot: 0}, {Slot: 0}})
		in.Take(nil)
	}
	for _, role := range []Role{RoleInfer, Role(200)} {
		if rs, err := r.Role(role); err == nil {
			r.Bell(rs).Ring()
			rs.Beat()
		}
	}
	if s, gen, err := r.Alloc(7); err == nil {
		_ = s.Release(gen)
	}
}
