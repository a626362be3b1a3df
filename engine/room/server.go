package room

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/retrylab/retrylab/engine/attrib"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/world"
	"github.com/retrylab/retrylab/internal/jsonlimit"
	"github.com/retrylab/retrylab/store"
)

// Host is what the room needs of the host it runs on (*engine.Host is
// one): its database, for the room's collections, and its clock.
type Host interface {
	Store() *store.DB
	Now() time.Time
}

// Services are the world's services of the room's host, which
// participants' own agents reach through the room (engine.Providers is
// one).
type Services interface {
	MailURL() string
	CRMURL() string
	MessagesFor(execution string) ([]world.Message, error)
}

// Config configures a Server.
type Config struct {
	Host     Host
	Services Services
	// Code is the join code; required.
	Code string
	// TeacherToken reads the status of the whole room; required.
	TeacherToken string
	// MaxBody bounds a request's body. Default: DefaultMaxBody.
	MaxBody int64
	// MaxFailures wrong join codes for one name from one address within
	// FailureWindow make that name's joins from there refused (429) until
	// the window passed; MaxAddressFailures refusals of any kind (wrong
	// codes under any name, unknown tokens) from one address make all its
	// joins and unknown tokens refused. A classroom behind one address (a
	// NAT, a loopback workshop) is not locked out by one typist, and a
	// guesser of the code is still held to MaxAddressFailures a window.
	// Defaults: 5, 50, 1m.
	MaxFailures        int
	MaxAddressFailures int
	FailureWindow      time.Duration
}

// DefaultMaxBody bounds a request's body unless Config.MaxBody says
// otherwise: a push of a batch of events fits well below it.
const DefaultMaxBody = 4 << 20

// Limits of what a participant sends.
const (
	maxPushEvents   = 1000
	maxIDLen        = 128
	maxParticipants = 1000
	maxAnswers      = 200
)

// Server is the room: its HTTP API (Handler) and its read API (Status).
type Server struct {
	cfg Config
	// limiter counts an address's refusals, names the joins under one
	// name from one address that gave a wrong code (nameKey).
	limiter, names *failureLimiter
	mail           *httputil.ReverseProxy
	crm            *httputil.ReverseProxy
	joinMu         sync.Mutex // one join at a time: names stay unique
}

// NewServer makes the room on a host.
func NewServer(cfg Config) (*Server, error) {
	if cfg.Host == nil || cfg.Services == nil || cfg.Code == "" || cfg.TeacherToken == "" {
		return nil, errors.New("room: a host, its services, a join code and a teacher token are required")
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.MaxFailures <= 0 {
		cfg.MaxFailures = 5
	}
	if cfg.MaxAddressFailures <= 0 {
		cfg.MaxAddressFailures = 50
	}
	if cfg.FailureWindow <= 0 {
		cfg.FailureWindow = time.Minute
	}
	s := &Server{cfg: cfg, limiter: newFailureLimiter(cfg.MaxAddressFailures, cfg.FailureWindow, cfg.Host.Now),
		names: newFailureLimiter(cfg.MaxFailures, cfg.FailureWindow, cfg.Host.Now)}
	var err error
	if s.mail, err = s.proxy(cfg.Services.MailURL(), "/v1/room/mail"); err != nil {
		return nil, err
	}
	if s.crm, err = s.proxy(cfg.Services.CRMURL(), "/v1/room/crm"); err != nil {
		return nil, err
	}
	s.crm.ModifyResponse = crmResponse
	return s, nil
}

// caller is who a request comes from: a participant, or the teacher.
type caller struct {
	teacher     bool
	participant participant
}

type ctxKey struct{}

// AgentExecution is the execution a participant's own agent's effects are
// attributed to in the room's world.
func AgentExecution(participant string) string { return "room-agent:" + participant }

// proxy forwards a participant's request to one of the world's services,
// attributed to the participant whatever attribution it claims, with its
// idempotency key kept apart from every other participant's.
func (s *Server) proxy(target, prefix string) (*httputil.ReverseProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("room: service address %q: %w", target, err)
	}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			c, _ := pr.In.Context().Value(ctxKey{}).(caller)
			pr.SetURL(u)
			pr.Out.URL.Path = strings.TrimPrefix(pr.In.URL.Path, prefix)
			if pr.Out.URL.Path == "" {
				pr.Out.URL.Path = "/"
			}
			pr.Out.URL.RawPath = ""
			pr.Out.Header.Del("Authorization")
			at := attrib.FromHeader(pr.In.Header)
			at.Execution = AgentExecution(c.participant.ID)
			if k := pr.In.Header.Get(attrib.HeaderIdempotencyKey); k != "" {
				at.Key = c.participant.ID + "/" + k
			}
			at.SetHeader(pr.Out.Header)
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			writeError(w, http.StatusBadGateway, "the room's service did not answer")
		},
	}, nil
}

