package tensor

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// prefault asks the kernel to map every page of b now (MADV_POPULATE_READ,
// Linux 5.14+), as llama.cpp maps its model with MAP_POPULATE: weights
// mmap'd from a file otherwise cost a page fault per 4 KB on the first
// forward pass (about a second for a 1B q8_0 model). Best effort: on older
// kernels, or memory the call does not apply to, nothing happens.
func prefault(b []byte) {
	if len(b) == 0 {
		return
	}
	page := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(&b[0]))
	lo := start &^ (page - 1)
	hi := (start + uintptr(len(b)) + page - 1) &^ (page - 1)
	_, _, _ = unix.Syscall(unix.SYS_MADVISE, lo, hi-lo, unix.MADV_POPULATE_READ)
}
