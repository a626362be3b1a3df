package cli

import (
	"bytes"
	"net"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine/room"
)

// A room whose last address is taken moves to another port of its host:
// the line headless mode prints says so, and listenRoom hands the last
// address on for the room view to say (the screen covers the line).
func TestListenRoomSaysItMoved(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	last := taken.Addr().String()
	var out bytes.Buffer
	ln, movedFrom, err := listenRoom(&out, roomPlace{listen: "127.0.0.1:0", keepListen: true}, room.Settings{Address: last})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if movedFrom != last || ln.Addr().String() == last {
		t.Errorf("listenRoom: at %s, movedFrom %q; want another address and movedFrom %s", ln.Addr(), movedFrom, last)
	}
	if line := out.String(); !strings.HasPrefix(line, "the room's last address "+last+" is taken (") ||
		!strings.HasSuffix(line, "): it moved; participants join again with the line below\n") {
		t.Errorf("headless line: %q", line)
	}

}
