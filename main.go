// Command retrylab shows, live, why retried AI-agent tool calls duplicate
// side effects, and how idempotency keys and a journal of recorded results
// stop it. Run without arguments it opens the explorer; the subcommands are
// the same engine without a screen (package internal/cli).
package main

import (
	"os"

	"github.com/retrylab/retrylab/engine/agent"
	"github.com/retrylab/retrylab/engine/imports/all"
	"github.com/retrylab/retrylab/internal/cli"
)

func main() {
	// A worker is this same binary, started by the host with its address in
	// the environment; it never reaches the CLI.
	agent.MainIfWorker()
	os.Exit(cli.Main(all.Registry(), os.Args[1:]))
}
