package devserver

import (
	"testing"

	"github.com/retrylab/retrylab/internal/freeport"
)

// The services' ports are distinct, none of them the frontend's: picked
// one by one, two services could be given one port, and the second to
// bind it failed inside the server with no listener (a panic in CI).
func TestServicesGetDistinctPorts(t *testing.T) {
	frontend, err := freeport.Port("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		ports, err := distinctPorts("127.0.0.1", servicePorts, frontend)
		if err != nil {
			t.Fatal(err)
		}
		cfg, _, err := serverConfig("127.0.0.1", frontend, ports, "")
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]string{}
		for name, s := range cfg.Services {
			for _, p := range []int{s.RPC.GRPCPort, s.RPC.MembershipPort} {
				if other, ok := seen[p]; ok {
					t.Fatalf("port %d given to %s and %s", p, other, name)
				}
				seen[p] = name
			}
		}
		if len(seen) != servicePorts+1 || seen[frontend] != "frontend" {
			t.Fatalf("%d ports for the services (%v), want %d with the frontend's %d", len(seen), seen, servicePorts+1, frontend)
		}
	}
}