// Handler serves the room's API under /v1/room/.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(s.serve)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, "/v1/room/") {
		writeError(w, http.StatusNotFound, "not found: the room's API is under /v1/room/")
		return
	}
	addr := remoteHost(r)
	// An address that keeps failing is refused, the join code unchecked,
	// until its window passed: guessing the code is slowed down. A valid
	// token still passes (256 random bits are not guessed): participants
	// behind one address, all of a loopback workshop, are not locked out
	// by one of them mistyping (nor are they by one name's wrong codes,
	// which hold back that name's joins first: join).
	blocked, wait := s.limiter.blocked(addr)
	tooMany := func() { refuseTooMany(w, wait, "too many refused requests from this address: wait and try again") }
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
	path := strings.TrimPrefix(r.URL.Path, "/v1/room")
	if path == "/join" {
		switch {
		case blocked:
			tooMany()
		case r.Method != http.MethodPost:
			writeError(w, http.StatusMethodNotAllowed, "join is a POST")
		default:
			s.join(w, r, addr)
		}
		return
	}
	c, ok := s.authenticate(r)
	if !ok && blocked {
		tooMany()
		return
	}
	if !ok {
		s.limiter.fail(addr)
		w.Header().Set("WWW-Authenticate", `Bearer realm="retrylab room"`)
		writeError(w, http.StatusUnauthorized, "a participant token (from retrylab join) is required")
		return
	}
	switch {
	case path == "/status" && r.Method == http.MethodGet:
		s.serveStatus(w, c)
	case path == "/push" && r.Method == http.MethodPost:
		s.push(w, r, c)
	case path == "/leave" && r.Method == http.MethodPost:
		s.leave(w, c)
	case path == "/executions" && r.Method == http.MethodGet:
		s.serveExecutions(w, c)
	case path == "/events" && r.Method == http.MethodGet:
		s.serveEvents(w, r, c)
	case path == "/mail" || strings.HasPrefix(path, "/mail/"), path == "/crm" || strings.HasPrefix(path, "/crm/"):
		if c.teacher {
			writeError(w, http.StatusForbidden, "the mail API and CRM take a participant's token: their effects are counted in a participant's outbox")
			return
		}
		if strings.HasPrefix(path, "/mail") {
			s.mail.ServeHTTP(w, r.WithContext(contextWith(r, c)))
			return
		}
		// The CRM: each participant's records apart from everyone else's.
		out, ok := crmRequest(w, r, c, "/v1/room/crm")
		if !ok {
			return
		}
		s.crm.ServeHTTP(w, out.WithContext(contextWith(out, c)))
	default:
		writeError(w, http.StatusNotFound, "no such room request: "+r.Method+" "+r.URL.Path+" (the teacher's control API is on the host's loopback address only)")
	}
}

// refuseTooMany answers 429 with msg, to come back after wait.
func refuseTooMany(w http.ResponseWriter, wait time.Duration, msg string) {
	w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds()+0.999)))
	writeError(w, http.StatusTooManyRequests, msg)
}

// nameKey is what the joins under one name from one address are counted
// by: the name as the room would keep it, case aside.
func nameKey(addr, name string) string {
	return addr + "\x00" + strings.ToLower(SanitiseName(name))
}

// remoteHost is the address a request came from, without its port.
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// bearer is a request's bearer token, or "".
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	const p = "Bearer "
	if len(h) > len(p) && strings.EqualFold(h[:len(p)], p) {
		return strings.TrimSpace(h[len(p):])
	}
	return ""
}

// authenticate finds who a request's bearer token belongs to, comparing it
// with every token in constant time.
func (s *Server) authenticate(r *http.Request) (caller, bool) {
	tok := bearer(r)
	if tok == "" {
		return caller{}, false
	}
	if sameSecret(tok, s.cfg.TeacherToken) {
		return caller{teacher: true}, true
	}
	h := tokenHash(tok)
	var found participant
	var ok bool
	err := s.cfg.Host.Store().View(func(tx *store.Tx) error {
		ps, err := participants(tx)
		for _, p := range ps {
			if subtleEqual(h, p.TokenHash) {
				found, ok = p, true
			}
		}
		return err
	})
	if err != nil {
		return caller{}, false
	}
	return caller{participant: found}, ok
}

