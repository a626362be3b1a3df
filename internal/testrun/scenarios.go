package testrun

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// QuickTimeout is the attempt deadline of QuickTimeouts' scenarios: long
// enough for a loopback call on a loaded machine under the race detector
// (chaos runs its scenarios with 100–200 ms), short enough that a test
// waiting out a lost response does not wait a second.
const QuickTimeout = 300 * time.Millisecond

// timeoutField is a scenario's retry deadline, in block or flow style.
var timeoutField = regexp.MustCompile(`(\btimeout:\s*)[0-9]+(?:\.[0-9]+)?(?:ms|s|m)\b`)

// QuickTimeouts is fsys (fixtures.FS) with every scenario's attempt
// deadline (retry: timeout:) set to QuickTimeout, for tests that run
// scenarios for their outcome. A lost response is a real timeout of the
// worker's HTTP client: with the fixtures' 1s, the tests of a package spend
// most of their time waiting. What a scenario does and what its outcome is
// do not depend on the deadline's length; tests that show it (golden
// screens, the CLI) keep the fixtures as they are.
func QuickTimeouts(tb testing.TB, fsys fs.FS) fs.FS {
	tb.Helper()
	quick := fstest.MapFS{}
	err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, path)
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, ".yaml") {
			data = timeoutField.ReplaceAll(data, []byte("${1}"+QuickTimeout.String()))
		}
		quick[path] = &fstest.MapFile{Data: data, Mode: 0o444}
		return nil
	})
	if err != nil {
		tb.Fatalf("quick timeouts: %v", err)
	}
	return quick
}
