package sched

// fitsAlone reports whether a group's worst case, its shared prompt plus
// every member's max_new_tokens, fits a KV of maxTotal tokens, so that an
// idle server can run it whatever an estimate says.
func fitsAlone(group []*Request, maxTotal int) bool {
	need := group[0].InputLen
	for _, r := range group {
		need += r.MaxNewTokens
	}
	return need <= maxTotal
}