func subtleEqual(a, b []byte) bool {
	return len(a) == len(b) && sameSecret(string(a), string(b))
}

// JoinRequest is the body of POST /v1/room/join. Token, when given, is
// the token this name was given before: with it a participant joining
// again (after the room restarted elsewhere, say) gets its place back.
type JoinRequest struct {
	Code  string `json:"code"`
	Name  string `json:"name"`
	Token string `json:"token,omitempty"`
}

// JoinResponse is the room's answer to a join.
type JoinResponse struct {
	Participant string `json:"participant"`
	Name        string `json:"name"`
	Token       string `json:"token"`
}

func (s *Server) join(w http.ResponseWriter, r *http.Request, addr string) {
	var req JoinRequest
	if !decodeBody(w, r, &req) {
		return
	}
	// A name that keeps giving a wrong code from this address waits, its
	// code unchecked; the others behind the address do not.
	key := nameKey(addr, req.Name)
	if blocked, wait := s.names.blocked(key); blocked {
		refuseTooMany(w, wait, "too many wrong codes for this name from this address: wait and try again")
		return
	}
	if !sameSecret(normaliseCode(req.Code), normaliseCode(s.cfg.Code)) {
		s.limiter.fail(addr)
		s.names.fail(key)
		writeError(w, http.StatusUnauthorized, "wrong join code")
		return
	}
	name := SanitiseName(req.Name)
	if name == "" {
		writeError(w, http.StatusBadRequest, "a name is required (printable characters)")
		return
	}
	s.joinMu.Lock()
	defer s.joinMu.Unlock()
	var p participant
	var taken, full, back bool
	err := s.cfg.Host.Store().Update(func(tx *store.Tx) error {
		ps, err := participants(tx)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(ps, func(q participant) bool { return strings.EqualFold(q.Name, name) })
		switch {
		case i >= 0 && req.Token != "" && subtleEqual(tokenHash(req.Token), ps[i].TokenHash):
			// Its own token: the same place, the same token.
			p, back = ps[i], true
		case i >= 0 && !ps[i].Left.IsZero():
			// It left: its place (its runs) back under a new token.
			p = ps[i]
		case i >= 0:
			taken = true
			return nil
		case len(ps) >= maxParticipants:
			full = true
			return nil
		default:
			id, err := newToken("")
			if err != nil {
				return err
			}
			p = participant{ID: "p_" + id[:12], Name: name, Joined: s.cfg.Host.Now()}
		}
		p.Left = time.Time{}
		if back {
			req.Token = strings.TrimSpace(req.Token)
		} else {
			if req.Token, err = newToken("rlp_"); err != nil {
				return err
			}
			p.TokenHash = tokenHash(req.Token)
		}
		data, err := json.Marshal(p)
		if err != nil {
			return err
		}
		return tx.Put(BucketParticipants, []byte(p.ID), data)
	})
	switch {
	case err != nil:
		writeError(w, http.StatusInternalServerError, "record the participant: "+err.Error())
	case full:
		writeError(w, http.StatusForbidden, "the room is full")
	case taken:
		writeError(w, http.StatusConflict, fmt.Sprintf("the name %q is taken in this room: pick another, or join from the database that joined under it (its token shows it is you)", name))
	case back:
		writeJSON(w, http.StatusOK, JoinResponse{Participant: p.ID, Name: p.Name, Token: req.Token})
	default:
		writeJSON(w, http.StatusCreated, JoinResponse{Participant: p.ID, Name: p.Name, Token: req.Token})
	}
}

