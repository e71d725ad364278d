//go:build unix

package hub

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive flock(2) on path, the same lock the Python
// filelock package takes, polling so that ctx can cancel the wait. waiting
// is called once if the lock is busy. The lock file is never removed:
// deleting it would let a third process lock a fresh inode while the second
// still holds the old one.
func lockFile(ctx context.Context, path string, waiting func()) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	for notified := false; ; {
		f, err := lockOnce(ctx, path, func() {
			if !notified && waiting != nil {
				waiting()
				notified = true
			}
		})
		if err != nil {
			return nil, err
		}
		// Some filelock versions delete the lock file on release: if the
		// path no longer names the inode we locked, lock the new one.
		if same, err := samePath(f, path); err != nil || !same {
			_ = f.Close()
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("lock %s: %w", path, err)
			}
			continue
		}
		return func() {
			_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
			_ = f.Close()
		}, nil
	}
}

func samePath(f *os.File, path string) (bool, error) {
	a, err := f.Stat()
	if err != nil {
		return false, err
	}
	b, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	return os.SameFile(a, b), nil
}

// lockOnce opens path and blocks (polling) until it holds its flock.
func lockOnce(ctx context.Context, path string, busy func()) (*os.File, error) {
	// 0664 as huggingface_hub's WeakFileLock, so users sharing a cache can wait on it.
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o664)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	delay := 5 * time.Millisecond
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		busy()
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(delay*2, 200*time.Millisecond)
	}
}
