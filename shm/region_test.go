package shm

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// testBase returns a fresh base directory, on /dev/shm when it is usable so
// that tests exercise tmpfs like production.
func testBase(t testing.TB) string {
	t.Helper()
	if dir, err := os.MkdirTemp(DefaultBaseDir, "shmtest-"); err == nil {
		t.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return t.TempDir()
}

var smallSizes = Sizes{Slots: 4, MaxReqTotalLen: 64, TextQueueBytes: 128, RingEntries: 8}

func newTestRegion(t testing.TB, s Sizes) *Region {
	t.Helper()
	r, err := Create(CreateOptions{BaseDir: testBase(t), Instance: "t", Sizes: s})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { r.Destroy() })
	return r
}

// futexOnly makes r's bells sleep on the futex alone (tests of that path);
// bells taken before keep the pipes.
func (r *Region) futexOnly() {
	r.pipes.close()
	r.pipes, r.ring.pipes = nil, nil
}

func TestCreateAttachDestroy(t *testing.T) {
	base := testBase(t)
	r, err := Create(CreateOptions{BaseDir: base, Instance: "i1", Sizes: smallSizes})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Create(CreateOptions{BaseDir: base, Instance: "i1", Sizes: smallSizes}); !errors.Is(err, ErrExists) {
		t.Fatalf("second create: %v, want ErrExists", err)
	}
	a, err := Attach(base, "i1")
	if err != nil {
		t.Fatal(err)
	}
	if a.Sizes() != r.Sizes() {
		t.Fatalf("attached sizes %+v, created %+v", a.Sizes(), r.Sizes())
	}
	// Two mappings of the same file see each other's stores.
	r.Load().FreeKVTokens.Store(1234)
	if got := a.Load().FreeKVTokens.Load(); got != 1234 {
		t.Fatalf("attached mapping sees %d, want 1234", got)
	}
	s, gen, err := r.Alloc(1)
	if err != nil {
		t.Fatal(err)
	}
	as, _ := a.Slot(s.Index)
	if st, g := as.Load(); st != StateAllocated || g != gen {
		t.Fatalf("attached slot %v/%d, want allocated/%d", st, g, gen)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Destroy(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(base, "lightllm-i1")); !os.IsNotExist(err) {
		t.Fatalf("instance dir still there after Destroy: %v", err)
	}
	if _, err := Attach(base, "i1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("attach after destroy: %v, want ErrNotFound", err)
	}
}

func TestCreateReplace(t *testing.T) {
	base := testBase(t)
	r1, err := Create(CreateOptions{BaseDir: base, Instance: "x", Sizes: smallSizes})
	if err != nil {
		t.Fatal(err)
	}
	r1.Load().Running.Store(7)
	r1.Close()
	r2, err := Create(CreateOptions{BaseDir: base, Instance: "x", Sizes: smallSizes, Replace: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Destroy()
	if got := r2.Load().Running.Load(); got != 0 {
		t.Fatalf("replaced region kept old state: running=%d", got)
	}
}

func TestInstanceNames(t *testing.T) {
	for name, ok := range map[string]bool{
		"8080": true, "prod-a.1": true, "": false, "../x": false, "a/b": false, ".hidden": false,
		"x y": false, string(make([]byte, 65)): false,
	} {
		_, err := InstanceDir("/dev/shm", name)
		if (err == nil) != ok {
			t.Errorf("InstanceDir(%q): err=%v, want ok=%v", name, err, ok)
		}
	}
}

func TestCreateBadSizes(t *testing.T) {
	for name, s := range map[string]Sizes{
		"no slots":       {MaxReqTotalLen: 16},
		"no tokens":      {Slots: 1},
		"odd text queue": {Slots: 1, MaxReqTotalLen: 16, TextQueueBytes: 100},
		"tiny ring":      {Slots: 1, MaxReqTotalLen: 16, RingEntries: 2},
		"too many slots": {Slots: MaxSlots + 1, MaxReqTotalLen: 16},
	} {
		if _, err := Create(CreateOptions{BaseDir: t.TempDir(), Instance: "b", Sizes: s}); err == nil {
			t.Errorf("%s: created", name)
		}
	}
}

// TestAttachBadFiles damages a valid file in each way a crash, a stale
// binary or a stray file could, and expects a specific error, not a crash.
func TestAttachBadFiles(t *testing.T) {
	put32 := func(off int64, v uint32) func(*os.File) error {
		return func(f *os.File) error {
			var b [4]byte
			binary.LittleEndian.PutUint32(b[:], v)
			_, err := f.WriteAt(b[:], off)
			return err
		}
	}
	put64 := func(off int64, v uint64) func(*os.File) error {
		return func(f *os.File) error {
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], v)
			_, err := f.WriteAt(b[:], off)
			return err
		}
	}
	truncate := func(n int64) func(*os.File) error { return func(f *os.File) error { return f.Truncate(n) } }
	grow := func(f *os.File) error {
		st, err := f.Stat()
		if err != nil {
			return err
		}
		return f.Truncate(st.Size() + 4096)
	}
	for _, c := range []struct {
		name   string
		damage func(*os.File) error
		want   error
	}{
		{"bad magic", put64(0, 0xdeadbeef), ErrBadMagic},
		{"zero magic", put64(0, 0), ErrNotReady},
		{"newer version", put32(8, LayoutVersion+1), ErrVersion},
		{"header size", put32(12, 512), ErrLayout},
		{"slot size", put32(40, 128), ErrLayout},
		{"more slots", put32(24, 8), ErrLayout},
		{"zero slots", put32(24, 0), ErrLayout},
		{"huge slots", put32(24, 1<<31), ErrLayout},
		{"huge tokens", put32(28, 1<<31), ErrLayout},
		{"ring offset", put64(72, 1<<40), ErrLayout},
		{"file size field", put64(16, 1<<20), ErrSize},
		{"truncated body", truncate(HeaderSize + 100), ErrSize},
		{"truncated header", truncate(100), ErrTruncated},
		{"empty", truncate(0), ErrTruncated},
		{"grown", grow, ErrSize},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := testBase(t)
			r, err := Create(CreateOptions{BaseDir: base, Instance: "bad", Sizes: smallSizes})
			if err != nil {
				t.Fatal(err)
			}
			path := r.Path()
			r.Close()
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.damage(f); err != nil {
				t.Fatal(err)
			}
			f.Close()
			a, err := Attach(base, "bad")
			if !errors.Is(err, c.want) {
				if a != nil {
					a.Close()
				}
				t.Fatalf("attach: %v, want %v", err, c.want)
			}
		})
	}
	t.Run("directory", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, "state"), 0o700); err != nil {
			t.Fatal(err)
		}
		if _, err := AttachFile(filepath.Join(dir, "state")); err == nil {
			t.Fatal("attached a directory")
		}
	})
}

func TestRoles(t *testing.T) {
	r := newTestRegion(t, smallSizes)
	e1, err := r.BeginEpoch(RoleInfer)
	if err != nil {
		t.Fatal(err)
	}
	e2, _ := r.BeginEpoch(RoleInfer)
	if e2 != e1+1 {
		t.Fatalf("epochs %d then %d, want consecutive", e1, e2)
	}
	if _, err := r.BeginEpoch(Role(99)); !errors.Is(err, ErrBadRole) {
		t.Fatalf("bad role: %v", err)
	}
	rs, _ := r.Role(RoleInfer)
	if rs.Pid.Load() != uint32(os.Getpid()) || rs.HeartbeatUnixNano.Load() == 0 {
		t.Fatalf("role record not filled: pid %d hb %d", rs.Pid.Load(), rs.HeartbeatUnixNano.Load())
	}
	for i := range numRoles {
		got, err := ParseRole(i.String())
		if err != nil || got != i {
			t.Errorf("ParseRole(%q) = %v, %v", i.String(), got, err)
		}
	}
	if _, err := ParseRole("nope"); err == nil {
		t.Error("ParseRole accepted an unknown name")
	}
}
