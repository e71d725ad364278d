//go:build unix

package hub

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestLockFileExcludesAndCancels(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".locks", "models--a--b", "etag.lock")
	unlock, err := lockFile(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A second holder waits, says so once, and gives up with its context.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	waits := 0
	if _, err := lockFile(ctx, path, func() { waits++ }); !errors.Is(err, context.DeadlineExceeded) || waits != 1 {
		t.Fatalf("second lock: err %v after %d wait notices; want deadline exceeded after 1", err, waits)
	}
	// It gets the lock as soon as the first holder lets go.
	got := make(chan error, 1)
	go func() {
		u, err := lockFile(context.Background(), path, nil)
		if err == nil {
			u()
		}
		got <- err
	}()
	time.Sleep(20 * time.Millisecond)
	unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the lock was not handed over")
	}
}

// A holder that deletes the lock file on release (some filelock versions
// do) must not let a waiter keep a lock on the orphaned inode.
func TestLockFileFollowsRecreatedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := lockFile(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan func(), 1)
	go func() {
		u, err := lockFile(context.Background(), path, nil)
		if err != nil {
			t.Error(err)
		}
		got <- u
	}()
	time.Sleep(20 * time.Millisecond)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	unlock()
	u := <-got
	defer u()
	// The waiter now holds the file at path, so a third locker must wait.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := lockFile(ctx, path, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("third locker got the lock too: %v", err)
	}
}
