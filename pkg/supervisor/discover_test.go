package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/shm"
)

// TestDiscoverUnsupervised: an instance whose roles run without a
// supervisor (systemd units) is found from its shm region, listed as
// managed by systemd with the live roles, and a shm dir with nothing alive
// is stale.
func TestDiscoverUnsupervised(t *testing.T) {
	base := t.TempDir()
	t.Setenv(config.EnvShmDir, base)
	t.Setenv(config.EnvRunDir, t.TempDir())
	r, err := shm.Create(shm.CreateOptions{BaseDir: base, Instance: "sysd", NoReserve: true,
		Sizes: shm.Sizes{Slots: 2, MaxReqTotalLen: 64}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Destroy() })
	if _, err := r.BeginEpoch(shm.RoleRouter); err != nil { // this process plays the router
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(base, "lightllm-gone"), 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	all, err := Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].Name != "gone" || all[0].Manager != ManagerStale || all[1].Name != "sysd" || all[1].Manager != ManagerSystemd {
		t.Fatalf("discovered %+v", all)
	}
	var up []string
	for _, rs := range all[1].Status.Roles {
		if rs.Pid != 0 {
			up = append(up, rs.Role)
		}
	}
	if len(up) != 1 || up[0] != "router" || all[1].Status.Roles[0].Pid != 0 {
		t.Errorf("live roles %v", up)
	}
	in, err := FindRunning(ctx)
	if err != nil || in.Name != "sysd" {
		t.Errorf("FindRunning: %+v %v", in, err)
	}
	var sb strings.Builder
	if err := WritePs(&sb, all, time.Now()); err != nil || !strings.Contains(sb.String(), "systemd") || !strings.Contains(sb.String(), "1/6") {
		t.Errorf("ps: %v\n%s", err, sb.String())
	}
}
