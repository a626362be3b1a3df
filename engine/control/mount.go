package control

import (
	"encoding/gob"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/internal/jsonlimit"
)

// Server is a host serving the control API to other processes: the
// owner's own Service (an engine.Local), announced for its database.
type Server struct {
	*engine.Local
	host   *engine.Host
	dbPath string // as the host was opened with: HostFile is beside it
}

var _ engine.Service = (*Server)(nil)

// Open opens a host (engine.Open) and serves the control API on it.
func Open(cfg engine.Config) (*Server, error) {
	h, err := engine.Open(cfg)
	if err != nil {
		return nil, err
	}
	s, err := Serve(h)
	if err != nil {
		h.Close()
		return nil, err
	}
	return s, nil
}

// Serve mounts the control API on h's runtime API and announces h for
// its database; h's close withdraws the announcement.
func Serve(h *engine.Host) (*Server, error) {
	s := &Server{Local: engine.NewLocal(h), host: h, dbPath: h.Store().Path()}
	s.handlers(h.Runtime())
	if err := s.writeHostFile(); err != nil {
		return nil, err
	}
	h.Runtime().BeforeClose(s.removeHostFile)
	return s, nil
}

// ControlURL is the base of the control API (POST /v1/control/...), which
// takes the token in the host file as a bearer token.
func (s *Server) ControlURL() string { return s.host.Runtime().URL() }

// handleState streams WriteState to an attached client.
func (s *Server) handleState(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if err := s.WriteState(w); err != nil {
		// The status is sent; a client sees the body end short and the
		// trailer say why.
		w.Header().Set(http.TrailerPrefix+"Retrylab-Error", err.Error())
	}
}

// serveImportedEventsGob answers Client.ImportedEvents.
func (s *Server) serveImportedEventsGob(w http.ResponseWriter, r *http.Request) {
	var a idArgs
	if err := readJSON(r, &a); err != nil {
		writeTracesError(w, fmt.Errorf("bad control request: %w", err))
		return
	}
	evs, err := s.ImportedEvents(a.ID)
	if err != nil {
		writeTracesError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-gob")
	_ = gob.NewEncoder(w).Encode(evs)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// readJSON decodes a request's JSON body into v, up to maxBody bytes and
// jsonlimit.MaxDepth levels; a refusal is a *jsonlimit.BadBody (a 400).
func readJSON(r *http.Request, v any) error {
	return jsonlimit.DecodeRequest(r, maxBody, v)
}

// maxBody is the largest control request read (the runtime API's bound).
const maxBody = 4 << 20
