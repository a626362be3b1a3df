package cli

// The scenario catalogue: the scenarios every command can name, and the
// command that lists them.

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/fixtures"
)

// scenariosCmd lists the catalogue.
func (a *app) scenariosCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "scenarios",
		Short: "List the scenario catalogue",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			all, err := scenarioCatalog().All()
			if err != nil {
				return err
			}
			for _, s := range all {
				fmt.Fprintf(a.out, "%-28s %-12s %s\n", s.Name, history.Policy{Keys: s.Policy.Keys, Journal: s.Policy.Journal}, s.Title)
			}
			return nil
		},
	}
}

// scenarioCatalog is the scenarios 'retrylab scenarios' lists.
func scenarioCatalog() *scenario.Catalog { return scenario.NewCatalog(fixtures.FS) }
