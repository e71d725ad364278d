// Package shm is the shared-memory substrate of a lightllm instance: one
// file, /dev/shm/lightllm-<instance>/state, mapped by every role. It holds a
// versioned header (sizes, per-role epochs, heartbeats and doorbells, load
// counters), the request slot table (LightLLM's shm Req), a token array and a
// text queue per slot, the router→infer command ring and the apiserver→router
// intake ring. The layout is in
// layout.go and drawn in docs/FORMAT.md; who writes which field is in
// docs/locking.md.
//
// Rules every role follows: shared fields are only touched through their
// atomic types; a writer fills data first and publishes it with one atomic
// store (state word, CandetokenOutLen, TextTail, a ring entry's Seq); a
// reader loads the publishing word first. Slots are named by (index,
// generation): the generation changes on every allocation, so a stale
// reference fails with ErrStale instead of touching another request.
//
// The launcher creates the region and destroys it on shutdown:
//
//	r, err := shm.Create(shm.CreateOptions{Instance: "8080",
//		Sizes: shm.Sizes{Slots: 1000, MaxReqTotalLen: 16384}})
//	defer r.Destroy()
//
// The apiserver allocates a slot, fills it, publishes it, then announces it
// to the detokenizer and the router on their intake rings and reads text
// back:
//
//	r, _ := shm.Attach("", "8080")
//	epoch, _ := r.BeginEpoch(shm.RoleAPIServer)
//	r.RecoverSlots(epoch) // abort what a previous apiserver left behind
//	s, gen, err := r.Alloc(epoch)
//	err = s.Fill(gen, shm.Request{RequestID: id, Prompt: ids, Params: p})
//	err = s.Transition(gen, shm.StateAllocated, shm.StateQueued)
//	g := []shm.SlotGen{{Slot: uint32(s.Index), Gen: gen}}
//	err = r.DetokIntake().Announce(g) // first: the router's admission leads to the first token
//	err = r.Intake().Announce(g)
//	piece, ok, err := s.PopText(buf)
//	// ... after the Final piece and DetokDone: s.Release(gen)
//
// The router takes the announced groups, admits a request and commands
// infer; infer consumes in order, writes tokens and publishes them:
//
//	groups, _ := r.Intake().Take(nil)
//	s.Transition(gen, shm.StateQueued, shm.StateRunning)
//	r.Commands().PushWait(ctx, shm.Command{Op: shm.OpNew, Slot: uint32(s.Index), Gen: gen})
//
//	c, err := r.Commands().PopWait(ctx) // infer
//	s.SetOutput(i, tok); s.Publish(uint32(i+1), shm.FinishNone)
//	detok, _ := r.Role(shm.RoleDetokenizer); r.Bell(detok).Ring()
//
// The detokenizer, woken by that bell, takes its ring and decodes:
//
//	groups, _ := r.DetokIntake().Take(nil)
//
// Waiting is a brief poll, then a sleep on a shared word (Bell): in the
// netpoller on the bell's FIFO in the instance directory, else in
// FUTEX_WAIT, so a wake-up across processes costs microseconds and an idle
// role costs no CPU.
package shm