// leave marks the calling participant as gone: the room's row says so,
// and its name is free to join again under (its runs stay in the room).
// Its token no longer passes.
func (s *Server) leave(w http.ResponseWriter, c caller) {
	if c.teacher {
		writeError(w, http.StatusForbidden, "only a participant leaves")
		return
	}
	p := c.participant
	p.Left = s.cfg.Host.Now()
	p.TokenHash = nil
	data, err := json.Marshal(p)
	if err == nil {
		s.joinMu.Lock()
		err = s.cfg.Host.Store().Update(func(tx *store.Tx) error { return tx.Put(BucketParticipants, []byte(p.ID), data) })
		s.joinMu.Unlock()
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "record the leave: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"left": p.Name})
}

// PushRequest is the body of POST /v1/room/push: one execution's record
// and a batch of its events (each with its seq), and the participant's
// predictions, each optional. Answers, when given, replace the
// participant's answers lesson by lesson (the class tally is made of
// them); a room that predates them ignores them.
type PushRequest struct {
	Execution   *Execution        `json:"execution,omitempty"`
	Events      []json.RawMessage `json:"events,omitempty"`
	Predictions *Predictions      `json:"predictions,omitempty"`
	Answers     []Answer          `json:"answers,omitempty"`
}

// PushResponse acknowledges a push: everything in it is stored.
type PushResponse struct {
	Stored int `json:"stored"`
}

func validID(s string) bool {
	return s != "" && len(s) <= maxIDLen && utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

func (s *Server) push(w http.ResponseWriter, r *http.Request, c caller) {
	if c.teacher {
		writeError(w, http.StatusForbidden, "only a participant pushes runs")
		return
	}
	var req PushRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if len(req.Events) > maxPushEvents {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("at most %d events a push", maxPushEvents))
		return
	}
	if len(req.Events) > 0 && req.Execution == nil {
		writeError(w, http.StatusBadRequest, "events need their execution")
		return
	}
	if req.Execution != nil && !validID(req.Execution.ID) {
		writeError(w, http.StatusBadRequest, "bad execution id")
		return
	}
	seqs := make([]uint64, len(req.Events))
	for i, raw := range req.Events {
		var ev struct {
			Seq uint64 `json:"seq"`
		}
		if err := json.Unmarshal(raw, &ev); err != nil || ev.Seq == 0 {
			writeError(w, http.StatusBadRequest, "every event needs its seq")
			return
		}
		seqs[i] = ev.Seq
	}
	if p := req.Predictions; p != nil && (p.Right < 0 || p.Asked < 0 || p.Right > p.Asked) {
		writeError(w, http.StatusBadRequest, "predictions: right must be between 0 and asked")
		return
	}
	if len(req.Answers) > maxAnswers {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("at most %d answers", maxAnswers))
		return
	}
	for i := range req.Answers {
		a := &req.Answers[i]
		a.Lesson = clip(a.Lesson, maxIDLen)
		if a.Lesson == "" || a.Predicted < -1 || a.Actual < 0 {
			writeError(w, http.StatusBadRequest, "answers: each needs its lesson, a prediction of -1 (none) or more, an actual of 0 or more")
			return
		}
		a.Correct = a.Predicted == a.Actual
	}
	id := c.participant.ID
	stored := 0
	now := s.cfg.Host.Now()
	err := s.cfg.Host.Store().Update(func(tx *store.Tx) error {
		changed := false // anything new: the participant's activity
		put := func(b store.Bucket, k []byte, v any) error {
			data, err := json.Marshal(v)
			if err != nil {
				return err
			}
			if old := tx.GetInPlace(b, k); old != nil && bytes.Equal(old, data) {
				return nil
			}
			changed = true
			return tx.Put(b, k, data)
		}
		if x := req.Execution; x != nil {
			x.Scenario = clip(x.Scenario, maxIDLen)
			x.Status = clip(x.Status, 32)
			if data := tx.GetInPlace(BucketExecutions, execKey(id, x.ID)); data != nil {
				var had Execution
				if json.Unmarshal(data, &had) == nil && !had.Started.Equal(x.Started) {
					// Another incarnation: the participant reset and ran again.
					if err := dropEvents(tx, id, x.ID); err != nil {
						return err
					}
				}
			}
			if err := put(BucketExecutions, execKey(id, x.ID), x); err != nil {
				return err
			}
			for i, raw := range req.Events {
				k := eventKey(id, x.ID, seqs[i])
				if tx.GetInPlace(BucketEvents, k) != nil {
					continue // a resend: the room has it already
				}
				if err := tx.Put(BucketEvents, k, bytes.Clone(raw)); err != nil {
					return err
				}
				stored++
			}
		}
		if p := req.Predictions; p != nil {
			if err := put(BucketPredictions, []byte(id), p); err != nil {
				return err
			}
		}
		if req.Answers != nil {
			if err := put(BucketAnswers, []byte(id), req.Answers); err != nil {
				return err
			}
		}
		if !changed && stored == 0 {
			return nil
		}
		return tx.Put(BucketActivity, []byte(id), store.U64(uint64(now.UnixNano())))
	})
	if err != nil {
		writeError(w, http.StatusInternalServerError, "store the push: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, PushResponse{Stored: stored})
}

// clip cuts s to at most n bytes on a rune boundary, printable runes only.
func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	for len(s) > n {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}

func (s *Server) serveExecutions(w http.ResponseWriter, c caller) {
	if c.teacher {
		writeError(w, http.StatusForbidden, "a participant's token lists its own executions")
		return
	}
	var xs []Execution
	err := s.cfg.Host.Store().View(func(tx *store.Tx) (err error) {
		xs, err = executionsOf(tx, c.participant.ID)
		return err
	})
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"executions": xs})
}

