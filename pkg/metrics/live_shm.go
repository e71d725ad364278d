package metrics

import "github.com/lightllm-go/lightllm/shm"

// ShmLoadFunc reads the live load from an instance's shm load counters
// (router: Waiting, Running; infer: KV capacity, free and evictable tokens).
// Prompt-cache tokens nobody references count as free, since the cache
// gives them up on demand — the same view vLLM's usage gauge takes.
func ShmLoadFunc(l *shm.Load) LoadFunc {
	return func() LiveLoad {
		capacity := l.MaxTotalTokenNum.Load()
		out := LiveLoad{Waiting: max(l.Waiting.Load(), 0), Running: max(l.Running.Load(), 0), KVCapacity: capacity}
		if capacity > 0 {
			evictable := max(l.EvictableKVTokens.Load(), 0)
			used := min(max(capacity-l.FreeKVTokens.Load()-evictable, 0), capacity)
			out.KVUsed, out.KVEvictable = used, evictable
			out.KVUsage = float64(used) / float64(capacity)
		}
		return out
	}
}
