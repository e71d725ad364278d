package apiserver

import "strings"

// stopFilter gives the OpenAI convention for stop strings: the output ends
// just before the first stop string, which is not included. The
// detokenizer reports a match on the piece that completes it, so while a
// sequence runs the filter holds back any tail that could still grow into a
// stop string; a stream therefore never sends text it must take back.
type stopFilter struct {
	stops   []string
	pending string // received, not yet released
	stopped bool   // a stop string was seen: everything after is dropped
}

func newStopFilter(stops []string) *stopFilter { return &stopFilter{stops: stops} }

// push takes a piece of text and returns what can be released now.
func (f *stopFilter) push(text string) string {
	if f.stopped {
		return ""
	}
	if len(f.stops) == 0 {
		return text
	}
	f.pending += text
	cut := -1
	for _, s := range f.stops {
		if i := strings.Index(f.pending, s); i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	if cut >= 0 {
		out := f.pending[:cut]
		f.pending, f.stopped = "", true
		return out
	}
	hold := 0
	for _, s := range f.stops {
		for k := min(len(s)-1, len(f.pending)); k > hold; k-- {
			if strings.HasSuffix(f.pending, s[:k]) {
				hold = k
				break
			}
		}
	}
	out := f.pending[:len(f.pending)-hold]
	f.pending = f.pending[len(f.pending)-hold:]
	return out
}

// flush releases what is held back once the sequence has finished (a
// prefix of a stop string that never completed).
func (f *stopFilter) flush() string {
	out := f.pending
	f.pending = ""
	return out
}
