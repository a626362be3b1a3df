package cli

import (
	"os/exec"
	"strings"
	"testing"
)

// TestMainIsThin asks go list what the command's package main at the
// module root is built from, for any build: at most 3 files that are not
// tests. The command line itself is this package.
func TestMainIsThin(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.Name}} {{join .GoFiles \" \"}} {{join .CgoFiles \" \"}} {{join .IgnoredGoFiles \" \"}}", repoRoot).CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", repoRoot, err, out)
	}
	fields := strings.Fields(string(out))
	if len(fields) == 0 || fields[0] != "main" {
		t.Fatalf("go list %s: %q, want package main", repoRoot, out)
	}
	var files []string // every file of any build but the tests
	for _, f := range fields[1:] {
		if !strings.HasSuffix(f, "_test.go") {
			files = append(files, f)
		}
	}
	if len(files) == 0 || len(files) > 3 {
		t.Errorf("package main at the root has %d non-test files %v, want 1 to 3", len(files), files)
	}
}