func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request, c caller) {
	if c.teacher {
		writeError(w, http.StatusForbidden, "a participant's token reads its own events")
		return
	}
	exec := r.URL.Query().Get("execution")
	if !validID(exec) {
		writeError(w, http.StatusBadRequest, "execution=ID is required")
		return
	}
	var evs []json.RawMessage
	err := s.cfg.Host.Store().View(func(tx *store.Tx) (err error) {
		evs, err = eventsOf(tx, c.participant.ID, exec, 10000)
		return err
	})
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if evs == nil {
		evs = []json.RawMessage{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"execution": exec, "events": evs})
}

// Status is the room at a glance: one entry per participant, by name, the
// class's tally of each scenario run (ScenarioTally, by scenario) and of
// each lesson (Tally).
type Status struct {
	Participants []ParticipantStatus `json:"participants"`
	Scenarios    []ScenarioTally     `json:"scenarios"`
	Lessons      []LessonTally       `json:"lessons"`
}

// ScenarioTally is how the class's runs of one scenario went: how many
// participants ran it, and how many of them saw their latest run of it
// send a duplicate (a participant counts once per scenario, by that run
// alone: what they ran before, or of another scenario, does not count).
type ScenarioTally struct {
	Scenario     string `json:"scenario"`
	Participants int    `json:"participants"`
	Duplicated   int    `json:"duplicated"`
}

// ParticipantStatus is one participant's part of the room: how many
// executions it mirrored, its latest one's scenario and outcome and that
// run's own outbox (LatestOutbox, LatestDuplicates), how much mail all its
// runs and its own agent had delivered (Outbox), how many of those were
// duplicates (Duplicates), and how its predictions went.
type ParticipantStatus struct {
	Name       string `json:"name"`
	Executions int    `json:"executions"`
	Scenario   string `json:"scenario"`
	Outcome    string `json:"outcome"`
	// LatestOutbox and LatestDuplicates are the mail the latest execution
	// delivered and the duplicates among it.
	LatestOutbox     int         `json:"latest_outbox"`
	LatestDuplicates int         `json:"latest_duplicates"`
	Outbox           int         `json:"outbox"`
	Duplicates       int         `json:"duplicates"`
	Predictions      Predictions `json:"predictions"`
	// Lesson is the lesson the participant answered last, if any.
	Lesson string `json:"lesson,omitempty"`
	// Left says the participant left the room (retrylab leave); its runs
	// stay, and its name is free to join again under.
	Left bool `json:"left,omitempty"`
	// Active is when the participant last pushed anything to the room (a
	// run's events, its record, its predictions), else when it joined: by
	// the room's clock.
	Active time.Time `json:"active"`
}

