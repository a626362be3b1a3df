package main

import "github.com/spf13/cobra"

// otlpCommands are the commands for OpenTelemetry traces: import, audit, export.
func otlpCommands(a *app) []*cobra.Command {
	return []*cobra.Command{a.importCmd()}
}
