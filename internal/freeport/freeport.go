// Package freeport finds a free TCP port for a server that binds it
// itself later: one that takes its ports in a configuration file, not
// listeners (the Temporal and Jaeger servers the test modules start).
//
// A port the kernel hands out for ":0" is one of its ephemeral ports,
// which the client sockets of every process on the machine also take: one
// of them can take the port between its check and the server's bind, and
// the server then fails on the listener it did not get. So Port tries
// ports below the ephemeral range first (Linux's ip_local_port_range),
// where only a listener asking for that port by number can take it.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Min is the lowest port Port tries: above the registered ports that
// well-known servers listen on.
const Min = 20000

// Port returns a port free on host when asked.
func Port(host string) (int, error) { return Ports(host, 1) }

// Ports returns the first of n consecutive ports free on host when asked,
// for a server that takes several (port, port+1, ...). It tries ports
// below the ephemeral range; one port alone, where there is no room there,
// is one the kernel hands out.
func Ports(host string, n int) (int, error) {
	low := EphemeralLow()
	if low > Min+n {
		for range 200 {
			base := Min + rand.IntN(low-Min-n+1)
			if allFree(host, base, n) {
				return base, nil
			}
		}
	}
	if n != 1 {
		return 0, fmt.Errorf("find %d consecutive free ports on %s below %d: none", n, host, low)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port on %s: %w", host, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// allFree says whether ports base to base+n-1 are all free on host.
func allFree(host string, base, n int) bool {
	for p := base; p < base+n; p++ {
		if Free(host, p) != nil {
			return false
		}
	}
	return true
}

// Free says whether port is free on host: nil when a listener could take it.
func Free(host string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return l.Close()
}

// EphemeralLow is the lowest of the kernel's ephemeral ports (Linux's
// ip_local_port_range; 32768, its default, elsewhere or when unread).
func EphemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	low, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return low
}
