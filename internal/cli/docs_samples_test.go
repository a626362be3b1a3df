package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README's sample outputs are the real binary's: `run naive` printed
// [fault] before "[runtime] worker started", the diff lacked its legend.
// Each block is compared with what the binary prints on a fresh database,
// with the pid and measured durations masked.

// readmeBlock is the fenced block that follows the line holding after.
func readmeBlock(t *testing.T, after string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i := strings.Index(text, after)
	if i < 0 {
		t.Fatalf("README.md has no %q", after)
	}
	rest := text[i:]
	start := strings.Index(rest, "```\n")
	if start < 0 {
		t.Fatalf("README.md: no block after %q", after)
	}
	rest = rest[start+4:]
	end := strings.Index(rest, "```")
	return strings.TrimRight(rest[:end], "\n")
}

var (
	pidRe      = regexp.MustCompile(`pid \d+`)
	durationRe = regexp.MustCompile(`<1ms|\b\d+(\.\d+)?(ms|µs|s)\b`)
)

// masked is text with pids and measured durations masked, trailing spaces
// and blank lines at the ends dropped.
func masked(text string) string {
	text = pidRe.ReplaceAllString(text, "pid N")
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Trim(strings.Join(lines, "\n"), "\n")
}

func TestREADMESamplesAreTheBinarys(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	naive := ok(t, db, "run", "naive")
	if want, got := masked(readmeBlock(t, "What `run naive` prints:")), masked(naive.stdout); got != want {
		t.Errorf("README's run naive:\n%s\n\nthe binary prints:\n%s", want, got)
	}
	ok(t, db, "reset") // as the tour does before run safe
	safe := masked(ok(t, db, "run", "safe").stdout)
	// The README shows an excerpt of run safe: its lines, in order.
	at := 0
	for _, line := range strings.Split(masked(readmeBlock(t, "In `run safe` the retry carries")), "\n") {
		i := strings.Index(safe[at:], line+"\n")
		if i < 0 {
			t.Errorf("README's run safe excerpt: %q is not in what the binary prints (in order):\n%s", line, safe)
			break
		}
		at += i + len(line)
	}
	// naive and safe, without a reset between them, diffed.
	db = newDB(t)
	ok(t, db, "run", "naive")
	ok(t, db, "run", "safe")
	diff := ok(t, db, "diff", "exec_7K2Q", "exec_01H8")
	block := readmeBlock(t, "lines the two executions up")
	cmd, out, _ := strings.Cut(block, "\n")
	if cmd != "$ retrylab diff exec_7K2Q exec_01H8" {
		t.Fatalf("README's diff block begins %q", cmd)
	}
	if want, got := masked(out), masked(diff.stdout); got != want {
		t.Errorf("README's diff:\n%s\n\nthe binary prints:\n%s", want, got)
	}
}

// TestREADMEScreenIsTheBinarys: the README's explorer at 80×24 after n,
// enter is the screen of the real binary, blank rows trimmed, with the pid
// and the attempts' durations masked.
func TestREADMEScreenIsTheBinarys(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "retrylab.db")
	s := startScreen(t, bin, db, 80, 24)
	s.waitFor("empty database", "n runs a scenario")
	s.press("n")
	s.waitFor("picker", "Run which scenario?")
	s.press("\r")
	s.waitFor("naive ran", "whole outbox: 2 messages", "✓ execution completed", "started naive")
	var rows []string
	for _, l := range strings.Split(s.text(), "\n") {
		if strings.Trim(l, " │") != "" {
			rows = append(rows, l)
		}
	}
	// Each row without its right border: the emulator counts ⚡ as one
	// cell where terminals (and the explorer) count two.
	mask := func(text string) string {
		lines := strings.Split(durationRe.ReplaceAllString(masked(text), "D"), "\n")
		for i, l := range lines {
			lines[i] = strings.TrimRight(l, " │")
		}
		return strings.Join(lines, "\n")
	}
	if want, got := mask(readmeBlock(t, "The explorer in an 80×24 terminal")), mask(strings.Join(rows, "\n")); got != want {
		t.Errorf("README's explorer screen:\n%s\n\nthe binary shows:\n%s", want, got)
	}
}
