package jaeger

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// jaegerTool is Jaeger's own command, a tool of this module (go.mod's tool
// directive pins it at v1.76.0).
const jaegerTool = "github.com/jaegertracing/jaeger/cmd/jaeger"

// The binaries the tests run, built once in TestMain: retrylab from the
// main module at the repository's root (as a user builds it), and Jaeger.
var retrylabBin, jaegerBin string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "retrylab-jaeger-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	retrylabBin = filepath.Join(dir, "retrylab")
	if err := goCommand("..", "build", "-o", retrylabBin, ".").Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build retrylab:", err)
		return 1
	}
	// go tool -n builds the tool into the build cache once and prints
	// where it is: later runs link nothing.
	out, err := goCommand(".", "tool", "-n", jaegerTool).Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "build Jaeger:", err)
		return 1
	}
	jaegerBin = strings.TrimSpace(string(out))
	return m.Run()
}

// goCommand is the go command run in dir, its errors on this process's
// standard error.
func goCommand(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	return cmd
}
