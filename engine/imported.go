package engine

import (
	"encoding/gob"
	"fmt"
	"net/http"

	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/store"
)

// Store is the host's database, for adapters that keep their own
// collections in it (engine/otlp's receiver of live traces).
func (h *Host) Store() *store.DB { return h.db }

// Announce tells subscribers (a running explorer) that an execution
// changed outside a run, as when imported spans arrive.
func (h *Host) Announce(exec string) { h.bus.publish(notice.Notice{Execution: exec}) }

// ImportedEvents is an imported execution's trace as the fold's input
// events, translated by its source (Config.Imports); an execution
// retrylab ran has none.
func (h *Host) ImportedEvents(id string) ([]trace.Event, error) {
	return h.stored().ImportedEvents(id)
}

// stored reads the host's database, imported executions through the
// host's sources.
func (h *Host) stored() stored { return stored{h.db, h.cfg.Imports} }

// ImportedEvents asks the host for an imported execution's trace, in gob:
// a call's arguments and result are raw bytes as the source wrote them
// (spaced JSON, or not JSON at all), which JSON would re-encode.
func (c *Client) ImportedEvents(id string) ([]trace.Event, error) {
	resp, err := c.tracesJSON("imported_events_gob", idArgs{ID: id})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out []trace.Event
	if err := gob.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("host pid %d: %w", c.info.PID, err)
	}
	return out, nil
}

// serveImportedEventsGob answers Client.ImportedEvents.
func (h *Host) serveImportedEventsGob(w http.ResponseWriter, r *http.Request) {
	var a idArgs
	if err := readJSON(r, &a); err != nil {
		writeTracesError(w, fmt.Errorf("bad control request: %w", err))
		return
	}
	evs, err := h.ImportedEvents(a.ID)
	if err != nil {
		writeTracesError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-gob")
	_ = gob.NewEncoder(w).Encode(evs)
}
