package cli

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/hinshun/vt10x"
)

// screen is the real binary running in a pseudo-terminal, read through a
// VT100 emulator so the test sees what a person would.
type screen struct {
	t    testing.TB
	pty  *os.File
	term vt10x.Terminal
	cmd  *exec.Cmd
	done chan error
	mu   sync.Mutex
	// reads gets the time of every read of the program's output, when set
	// before startScreen returns (see startScreenTimed).
	reads chan time.Time
}

func startScreen(t testing.TB, bin, db string, cols, rows int, args ...string) *screen {
	t.Helper()
	return startScreenTimed(t, nil, bin, db, cols, rows, args...)
}

// startScreenTimed is startScreen that also sends the time of every read of
// the program's output to reads (dropping times when reads is full).
func startScreenTimed(t testing.TB, reads chan time.Time, bin, db string, cols, rows int, args ...string) *screen {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "RETRYLAB_DB="+db, "TERM=xterm-256color")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)})
	if err != nil {
		t.Fatalf("start in a pty: %v", err)
	}
	s := &screen{t: t, pty: f, term: vt10x.New(vt10x.WithSize(cols, rows)), cmd: cmd, done: make(chan error, 1), reads: reads}
	go func() {
		r := bufio.NewReader(f)
		buf := make([]byte, 4096)
		for {
			n, err := r.Read(buf)
			if n > 0 && s.reads != nil {
				select {
				case s.reads <- time.Now():
				default:
				}
			}
			if n > 0 {
				s.answerQueries(buf[:n])
				s.mu.Lock()
				_, _ = s.term.Write(buf[:n])
				s.mu.Unlock()
			}
			if err != nil {
				return
			}
		}
	}()
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		f.Close()
	})
	return s
}

// answerQueries answers the questions programs ask a terminal at start
// (background colour, cursor position), as a real terminal does; the
// emulator does not, and unanswered they cost a timeout.
func (s *screen) answerQueries(out []byte) {
	if bytes.Contains(out, []byte("\x1b]11;?")) {
		_, _ = s.pty.Write([]byte("\x1b]11;rgb:1c1c/1c1c/1c1c\x1b\\"))
	}
	if bytes.Contains(out, []byte("\x1b[6n")) {
		_, _ = s.pty.Write([]byte("\x1b[1;1R"))
	}
}

func (s *screen) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.term.String()
}

// waitFor polls the screen until every want is on it.
func (s *screen) waitFor(what string, want ...string) {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		text := s.text()
		ok := true
		for _, w := range want {
			if !strings.Contains(text, w) {
				ok = false
				break
			}
		}
		if ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("%s: screen never showed %q; it shows:\n%s", what, want, s.text())
}

func (s *screen) press(keys string) {
	s.t.Helper()
	if _, err := s.pty.Write([]byte(keys)); err != nil {
		s.t.Fatalf("type %q: %v", keys, err)
	}
}

// TestExplorerInPseudoTerminal runs naive, arms a crash, runs it again (a new
// execution), resumes, and reads the duplicate in the outbox and the killed
// worker in the trace off the screen of the real binary.
func TestExplorerInPseudoTerminal(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "retrylab.db")
	s := startScreen(t, bin, db, 160, 40)
	s.waitFor("empty database", "Executions 0", "none yet: press n")

	s.press("n")
	s.waitFor("picker", "Run which scenario?", "naive")
	s.press("\r") // naive is first in lesson order
	s.waitFor("naive's duplicate", "exec_7K2Q", "2 messages ← duplicate send", "execution completed")

	s.press("c") // arm: crash after the effect, before recording
	s.waitFor("armed", "armed: crash-after-effect")
	s.press("n")
	s.waitFor("picker", "Run which scenario?")
	s.press("\r") // naive again: a new execution (not exec_7K2Q), which the crash kills
	s.waitFor("killed worker", "Executions 2", "☠ worker killed (exit 137)", "◆ worker died · ambiguous: provider delivered")
	if text := s.text(); strings.Contains(text, "Trace  exec_7K2Q") {
		t.Fatalf("the second run of naive restarted exec_7K2Q:\n%s", text)
	}

	s.press("r")
	s.waitFor("resumed", "run 2", "2 messages ← duplicate send", "execution completed")
	if text := s.text(); !strings.Contains(text, "☠ worker killed") {
		t.Fatalf("the killed worker left the trace:\n%s", text)
	}

	// The resumed run may still be finishing (under load its end comes
	// later than the outbox line): q then asks first, and the test answers
	// w (quit when it ends) as a user would.
	s.press("q")
	deadline := time.After(10 * time.Second)
	answered := false
	for {
		select {
		case err := <-s.done:
			if err != nil {
				t.Fatalf("quit: %v", err)
			}
			return
		case <-deadline:
			t.Fatalf("q did not end the explorer; it shows:\n%s", s.text())
		case <-time.After(50 * time.Millisecond):
			if !answered && strings.Contains(s.text(), "w: quit when it ends") {
				s.press("w")
				answered = true
			}
		}
	}
}

func TestExplorerRefusesWithoutTerminal(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(bin, "--db", filepath.Join(t.TempDir(), "retrylab.db"))
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatal("explorer without a terminal exited 0")
	}
	if !strings.Contains(string(out), "the explorer needs a terminal") || !strings.Contains(string(out), "retrylab run naive") {
		t.Fatalf("message: %s", out)
	}
}

func TestExplorerTooSmallTerminal(t *testing.T) {
	t.Parallel()
	s := startScreen(t, bin, filepath.Join(t.TempDir(), "retrylab.db"), 50, 12)
	s.waitFor("too small", "at least 60×16", "50×12")
	s.press("q")
	<-s.done
}

// TestExplorerAt120x35GivesTheTraceRoom: at 120×35 three columns gave the
// trace 52 columns and cut its errors; now the trace pane is at least 70
// columns wide and the outbox is on screen with it (under it).
func TestExplorerAt120x35GivesTheTraceRoom(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "retrylab.db")
	ok(t, db, "run", "naive")
	s := startScreen(t, bin, db, 120, 35)
	s.waitFor("naive at 120×35", "Trace  exec_7K2Q", "Outbox (provider's truth)", "2 messages ← duplicate send")
	var width int
	for _, line := range strings.Split(s.text(), "\n") {
		runes := []rune(line)
		at := strings.Index(line, "Trace  exec_7K2Q")
		if at < 0 {
			continue
		}
		start := len([]rune(line[:at]))
		for start > 0 && runes[start] != '╭' {
			start--
		}
		end := start + 1
		for end < len(runes) && runes[end] != '╮' {
			end++
		}
		width = end - start + 1
	}
	if width < 70 {
		t.Fatalf("the trace pane is %d columns wide at 120×35, want ≥ 70:\n%s", width, s.text())
	}
	s.press("q")
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("q did not end the explorer:\n%s", s.text())
	}
}
