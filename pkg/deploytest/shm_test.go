package deploytest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/pipeline"
	"github.com/lightllm-go/lightllm/shm"
)

// TestShmVolumeFitsTheLayout creates the instance's shm region exactly as
// the roles will (dimensions from the manifest's flags) in a temp dir, and
// checks that the pod's /dev/shm — a memory emptyDir — has room for it.
func TestShmVolumeFitsTheLayout(t *testing.T) {
	m := load(t)
	mountedAt := ""
	for _, vm := range m.container.VolumeMounts {
		if vm.MountPath == "/dev/shm" {
			mountedAt = vm.Name
		}
	}
	if mountedAt == "" {
		t.Fatal("/dev/shm is not mounted (the runtime's default is 64 MiB)")
	}
	var limit int64
	for _, v := range m.server.Spec.Template.Spec.Volumes {
		if v.Name != mountedAt {
			continue
		}
		if v.EmptyDir == nil || v.EmptyDir.Medium != "Memory" {
			t.Fatalf("volume %s for /dev/shm is not an emptyDir with medium Memory: %+v", v.Name, v)
		}
		q, err := parseQuantity(v.EmptyDir.SizeLimit)
		if err != nil {
			t.Fatalf("volume %s sizeLimit: %v", v.Name, err)
		}
		limit = q
	}
	if limit == 0 {
		t.Fatalf("volume %s: no sizeLimit", mountedAt)
	}
	if m.cfg.MaxReqTotalLen <= 0 {
		t.Fatal("set --max_req_total_len: the shm layout (and so /dev/shm) is sized from it")
	}

	sizes := pipeline.Sizes(m.cfg)
	base := t.TempDir()
	r, err := shm.Create(shm.CreateOptions{BaseDir: base, Instance: "deploytest", Sizes: sizes, NoReserve: true})
	if err != nil {
		t.Fatalf("create the layout for %+v: %v", sizes, err)
	}
	defer r.Close()
	dir, err := shm.InstanceDir(base, "deploytest")
	if err != nil {
		t.Fatal(err)
	}
	var used int64
	err = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			used += fi.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// The region is reserved up front (fallocate); leave headroom for
	// whatever else a container puts in /dev/shm.
	const headroom = 64 << 20
	if used+headroom > limit {
		t.Errorf("/dev/shm sizeLimit %d B < the shm layout %d B + %d B headroom (slots %d × %d tokens)",
			limit, used, headroom, sizes.Slots, sizes.MaxReqTotalLen)
	}
	t.Logf("shm layout %.1f MiB for %d slots × %d tokens; /dev/shm limit %.0f MiB",
		float64(used)/(1<<20), sizes.Slots, sizes.MaxReqTotalLen, float64(limit)/(1<<20))
}

// parseQuantity reads the Kubernetes quantities used for sizes: a number
// with an optional binary (Ki…Ei) or decimal (k…E) suffix.
func parseQuantity(s string) (int64, error) {
	if s == "" {
		return 0, fmt.Errorf("empty quantity")
	}
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{
		{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"Pi", 1 << 50}, {"Ei", 1 << 60},
		{"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15}, {"E", 1e18},
	} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("quantity %q: want a non-negative integer with an optional suffix", s)
	}
	return n * mult, nil
}

func TestParseQuantity(t *testing.T) {
	tests := map[string]int64{"2Gi": 2 << 30, "512Mi": 512 << 20, "1G": 1e9, "100": 100, "3k": 3000}
	for in, want := range tests {
		if got, err := parseQuantity(in); err != nil || got != want {
			t.Errorf("parseQuantity(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "Gi", "1.5Gi", "-1Mi", "12Xi"} {
		if _, err := parseQuantity(bad); err == nil {
			t.Errorf("parseQuantity(%q) accepted", bad)
		}
	}
}
