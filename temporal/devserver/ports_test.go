package devserver

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"go.temporal.io/server/common/log"

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

// A port taken between the check and the server's bind (by another
// process) is Start's error, naming it, and not a panic inside the server.
func TestTakenPortIsAnError(t *testing.T) {
	frontend, err := freeport.Port("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	ports, err := distinctPorts("127.0.0.1", servicePorts, frontend)
	if err != nil {
		t.Fatal(err)
	}
	taken, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])))
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	s, err := start(Options{Namespaces: []string{"default"}, Logger: log.NewNoopLogger()}, "127.0.0.1", frontend, ports)
	if err == nil {
		s.Stop()
		t.Fatalf("started with port %d taken", ports[0])
	}
	if !strings.Contains(err.Error(), strconv.Itoa(ports[0])) {
		t.Errorf("the error does not name port %d: %v", ports[0], err)
	}
}
