package cli

// The room on the projector: 'retrylab room' in a terminal opens the
// explorer on the room's host, in its room view.

import (
	"os"

	"github.com/charmbracelet/lipgloss"
	"github.com/mattn/go-isatty"
	"github.com/muesli/termenv"

	"github.com/retrylab/retrylab/engine/control"
	"github.com/retrylab/retrylab/tui"
)

// roomHasTerminal says 'room' runs in a terminal, where it opens the
// explorer; elsewhere it runs headless until Ctrl-C.
func roomHasTerminal() bool {
	return isatty.IsTerminal(os.Stdout.Fd()) && isatty.IsTerminal(os.Stdin.Fd())
}

// projectRoom runs the explorer on the room's host (its control server
// src) in its room view over srv, until the teacher quits it. join is the
// line participants type, which the room view shows, with the notice that
// the room moved from movedFrom (its last address, taken) when it did.
func projectRoom(src *control.Server, srv tui.RoomReader, title, join, movedFrom string, presenter bool) error {
	if tui.NoColor() {
		lipgloss.SetColorProfile(termenv.Ascii)
	}
	return runOnTerminal(tui.Options{Source: src, Title: title, HighContrast: presenter, Presenter: presenter,
		FlashFor: tui.DefaultFlashFor, Room: srv, RoomJoin: join, RoomMovedFrom: movedFrom})
}
