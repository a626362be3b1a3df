package main

import (
	"fmt"

	"github.com/retrylab/retrylab/engine/temporal"
	"github.com/retrylab/retrylab/store"
)

// importTemporal imports one Temporal workflow history file and says what
// it did: "order.json: Temporal history JSON, 41 events of run R imported
// -> temporal-F".
func (a *app) importTemporal(db *store.DB, path string) error {
	res, err := temporal.ImportFile(db, path)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.out, "%s: %s, %d events of run %s imported", path, res.Shape, res.Events, res.RunID)
	if res.Repeated > 0 {
		fmt.Fprintf(a.out, ", %d already there", res.Repeated)
	}
	fmt.Fprintf(a.out, " -> %s\n", res.Execution)
	return nil
}