// Status reads the room's status (the explorer's room view reads it too).
func (s *Server) Status() (Status, error) {
	type part struct {
		p       participant
		execs   []Execution
		pred    Predictions
		answers []Answer
		active  time.Time
	}
	var parts []part
	err := s.cfg.Host.Store().View(func(tx *store.Tx) error {
		ps, err := participants(tx)
		if err != nil {
			return err
		}
		for _, p := range ps {
			xs, err := executionsOf(tx, p.ID)
			if err != nil {
				return err
			}
			var pred Predictions
			if data := tx.Get(BucketPredictions, []byte(p.ID)); data != nil {
				if err := json.Unmarshal(data, &pred); err != nil {
					return fmt.Errorf("read room predictions: %w", err)
				}
			}
			var answers []Answer
			if data := tx.Get(BucketAnswers, []byte(p.ID)); data != nil {
				if err := json.Unmarshal(data, &answers); err != nil {
					return fmt.Errorf("read room answers: %w", err)
				}
			}
			active := p.Joined
			if data := tx.Get(BucketActivity, []byte(p.ID)); len(data) == 8 {
				active = time.Unix(0, int64(store.DecodeU64(data))).UTC()
			}
			parts = append(parts, part{p, xs, pred, answers, active})
		}
		return nil
	})
	if err != nil {
		return Status{}, fmt.Errorf("read the room: %w", err)
	}
	st := Status{Participants: []ParticipantStatus{}}
	answers := make([][]Answer, 0, len(parts))
	scenarios := map[string]*ScenarioTally{}
	for _, pt := range parts {
		ps := ParticipantStatus{Name: pt.p.Name, Executions: len(pt.execs), Predictions: pt.pred, Active: pt.active, Left: !pt.p.Left.IsZero()}
		if n := len(pt.answers); n > 0 {
			ps.Lesson = pt.answers[n-1].Lesson
			answers = append(answers, pt.answers)
		}
		for _, x := range pt.execs {
			sent, dup := x.outbox()
			ps.Outbox += sent
			ps.Duplicates += dup
		}
		if x, ok := latestOf(pt.execs); ok {
			ps.Scenario, ps.Outcome = x.Scenario, x.Status
			ps.LatestOutbox, ps.LatestDuplicates = x.outbox()
		}
		scenarios = tallyScenarios(scenarios, pt.execs)
		msgs, err := s.cfg.Services.MessagesFor(AgentExecution(pt.p.ID))
		if err != nil {
			return Status{}, fmt.Errorf("read the room: %w", err)
		}
		sends := map[string]int{}
		for _, m := range msgs {
			k := history.SendIntent(m.To, m.Subject)
			sends[k]++
			ps.Outbox++
			if sends[k] > 1 {
				ps.Duplicates++
			}
		}
		st.Participants = append(st.Participants, ps)
	}
	slices.SortFunc(st.Participants, func(a, b ParticipantStatus) int { return strings.Compare(a.Name, b.Name) })
	st.Lessons = Tally(answers...)
	st.Scenarios = make([]ScenarioTally, 0, len(scenarios))
	for _, t := range scenarios {
		st.Scenarios = append(st.Scenarios, *t)
	}
	slices.SortFunc(st.Scenarios, func(a, b ScenarioTally) int { return strings.Compare(a.Scenario, b.Scenario) })
	return st, nil
}

// outbox is the mail the execution delivered and the duplicates among it.
func (e Execution) outbox() (sent, duplicates int) {
	for _, n := range e.Sends {
		sent += n
		duplicates += max(0, n-1)
	}
	if e.Duplicates && duplicates == 0 {
		duplicates = 1 // the record says so, whatever its counts lost
	}
	return sent, duplicates
}

// latestOf is the execution last updated among xs (the earliest listed on
// a tie); ok is false when there is none.
func latestOf(xs []Execution) (Execution, bool) {
	if len(xs) == 0 {
		return Execution{}, false
	}
	latest := xs[0]
	for _, x := range xs[1:] {
		if x.Updated.After(latest.Updated) {
			latest = x
		}
	}
	return latest, true
}

// tallyScenarios adds one participant's executions to the class's tally
// by scenario: the participant counts once per scenario it ran, as
// duplicated when its latest run of that scenario sent a duplicate.
func tallyScenarios(by map[string]*ScenarioTally, xs []Execution) map[string]*ScenarioTally {
	per := map[string][]Execution{}
	for _, x := range xs {
		if x.Scenario != "" {
			per[x.Scenario] = append(per[x.Scenario], x)
		}
	}
	for name, runs := range per {
		t := by[name]
		if t == nil {
			t = &ScenarioTally{Scenario: name}
			by[name] = t
		}
		t.Participants++
		if x, _ := latestOf(runs); x.hasDuplicate() {
			t.Duplicated++
		}
	}
	return by
}

// hasDuplicate says whether the execution sent one message twice.
func (e Execution) hasDuplicate() bool {
	_, dup := e.outbox()
	return dup > 0
}

func (s *Server) serveStatus(w http.ResponseWriter, _ caller) {
	st, err := s.Status()
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// decodeBody reads a JSON body into v, answering 413 (larger than the
// room's bound) or 400 (not JSON, or nested deeper than jsonlimit allows)
// itself.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes", tooBig.Limit))
			return false
		}
		writeError(w, http.StatusBadRequest, "read the body: "+err.Error())
		return false
	}
	if err := jsonlimit.Check(data); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return false
	}
	if err := json.Unmarshal(data, v); err != nil {
		writeError(w, http.StatusBadRequest, "the body is not the JSON expected: "+err.Error())
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

// contextWith is r's context carrying who called, for the proxies.
func contextWith(r *http.Request, c caller) context.Context {
	return context.WithValue(r.Context(), ctxKey{}, c)
}
