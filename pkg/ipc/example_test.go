package ipc_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/lightllm-go/lightllm/pkg/ipc"
)

// Example: the router → detokenizer pipe. The detokenizer binds a Puller;
// the router sends through a Pusher, which (re)connects by itself.
func Example() {
	runDir, _ := os.MkdirTemp("", "ipc-example")
	defer os.RemoveAll(runDir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	ep, err := ipc.Endpoint(runDir, ipc.SockDetokenizer)
	if err != nil {
		fmt.Println(err)
		return
	}
	detok, err := ipc.NewPuller(ep, ipc.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer detok.Close()

	router, _ := ipc.NewPusher(ep, ipc.Options{})
	defer router.Close()
	router.Send(ctx, &ipc.NewGroup{GroupID: 16, Arrival: time.Unix(0, 1),
		Slots: []ipc.SlotRef{{Index: 3, Gen: 7}}})

	m, err := detok.Recv(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	g := m.(*ipc.NewGroup)
	fmt.Printf("group %d slots %v\n", g.GroupID, g.Slots)
	// Output: group 16 slots [{3 7}]
}
