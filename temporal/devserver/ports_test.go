package devserver

import "testing"

// The ports the server's services get are below the kernel's ephemeral
// range, where no process's client socket takes them between freePort and
// the server's bind; and free.
func TestFreePortIsNotEphemeral(t *testing.T) {
	low := ephemeralLow()
	if low <= minPort+1 {
		t.Skipf("ephemeral ports start at %d: nothing below them to try", low)
	}
	for range 20 {
		port, err := freePort("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		if port < minPort || port >= low {
			t.Fatalf("port %d: want one in [%d, %d)", port, minPort, low)
		}
		if err := portFree("127.0.0.1", port); err != nil {
			t.Fatalf("port %d: %v", port, err)
		}
	}
}
