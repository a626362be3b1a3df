// Package testrun holds what the test binaries of retrylab share before
// they run their tests.
package testrun

import (
	"flag"
	"strconv"
)

// WaitBound raises the number of parallel tests (-test.parallel) to n unless
// the command line sets it. Call it from TestMain before m.Run.
//
// By default Go runs GOMAXPROCS parallel tests at a time: 2 on a two-core
// machine. Most of retrylab's tests spend their time waiting, not computing:
// on a client's timeout (a lost response is a real timeout of the worker's
// HTTP client), a retry delay, a worker process starting or being killed.
// Running more of them at once than there are cores shortens the run without
// loading the CPU much more.
func WaitBound(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "test.parallel" {
			set = true
		}
	})
	if !set && flag.Lookup("test.parallel") != nil {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}
