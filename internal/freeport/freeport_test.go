package freeport

import (
	"net"
	"strconv"
	"testing"
)

// The ports Port finds are below the kernel's ephemeral range, where no
// process's client socket takes them between Port and the server's bind;
// and free.
func TestPortIsNotEphemeral(t *testing.T) {
	low := EphemeralLow()
	if low <= Min+1 {
		t.Skipf("ephemeral ports start at %d: nothing below them to try", low)
	}
	for range 20 {
		port, err := Port("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		if port < Min || port >= low {
			t.Fatalf("port %d: want one in [%d, %d)", port, Min, low)
		}
		if err := Free("127.0.0.1", port); err != nil {
			t.Fatalf("port %d: %v", port, err)
		}
	}
}

// Ports finds runs of consecutive free ports, below the ephemeral range.
func TestPortsAreARunOfFreePorts(t *testing.T) {
	low := EphemeralLow()
	if low <= Min+3 {
		t.Skipf("ephemeral ports start at %d: nothing below them to try", low)
	}
	for range 10 {
		base, err := Ports("127.0.0.1", 3)
		if err != nil {
			t.Fatal(err)
		}
		if base < Min || base+2 >= low {
			t.Fatalf("ports %d-%d: want them in [%d, %d)", base, base+2, Min, low)
		}
		for p := base; p < base+3; p++ {
			if err := Free("127.0.0.1", p); err != nil {
				t.Fatalf("port %d: %v", p, err)
			}
		}
	}
}

// A port a listener holds is not free.
func TestFreeSaysWhenAPortIsTaken(t *testing.T) {
	port, err := Port("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if err := Free("127.0.0.1", port); err != nil {
		t.Fatal(err)
	}
	l, err := listen(port)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if Free("127.0.0.1", port) == nil {
		t.Fatalf("port %d is held, yet Free says it is free", port)
	}
}

func listen(port int) (interface{ Close() error }, error) {
	return net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
}
