package otlp

// What a writer keeps of every trace it has seen lives as long as the
// write does: for a file import, the whole import, one entry per trace in
// the file (125 000 at a million spans). It is kept free of pointers (ids
// as bytes, strings as offsets into one byte arena, the states in blocks
// of plain structs, the map keyed by the trace id's 16 bytes), so the
// collector, which runs often under the import's heap limit, has nothing
// of it to scan.

// strRef is a string kept in a writer's arena: its offset and length.
type strRef struct{ off, n uint32 }

// arena holds the strings of the writer's per-trace state, one after the
// other. It only grows; strings come out of it copied.
//
// The names in a trace's summary (its root span's, its service) repeat
// from trace to trace: up to maxShared of them are kept once (intern), and
// come out of it as one string each (shared).
type arena struct {
	b      []byte
	refs   map[string]strRef
	shares map[strRef]string
}

// maxShared bounds how many distinct names an arena keeps once.
const maxShared = 4096

// intern is add for a string that is likely to repeat.
func (a *arena) intern(s string) strRef {
	if r, ok := a.refs[s]; ok {
		return r
	}
	r := a.add(s)
	if len(a.refs) < maxShared {
		if a.refs == nil {
			a.refs = map[string]strRef{}
		}
		a.refs[s] = r
	}
	return r
}

// shared is str for a string kept by intern: one copy for all its uses.
func (a *arena) shared(r strRef) string {
	if s, ok := a.shares[r]; ok {
		return s
	}
	s := a.str(r)
	if len(a.shares) < maxShared {
		if a.shares == nil {
			a.shares = map[strRef]string{}
		}
		a.shares[r] = s
	}
	return s
}

func (a *arena) add(s string) strRef {
	if s == "" {
		return strRef{}
	}
	r := strRef{off: uint32(len(a.b)), n: uint32(len(s))}
	a.b = append(a.b, s...)
	return r
}

func (a *arena) str(r strRef) string {
	if r.n == 0 {
		return ""
	}
	return string(a.b[r.off : r.off+r.n])
}

// traceState is what a writer keeps of each trace it has seen.
type traceState struct {
	trace strRef
	exec  strRef // its execution, as decided here
	from  strRef // the execution its earlier spans are under, to move at the end
	split bool   // spans of it came in more than one write
	own   bool   // the database held nothing of it when this writer first saw it
	sum   traceSum
}

// traceSum is summary without pointers: what a trace's new spans say.
type traceSum struct {
	n, runs                     int
	started, ended, rootStart   int64
	lastRoot                    int64 // as summary.lastRoot
	rootName, errText, fallback strRef
	failed                      bool
	hand                        handVerdict // as summary.hand; written by the audit goroutine
	chunk                       int32       // as summary.chunk
	effects, weighing           int         // as summary's
}

// add is summary.add, keeping the strings in a.
func (m *traceSum) add(s *Span, a *arena) {
	if m.n == 0 || s.Start < m.started {
		m.started = s.Start
	}
	if s.End > m.ended {
		m.ended = s.End
	}
	m.n++
	if s.ParentID == "" {
		m.runs++ // one run per trace: its root span
		if m.rootName.n == 0 || s.Start < m.rootStart {
			m.rootName, m.rootStart = a.intern(s.Name), s.Start
		}
		if failed := s.Status == "error"; m.runs == 1 || laterRoot(s.Start, failed, m.lastRoot) {
			m.lastRoot, m.failed, m.errText = s.Start, failed, strRef{}
			if failed {
				m.errText = a.intern(s.ErrorText())
			}
		}
	}
	if m.fallback.n == 0 {
		m.fallback = a.intern(firstNonEmpty(s.Service, s.Scope, "spans"))
	}
}

// summary is m with its strings taken out of a.
func (m *traceSum) summary(a *arena) summary {
	return summary{n: m.n, runs: m.runs, started: m.started, ended: m.ended, rootStart: m.rootStart, lastRoot: m.lastRoot,
		rootName: a.shared(m.rootName), failed: m.failed, hand: m.hand, chunk: m.chunk,
		errText: a.shared(m.errText), fallback: a.shared(m.fallback), effects: m.effects,
		weighing: m.weighing}
}

// stateBlock is how many traceStates a block holds unless the writer says
// fewer will do: blocks never move, so the audit goroutine can hold
// pointers into them while more are added.
const stateBlock = 1024

// traceStates is a writer's per-trace state, in order of first mention.
type traceStates struct {
	blocks [][]traceState
	// per is the length of a block, stateBlock when 0: a receiver's
	// request of 512 spans holds a few dozen traces, and a block of 1024
	// states was a tenth of the bytes it allocated.
	per   int
	n     int
	byID  map[[16]byte]int32 // trace ids as convert writes them (32 lowercase hex digits)
	other map[string]int32   // any other trace id
	names arena
}

// len is how many traces there are.
func (ts *traceStates) len() int { return ts.n }

// at is the i-th trace's state.
func (ts *traceStates) at(i int) *traceState {
	per := ts.blockLen()
	return &ts.blocks[i/per][i%per]
}

// blockLen is the length of a block.
func (ts *traceStates) blockLen() int {
	if ts.per > 0 {
		return ts.per
	}
	return stateBlock
}

// get finds trace's state.
func (ts *traceStates) get(trace string) (*traceState, bool) {
	var i int32
	var ok bool
	if k, hex := hexID(trace); hex {
		i, ok = ts.byID[k]
	} else {
		i, ok = ts.other[trace]
	}
	if !ok {
		return nil, false
	}
	return ts.at(int(i)), true
}

// add adds trace's state, which get did not find.
func (ts *traceStates) add(trace string) *traceState {
	i := ts.n
	if per := ts.blockLen(); i%per == 0 {
		ts.blocks = append(ts.blocks, make([]traceState, per))
	}
	ts.n++
	if k, hex := hexID(trace); hex {
		if ts.byID == nil {
			ts.byID = map[[16]byte]int32{}
		}
		ts.byID[k] = int32(i)
	} else {
		if ts.other == nil {
			ts.other = map[string]int32{}
		}
		ts.other[trace] = int32(i)
	}
	st := ts.at(i)
	st.trace = ts.names.add(trace)
	return st
}

// str is a string of the states'.
func (ts *traceStates) str(r strRef) string { return ts.names.str(r) }

// hexID decodes a trace id of 32 lowercase hex digits; ok is false for any
// other string (which then has a key of its own: "AB" and "ab" are two ids).
func hexID(s string) (id [16]byte, ok bool) {
	if len(s) != 32 {
		return id, false
	}
	for i := range 16 {
		hi, lo := unhex(s[2*i]), unhex(s[2*i+1])
		if hi > 15 || lo > 15 {
			return id, false
		}
		id[i] = hi<<4 | lo
	}
	return id, true
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return 255
}
