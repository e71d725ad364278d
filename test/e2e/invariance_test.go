package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestSamePromptsSameText (issue 21): the same 64 greedy prompts, sharing
// prefixes of every length as chats and system prompts do, sent 4 times to
// one server with the prompt cache on, 8 at a time so that batch mates and
// cache hits (none, partial, full) differ from pass to pass: every pass
// returns byte-identical text.
func TestSamePromptsSameText(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: builds and launches the server")
	}
	hf := filepath.Join(modelsDir(t), "stories260K", "hf")
	bin := buildBinaries(t)
	s := launch(t, bin, hf)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	stems := []string{
		"Once upon a time, there was a little girl named Lily. She lived in a small house with her mom and dad.",
		"One day, a big dog came to the park. The dog was very happy and wanted to play with the kids.",
		"Tom had a red ball. He liked to throw it high in the sky and catch it.",
		"The sun was hot and the birds were singing in the tall green trees.",
	}
	endings := []string{"", " She", " One day,", " He was sad because", " They went to the", " Then", " The end", " Mom said,"}
	var prompts []string
	for i := 0; len(prompts) < 64; i++ {
		stem := stems[i%len(stems)]
		cut := len(stem) * (1 + i%4) / 4 // a quarter, half, three quarters or all of it
		prompts = append(prompts, stem[:cut]+endings[i/len(stems)%len(endings)])
	}
	var passes [4][]string
	for pass := range passes {
		passes[pass] = make([]string, len(prompts))
		order := make(chan int)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var firstErr error
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range order {
					c, err := benchComplete(ctx, s.base, prompts[i], 24, nil)
					mu.Lock()
					if err != nil && firstErr == nil {
						firstErr = fmt.Errorf("pass %d prompt %d: %w", pass, i, err)
					}
					passes[pass][i] = c.Text
					mu.Unlock()
				}
			}()
		}
		for k := range prompts {
			order <- (k*(2*pass+1) + pass*7) % len(prompts) // another order every pass (odd strides are coprime with 64)
		}
		close(order)
		wg.Wait()
		if firstErr != nil {
			t.Fatal(firstErr)
		}
	}
	diffs := 0
	for pass := 1; pass < len(passes); pass++ {
		for i := range prompts {
			if passes[pass][i] != passes[0][i] {
				diffs++
				t.Errorf("pass %d, prompt %d %q: %q, first pass %q", pass+1, i, prompts[i], passes[pass][i], passes[0][i])
			}
		}
	}
	if diffs > 0 {
		t.Fatalf("%d of %d answers differ from the first pass", diffs, 3*len(prompts))
	}
}
