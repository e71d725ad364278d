package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Stop strings do not fit the fixed shm slot (it has room for stop token
// ids only), so the apiserver writes them next to the region, one small file
// per slot generation, before it publishes the slot; the detokenizer reads
// the file when it starts tracking the slot, so a restarted detokenizer (or
// router) finds them again; the apiserver removes the file when it releases
// the slot.

const stopFilePrefix = "stop-"

// StopFile is the sidecar file of slot index, generation gen.
func StopFile(dir string, index int, gen uint32) string {
	return filepath.Join(dir, fmt.Sprintf("%s%d-%d.json", stopFilePrefix, index, gen))
}

// WriteStops saves the stop strings of a slot (nothing when there are none).
func WriteStops(dir string, index int, gen uint32, stops []string) error {
	if len(stops) == 0 {
		return nil
	}
	b, err := json.Marshal(stops)
	if err != nil {
		return fmt.Errorf("encode stop strings: %w", err)
	}
	path := StopFile(dir, index, gen)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write stop strings: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write stop strings: %w", err)
	}
	return nil
}

// ReadStops loads the stop strings of a slot; none when there is no file.
func ReadStops(dir string, index int, gen uint32) ([]string, error) {
	b, err := os.ReadFile(StopFile(dir, index, gen))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read stop strings: %w", err)
	}
	var stops []string
	if err := json.Unmarshal(b, &stops); err != nil {
		return nil, fmt.Errorf("read stop strings of slot %d: %w", index, err)
	}
	return stops, nil
}

// RemoveStops deletes the sidecar file of a slot, if any.
func RemoveStops(dir string, index int, gen uint32) {
	_ = os.Remove(StopFile(dir, index, gen))
}

// SweepStops removes every sidecar file whose slot no longer has the
// generation it was written for (live reports whether a slot index is
// still at gen); the apiserver runs it at start.
func SweepStops(dir string, live func(index int, gen uint32) bool) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		name, ok := strings.CutPrefix(e.Name(), stopFilePrefix)
		if !ok {
			continue
		}
		name = strings.TrimSuffix(strings.TrimSuffix(name, ".tmp"), ".json")
		is, gs, ok := strings.Cut(name, "-")
		i, err1 := strconv.Atoi(is)
		g, err2 := strconv.ParseUint(gs, 10, 32)
		if !ok || err1 != nil || err2 != nil || !live(i, uint32(g)) || strings.HasSuffix(e.Name(), ".tmp") {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
