package shm_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/lightllm-go/lightllm/shm"

	"github.com/lightllm-go/lightllm/pkg/sampler"
)

// Example walks one request through every role's part, in one process for
// brevity; in the server each block runs in its own process on its own
// mapping of the same file.
func Example() {
	base, _ := os.MkdirTemp("", "shm-example")
	defer os.RemoveAll(base)
	ctx := context.Background()

	// launcher
	region, err := shm.Create(shm.CreateOptions{BaseDir: base, Instance: "demo",
		Sizes: shm.Sizes{Slots: 4, MaxReqTotalLen: 64}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer region.Destroy()

	// apiserver: allocate, fill, publish, announce
	api, _ := shm.Attach(base, "demo")
	epoch, _ := api.BeginEpoch(shm.RoleAPIServer)
	slot, gen, _ := api.Alloc(epoch)
	slot.Fill(gen, shm.Request{RequestID: 8, GroupID: 8, Arrival: time.Now(),
		Prompt: []int32{1, 15043}, Params: sampler.Params{MaxNewTokens: 2, TopK: -1, Seed: -1}})
	slot.Transition(gen, shm.StateAllocated, shm.StateQueued)
	group := []shm.SlotGen{{Slot: uint32(slot.Index), Gen: gen}}
	api.DetokIntake().Announce(group)
	api.Intake().Announce(group)

	// router: take the announcement, admit and command infer
	taken, _ := region.Intake().Take(nil)
	rs, _ := region.Slot(int(taken[0][0].Slot))
	rs.Transition(gen, shm.StateQueued, shm.StateRunning)
	region.Commands().PushWait(ctx, shm.Command{Op: shm.OpNew, Slot: uint32(slot.Index), Gen: gen})

	// infer: take the command, generate two tokens, publish, release
	cmd, _ := region.Commands().PopWait(ctx)
	is, _ := region.Slot(int(cmd.Slot))
	is.SetOutput(0, 3186)
	is.SetOutput(1, 2)
	is.Publish(2, shm.FinishStop)
	is.MarkInferReleased(cmd.Gen, shm.StateRunning, shm.FinishStop)

	// detokenizer: take the announcement, read the published ids, queue
	// text, mark done
	taken, _ = region.DetokIntake().Take(nil)
	fmt.Println("detokenizer: announced slot is infer's:", int(taken[0][0].Slot) == is.Index)
	out, _ := is.Outputs()
	is.PushText(shm.TextPiece{Text: []byte(" world"), SrcIndex: 0})
	is.PushText(shm.TextPiece{SrcIndex: 1, Final: true})
	is.EmittedOutLen.Store(uint32(len(out)))
	is.DetokDone.Store(1)

	// apiserver: stream the text, then release the slot
	var buf []byte
	for {
		p, ok, _ := slot.PopText(buf)
		if !ok {
			break
		}
		fmt.Printf("piece %q final=%v\n", p.Text, p.Final)
	}
	fmt.Println("finish:", shm.FinishStatus(slot.FinishStatus.Load()), "outputs:", out)
	fmt.Println("release:", slot.Release(gen))
	api.Close()
	// Output:
	// detokenizer: announced slot is infer's: true
	// piece " world" final=false
	// piece "" final=true
	// finish: stop outputs: [3186 2]
	// release: <nil>
}
