package model

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// mappedRSS returns how many KiB of the file at path this process has
// resident in its page tables (the Rss of its /proc/self/smaps entries).
func mappedRSS(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	total, in := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
			in = len(fields) >= 6 && fields[5] == path
		case in && len(fields) == 3 && fields[0] == "Rss:":
			kb, err := strconv.Atoi(fields[1])
			if err != nil {
				t.Fatal(err)
			}
			total += kb
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return total
}

// TestLoadLeavesFileUnmapped: once the weights are in the arena, none of
// the file's pages count toward RSS, whatever the type: not the q4_0 and
// q4_K embedding tables (only gathered from, so neither prefaulted nor
// repacked), not the large folios at tensor edges, not the header. With
// MmapWeights the matrices are computed from the mapping, which stays.
func TestLoadLeavesFileUnmapped(t *testing.T) {
	for _, tc := range []struct {
		dtype string
		mmap  bool
	}{{"f16", false}, {"q4_0", false}, {"q4_K_M", false}, {"q6_K", false}, {"q4_K_M", true}} {
		t.Run(tc.dtype+map[bool]string{true: "/mmap"}[tc.mmap], func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.gguf")
			o := GenOptions{Arch: "llama", Hidden: 256, Layers: 2, Heads: 4, KVHeads: 2, FFN: 512,
				Vocab: 4096, DType: tc.dtype, Seed: 7, MaxPos: 256}
			if err := GenerateGGUF(path, o); err != nil {
				t.Fatal(err)
			}
			m, err := Load(path, LoadOptions{Threads: 1, NoTokenizer: true, MmapWeights: tc.mmap})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			rss := mappedRSS(t, path)
			t.Logf("%s: %d KiB of the %d KiB file resident after load", tc.dtype, rss, st.Size()>>10)
			if tc.mmap {
				if rss < int(st.Size()>>10)/2 {
					t.Errorf("MmapWeights: only %d KiB of the %d KiB file mapped after load; the matrices are read from it", rss, st.Size()>>10)
				}
			} else if rss != 0 {
				t.Errorf("%d KiB of the model file still resident after load; the weights were copied", rss)
			}
			// Rows gathered afterwards fault their pages back in.
			if l := prefillLogits(t, m, []int32{1, 2, 3}); rms(l) == 0 || rms(l) != rms(l) {
				t.Fatalf("logits after dropping the file's pages: rms %v", rms(l))
			}
		})
	}
}
