// Package docs_test holds the documentation a newcomer reads to its limits:
// a README short enough to read before trying retrylab, a BENCHMARKS.md of
// today's figures rather than their history, reference pages in docs/, and
// links that lead somewhere inside the repository.
package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository's top directory, seen from this package's.
const root = ".."

// read returns the text of a file under the repository's root.
func read(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// lines counts a text's lines as wc -l does, plus a last line without a
// newline.
func lines(text string) int {
	n := strings.Count(text, "\n")
	if text != "" && !strings.HasSuffix(text, "\n") {
		n++
	}
	return n
}

func TestREADMEIsShortAndNamesTheTwoCommands(t *testing.T) {
	readme := read(t, "README.md")
	if n := lines(readme); n > 250 {
		t.Errorf("README.md has %d lines; a newcomer's page holds at most 250 (reference goes to docs/)", n)
	}
	for _, cmd := range []string{"go run .", "go test ./..."} {
		if !strings.Contains(readme, cmd) {
			t.Errorf("README.md does not mention %q", cmd)
		}
	}
}

func TestBenchmarksAreTodaysFigures(t *testing.T) {
	if n := lines(read(t, "BENCHMARKS.md")); n > 300 {
		t.Errorf("BENCHMARKS.md has %d lines; today's figures fit in 300 (their history is in git)", n)
	}
}

// pages are the Markdown pages of docs/.
func pages(t *testing.T) []string {
	t.Helper()
	names, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func TestDocsHasReferencePages(t *testing.T) {
	if got := pages(t); len(got) < 4 {
		t.Errorf("docs/ has %d pages (%v); want at least 4", len(got), got)
	}
}

// link is a Markdown link's target: [text](target).
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// relativeLinks are the targets in text that name a file rather than a
// web address or an anchor of the same page, without their own anchors.
func relativeLinks(text string) []string {
	var out []string
	for _, m := range link.FindAllStringSubmatch(text, -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		if i := strings.IndexByte(target, '#'); i >= 0 {
			target = target[:i]
		}
		out = append(out, target)
	}
	return out
}

// inRepo reports whether path, relative to the repository's root, stays
// inside it.
func inRepo(path string) bool {
	clean := filepath.Clean(path)
	return clean != ".." && !strings.HasPrefix(clean, "../") && !filepath.IsAbs(clean)
}

// checkLinks holds every relative link of the page at name (relative to the
// repository's root) to a file or folder inside the repository.
func checkLinks(t *testing.T, name string) {
	t.Helper()
	text := read(t, name)
	for _, target := range relativeLinks(text) {
		path := filepath.Join(filepath.Dir(name), target)
		if !inRepo(path) {
			t.Errorf("%s links %s, outside the repository", name, target)
			continue
		}
		if _, err := os.Stat(filepath.Join(root, path)); err != nil {
			t.Errorf("%s links %s, which is not in the repository: %v", name, target, err)
		}
	}
}

func TestLinksResolve(t *testing.T) {
	checkLinks(t, "README.md")
	checkLinks(t, "BENCHMARKS.md")
	for _, page := range pages(t) {
		checkLinks(t, filepath.Join("docs", page))
	}
}

// outside finds paths in text that climb out of the folder they are read
// from: ../something, in a link or in code.
var outside = regexp.MustCompile("(?:^|[\\s(`'\"])(\\.\\./[^\\s)`'\"]*)")

func TestFixturesREADMEStaysInTheRepository(t *testing.T) {
	const name = "fixtures/README.md"
	checkLinks(t, name)
	for _, m := range outside.FindAllStringSubmatch(read(t, name), -1) {
		path := filepath.Join("fixtures", m[1])
		if !inRepo(path) {
			t.Errorf("%s points at %s, outside the repository", name, m[1])
			continue
		}
		if _, err := os.Stat(filepath.Join(root, path)); err != nil {
			t.Errorf("%s points at %s, which is not in the repository: %v", name, m[1], err)
		}
	}
}

func TestTheLimitsCatchWhatTheyGuard(t *testing.T) {
	if got := relativeLinks("see [a](docs/cli.md#run), [b](https://x.org/a), [c](#keys), [d](../shared/x)"); strings.Join(got, " ") != "docs/cli.md ../shared/x" {
		t.Errorf("relativeLinks = %q", got)
	}
	if inRepo("fixtures/../../shared/real-traces") {
		t.Error("a path out of the repository counted as inside it")
	}
	if !inRepo("fixtures/../docs/FAULTS.md") {
		t.Error("a path inside the repository counted as outside it")
	}
	if m := outside.FindAllStringSubmatch("copied in `../shared/real-traces/`", -1); len(m) != 1 || m[0][1] != "../shared/real-traces/" {
		t.Errorf("outside found %q", m)
	}
	if lines("a\nb\n") != 2 || lines("a\nb") != 2 || lines("") != 0 {
		t.Error("lines does not count as wc -l")
	}
}
