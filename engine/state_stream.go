package engine

import (
	"fmt"
	"io"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/internal/jsonstream"
	"github.com/retrylab/retrylab/store"
)

// statePage is how many entries WriteState reads at once.
const statePage = 512

// WriteState writes State as indented JSON, the same bytes as encoding the
// State that State returns, but a page of each part at a time: memory does
// not grow with the outbox, the key store, the journals or the CRM.
func (h *Host) WriteState(w io.Writer) error {
	sw := jsonstream.NewObject(w)
	// The outbox, by sequence number.
	sw.Array("outbox")
	for from := uint64(0); ; {
		page, err := h.world.Outbox(from, statePage)
		if err != nil {
			return err
		}
		for _, m := range page {
			if err := sw.Elem(m); err != nil {
				return err
			}
			from = m.Seq + 1
		}
		if len(page) < statePage {
			break
		}
	}
	// The key store, by key.
	sw.Array("keys")
	for from := ""; ; {
		page, err := h.world.KeysPage(from, statePage)
		if err != nil {
			return err
		}
		for _, k := range page {
			if err := sw.Elem(k); err != nil {
				return err
			}
			from = k.Key + "\x00"
		}
		if len(page) < statePage {
			break
		}
	}
	// Every journal, by execution and step.
	sw.Array("journal")
	for exec, step := "", ""; ; {
		var page []JournalEntry
		err := h.db.View(func(tx *store.Tx) error {
			var damaged error
			err := tx.JournalEntriesAfter(exec, step, func(e, s string, data []byte) bool {
				exec, step = e, s
				rec, err := history.DecodeJournal(e, s, data)
				if err != nil {
					damaged = tx.JournalDamaged(e, s, err)
					return false
				}
				page = append(page, JournalEntry{Execution: e, JournalRecord: rec})
				return len(page) < statePage
			})
			if err != nil {
				return err
			}
			return damaged
		})
		if err != nil {
			return fmt.Errorf("read journals: %w", err)
		}
		for _, e := range page {
			if err := sw.Elem(e); err != nil {
				return err
			}
		}
		if len(page) < statePage {
			break
		}
	}
	// The CRM, by record id.
	sw.Array("crm")
	for from := ""; ; {
		page, err := h.world.RecordsPage(from, statePage)
		if err != nil {
			return err
		}
		for _, r := range page {
			if err := sw.Elem(r); err != nil {
				return err
			}
			from = r.ID + "\x00"
		}
		if len(page) < statePage {
			break
		}
	}
	return sw.Close()
}
