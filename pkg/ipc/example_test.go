package ipc_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/lightllm-go/lightllm/pkg/ipc"
)

// Example: the every role → metric channel. The metric role binds a
// Puller; a role sends through an OptionalPusher, which never blocks it
// and (re)connects by itself.
func Example() {
	runDir, _ := os.MkdirTemp("", "ipc-example")
	defer os.RemoveAll(runDir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	ep, err := ipc.Endpoint(runDir, ipc.SockMetric)
	if err != nil {
		fmt.Println(err)
		return
	}
	metric, err := ipc.NewPuller(ep, ipc.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer metric.Close()

	role, _ := ipc.NewOptionalPusher(ep, ipc.Options{})
	defer role.Close()
	role.Send(&ipc.Metric{Kind: ipc.CounterAdd, Name: "lightllm_request_count",
		Labels: []ipc.Label{{Name: "model_name", Value: "stories"}}, Value: 1})

	m, err := metric.Recv(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	obs := m.(*ipc.Metric)
	fmt.Printf("%s %v %v\n", obs.Name, obs.Labels, obs.Value)
	// Output: lightllm_request_count [{model_name stories}] 1
}
