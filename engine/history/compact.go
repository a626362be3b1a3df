package history

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/retrylab/retrylab/engine/internal/pack"
)

// The compact encoding of an event, which Encode writes since schema v2 of
// the store. (Before it, every event was a JSON object; Decode reads both, so
// databases written before still open.) A JSON event repeated its field
// names, its type, the tool, the key and the request in full in every
// attempt: about 300 bytes. The compact one is a byte string:
//
//	0xC1                 the magic byte: no JSON text starts with it
//	uvarint              Seq
//	string               Type
//	uvarint              which fields follow (the f* bits), then each of
//	                     them in bit order
//
// Numbers are varints (signed ones zigzag); Time is its Unix nanoseconds as 8
// little-endian bytes (or seconds and nanoseconds as varints outside 1678-2262),
// and its zone offset when not UTC. A string is a uvarint v and what v says:
// v&3 = 0 is entry v>>2 of the table below; 1 is v>>2 bytes of text; 2 is a
// table entry (a uvarint index) followed by v>>2 bytes written as lowercase hex
// (the keys "ik_<32 hex digits>" take 18 bytes instead of 35); 3 is the event's
// Key (an Idempotency-Key header repeats it). JSON values (Args, Result,
// bodies) are kept byte for byte as encoding/json stored them (compacted,
// escaped); a flat object is stored as its members (a uvarint n<<1|1, then n
// times a name, 0 for a string or 1 for a literal, and the string or literal),
// anything else as its bytes (a uvarint len<<1, then the bytes).

// compactMagic starts every compactly encoded event.
const compactMagic = 0xC1

// Field bits, most frequent first so most events need one or two bytes.
const (
	fTime = 1 << iota
	fRun
	fStep
	fTool
	fKey
	fAttempt
	fText
	fOutcome
	fFault
	fPlan
	fMaxAttempts
	fDuration
	fDelay
	fRequest
	fResponse
	fError
	fDeduplicated
	fTurn
	fArgs
	fResult
	fResultRun
	fExitCode
	fPID
	fScenario
	fZone     // Time's zone offset in seconds, when not 0
	fWideTime // Time outside what int64 nanoseconds hold
	fEffect   // EffectObserved's Effect
	fOffset   // ClockMoved's Offset
	fLast     // the first bit not in use
)

// Exchange field bits.
const (
	xMethod = 1 << iota
	xURL
	xStatus
	xHeaders
	xBody
	xLast
)

// table holds the strings stored as an index. It is part of the format:
// entries are only ever appended, never changed, removed or reordered.
var table = [...]string{
	// 0: the empty string, also the prefix of plain hex strings
	"",
	// 1-16: event types
	"ExecutionStarted", "WorkerStarted", "TurnStarted", "ToolCallScheduled", "AttemptStarted",
	"AttemptFinished", "RetryScheduled", "StepRecorded", "StepReplayed", "StepCompleted",
	"FaultInjected", "WorkerCrashed", "Escalated", "JournalDeleted", "ExecutionCompleted",
	"ExecutionFailed",
	// 17-22: outcomes
	"ok", "timeout", "error", "conflict", "mismatch", "rejected",
	// 23-29: fault points
	"timeout-before-effect", "timeout-after-effect", "crash-before-call", "crash-after-effect",
	"crash-after-record", "server-error", "slow-response",
	// 30-: frequent steps, tools, texts, requests and errors
	"step-1", "step-2", "step-3", "step-4", "step-5", "step-6", "step-7", "step-8",
	"send_invoice_email", "record_invoice", "open_ticket", "lookup_customer", "save_customer",
	"from the scenario's fault plan", "keyed", "read", "idempotent", "unsafe",
	"none", "keys", "journal", "keys+journal", "decision", "deleted by hand",
	"POST", "PUT", "GET", "DELETE", "/v1/send", "/v1/records",
	"Idempotency-Key", "Idempotent-Replayed", "Content-Type", "true", "false",
	"application/json", "application/problem+json",
	"no response within 300ms", "no response within 1s",
	"killed by the injected fault: crash after recording",
	"killed by the injected fault: crash after the effect, before recording",
	"The send timed out; trying again", "Recording the invoice in the CRM",
	"ik_", "msg_",
	// 75-: names and values of bodies and problem documents
	"to", "subject", "body", "\u2026", "message_id", "deduplicated", "status", "sent", "id",
	"type", "title", "detail", "urn:retrylab:problem:server-error", "Internal Server Error",
	"injected fault: the server failed before doing anything", "urn:retrylab:problem:response-lost",
	"Gateway Timeout", "urn:retrylab:problem:shutting-down", "Service Unavailable", "null",
	// 95-: effects recorded in the history
	"EffectObserved", "mail", "crm",
	// 98-: execution records (record.go): statuses, scenarios, import formats
	"running", "completed", "killed", "failed", "escalated",
	"naive", "safe", "crash", "invoice-crm", "gen-naive", "gen-safe", "gen-crash",
	"gen-invoice-crm", "gen-unsafe", "gen-exhausted", "otlp", "temporal", "(Temporal workflow)",
}

// tableIndex finds a string's table entry; built once, never changed.
var tableIndex = pack.Index(table[:])

// hexPrefixes are the table entries tried as the prefix of a hex string.
var hexPrefixes = []string{"ik_", "msg_", ""}

// encodeCompact is Encode's form of an event.
func encodeCompact(e Event) ([]byte, error) {
	w := compactWriter{key: e.Key}
	b := make([]byte, 0, 128)
	b = append(b, compactMagic)
	b = binary.AppendUvarint(b, e.Seq)
	b = w.str(b, string(e.Type), false)

	var bits pack.Bits
	set := bits.Set
	_, offset := e.Time.Zone()
	if !e.Time.IsZero() {
		wide := !pack.FitsNanos(e.Time)
		set(fWideTime, wide)
		set(fTime, !wide)
		set(fZone, offset != 0)
	}
	set(fRun, e.Run != 0)
	set(fStep, e.Step != "")
	set(fTool, e.Tool != "")
	set(fKey, e.Key != "")
	set(fAttempt, e.Attempt != 0)
	set(fText, e.Text != "")
	set(fOutcome, e.Outcome != "")
	set(fFault, e.Fault != "")
	set(fPlan, e.Plan != 0)
	set(fMaxAttempts, e.MaxAttempts != 0)
	set(fDuration, e.Duration != 0)
	set(fDelay, e.Delay != 0)
	set(fRequest, e.Request != nil)
	set(fResponse, e.Response != nil)
	set(fError, e.Error != "")
	set(fDeduplicated, e.Deduplicated)
	set(fTurn, e.Turn != 0)
	set(fArgs, len(e.Args) != 0)
	set(fResult, len(e.Result) != 0)
	set(fResultRun, e.ResultRun != 0)
	set(fExitCode, e.ExitCode != 0)
	set(fPID, e.PID != 0)
	set(fScenario, e.Scenario != "")
	set(fEffect, e.Effect != nil)
	set(fOffset, e.Offset != 0)
	b = binary.AppendUvarint(b, uint64(bits))

	var err error
	for bit := pack.Bits(1); bit < fLast; bit <<= 1 {
		if bits&bit == 0 {
			continue
		}
		switch bit {
		case fTime:
			b = pack.AppendNanos(b, e.Time)
		case fWideTime:
			b = pack.AppendWideTime(b, e.Time)
		case fZone:
			b = binary.AppendVarint(b, int64(offset))
		case fRun:
			b = binary.AppendVarint(b, int64(e.Run))
		case fStep: // Step and Tool come before Key: they cannot refer to it
			b = w.str(b, e.Step, false)
		case fTool:
			b = w.str(b, e.Tool, false)
		case fKey:
			b = w.str(b, e.Key, false)
		case fAttempt:
			b = binary.AppendVarint(b, int64(e.Attempt))
		case fText:
			b = w.str(b, e.Text, true)
		case fOutcome:
			b = w.str(b, string(e.Outcome), true)
		case fFault:
			b = w.str(b, e.Fault, true)
		case fPlan:
			b = binary.AppendVarint(b, int64(e.Plan))
		case fMaxAttempts:
			b = binary.AppendVarint(b, int64(e.MaxAttempts))
		case fDuration:
			b = binary.AppendVarint(b, int64(e.Duration))
		case fDelay:
			b = binary.AppendVarint(b, int64(e.Delay))
		case fRequest:
			b, err = w.exchange(b, e.Request)
		case fResponse:
			b, err = w.exchange(b, e.Response)
		case fError:
			b = w.str(b, e.Error, true)
		case fDeduplicated:
		case fTurn:
			b = binary.AppendVarint(b, int64(e.Turn))
		case fArgs:
			b, err = w.json(b, e.Args)
		case fResult:
			b, err = w.json(b, e.Result)
		case fResultRun:
			b = binary.AppendVarint(b, int64(e.ResultRun))
		case fExitCode:
			b = binary.AppendVarint(b, int64(e.ExitCode))
		case fPID:
			b = binary.AppendVarint(b, int64(e.PID))
		case fScenario:
			b = w.str(b, e.Scenario, true)
		case fEffect:
			fx := e.Effect
			b = w.str(b, fx.Service, false)
			b = w.str(b, fx.ID, false)
			b = w.str(b, fx.Target, false)
			b = w.str(b, fx.Summary, false)
			b = binary.AppendVarint(b, int64(fx.Version))
		case fOffset:
			b = binary.AppendVarint(b, int64(e.Offset))
		}
		if err != nil {
			return nil, fmt.Errorf("encode %s event: %w", e.Type, err)
		}
	}
	return b, nil
}

// compactWriter writes the strings of one event.
type compactWriter struct {
	key string // the event's Key, which other strings may refer to
}

// str appends a string; mayBeKey lets it refer to the event's Key.
func (w compactWriter) str(b []byte, s string, mayBeKey bool) []byte {
	return appendStr(w, b, s, mayBeKey)
}

// appendStr is str for a string or its bytes (a flat object's members,
// which stay slices of the JSON text: no copy each).
func appendStr[S ~string | ~[]byte](w compactWriter, b []byte, s S, mayBeKey bool) []byte {
	if i, ok := tableIndex[string(s)]; ok {
		return binary.AppendUvarint(b, uint64(i)<<2)
	}
	if mayBeKey && string(s) == w.key {
		return binary.AppendUvarint(b, 3)
	}
	for _, p := range hexPrefixes {
		if len(s) < len(p) || string(s[:len(p)]) != p {
			continue
		}
		h := s[len(p):]
		if len(h) >= 8 && len(h)%2 == 0 && pack.IsLowerHex(h) {
			b = binary.AppendUvarint(b, uint64(len(h)/2)<<2|2)
			b = binary.AppendUvarint(b, uint64(tableIndex[p]))
			return pack.AppendHexBytes(b, h)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(s))<<2|1)
	return append(b, s...)
}

func (w compactWriter) exchange(b []byte, x *Exchange) ([]byte, error) {
	var bits uint64
	if x.Method != "" {
		bits |= xMethod
	}
	if x.URL != "" {
		bits |= xURL
	}
	if x.Status != 0 {
		bits |= xStatus
	}
	if len(x.Headers) != 0 {
		bits |= xHeaders
	}
	if len(x.Body) != 0 {
		bits |= xBody
	}
	b = binary.AppendUvarint(b, bits)
	if bits&xMethod != 0 {
		b = w.str(b, x.Method, true)
	}
	if bits&xURL != 0 {
		b = w.str(b, x.URL, true)
	}
	if bits&xStatus != 0 {
		b = binary.AppendVarint(b, int64(x.Status))
	}
	if bits&xHeaders != 0 {
		names := make([]string, 0, len(x.Headers))
		for k := range x.Headers {
			names = append(names, k)
		}
		sort.Strings(names)
		b = binary.AppendUvarint(b, uint64(len(names)))
		for _, k := range names {
			b = w.str(b, k, true)
			b = w.str(b, x.Headers[k], true)
		}
	}
	if bits&xBody != 0 {
		return w.json(b, x.Body)
	}
	return b, nil
}

// json appends a JSON value as encoding/json stores a RawMessage (compacted,
// with <, > and & escaped), refusing what is not JSON as it does. A flat
// object (string or scalar members only: request and response bodies,
// problem documents) is stored member by member, its names and strings
// through the table; anything else as its bytes.
func (w compactWriter) json(b []byte, v json.RawMessage) ([]byte, error) {
	text, err := pack.StoredJSON(v)
	if err != nil {
		return nil, fmt.Errorf("json value: %w", err)
	}
	var space [flatMembers]member
	if members, ok := flatObject(space[:0], text); ok {
		b = binary.AppendUvarint(b, uint64(len(members))<<1|1)
		for _, m := range members {
			b = appendStr(w, b, m.name, false)
			if m.isString {
				b = append(b, 0)
			} else {
				b = append(b, 1)
			}
			b = appendStr(w, b, m.value, false)
		}
		return b, nil
	}
	b = binary.AppendUvarint(b, uint64(len(text))<<1)
	return append(b, text...), nil
}

// member is one name and value of a flat JSON object; value is a string's
// text without its quotes, or a scalar's literal. Both are slices of the
// object's text.
type member struct {
	name, value []byte
	isString    bool
}

// flatMembers is room for the members of the usual flat object (a body, a
// problem document) without an allocation.
const flatMembers = 8

// flatObject splits compact JSON text that is an object of strings without
// escapes and scalars into its members, appended to ms, if it is one and
// writing the members back gives the same text.
func flatObject(ms []member, text []byte) ([]member, bool) {
	if len(text) < 2 || text[0] != '{' || text[len(text)-1] != '}' || len(text) == 2 {
		return nil, false
	}
	out := ms[:0]
	rest := text[1 : len(text)-1]
	for len(rest) > 0 {
		name, after, ok := plainString(rest)
		if !ok || len(after) == 0 || after[0] != ':' {
			return nil, false
		}
		rest = after[1:]
		m := member{name: name}
		if len(rest) > 0 && rest[0] == '"' {
			if m.value, rest, ok = plainString(rest); !ok {
				return nil, false
			}
			m.isString = true
		} else {
			end := bytes.IndexByte(rest, ',')
			if end < 0 {
				end = len(rest)
			}
			lit := rest[:end]
			if len(lit) == 0 || bytes.ContainsAny(lit, "{}[]\\\"") {
				return nil, false
			}
			m.value, rest = lit, rest[end:]
		}
		out = append(out, m)
		if len(rest) > 0 {
			if rest[0] != ',' || len(rest) == 1 {
				return nil, false
			}
			rest = rest[1:]
		}
	}
	if !sameFlatText(out, text) {
		return nil, false
	}
	return out, true
}

// plainString reads a JSON string without backslashes at the start of b:
// its text, a slice of b.
func plainString(b []byte) ([]byte, []byte, bool) {
	if len(b) == 0 || b[0] != '"' {
		return nil, nil, false
	}
	end := bytes.IndexByte(b[1:], '"')
	if end < 0 || bytes.IndexByte(b[1:1+end], '\\') >= 0 {
		return nil, nil, false
	}
	return b[1 : 1+end], b[2+end:], true
}

// validFlat reports whether the text the members of a flat object were
// split from (flatObject) is JSON, as json.Valid would of the whole text,
// without scanning it again: a flat object's strings hold no quote or
// backslash, so one is JSON when it holds no control character, and a
// literal (no quote, bracket, brace, backslash or comma in it) when it is
// one JSON scalar, maybe with white space about it.
func validFlat(ms []member) bool {
	for _, m := range ms {
		if !noControl(m.name) {
			return false
		}
		if m.isString {
			if !noControl(m.value) {
				return false
			}
		} else if !plainNumber(m.value) && !json.Valid(m.value) {
			return false
		}
	}
	return true
}

// flatMember reports whether a member written as appendMember writes it
// keeps a flat object flat and JSON: the text of members that each pass
// splits back into the same members (flatObject) and is JSON (validFlat).
// A name or string stops at a quote, a backslash is an escape, and a
// literal stops at a comma and holds no quote, bracket, brace or
// backslash; then validFlat's rules. (Members that do not pass may still
// run into each other and make such a text: the caller asks flatObject.)
func flatMember(name, value []byte, isString bool) bool {
	if !flatText(name) {
		return false
	}
	if isString {
		return flatText(value)
	}
	return len(value) > 0 && !bytes.ContainsAny(value, ",{}[]\\\"") && (plainNumber(value) || json.Valid(value))
}

// flatText reports whether b may stand between the quotes of a flat
// object's name or string: no quote, backslash or control character.
func flatText(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// noControl reports whether b holds no byte below 0x20, which a JSON
// string may not hold unescaped.
func noControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return false
		}
	}
	return true
}

// plainNumber reports whether b is a JSON number without white space:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?. Anything else a literal
// may be (true, false, null, white space, or not JSON) json.Valid decides.
func plainNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i == len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i == len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	return i == len(b)
}

// appendMember appends one member of a flat object as compact JSON, after
// a comma unless it is the first.
func appendMember[S ~string | ~[]byte](out []byte, first bool, name, value S, isString bool) []byte {
	if !first {
		out = append(out, ',')
	}
	out = append(out, '"')
	out = append(out, name...)
	out = append(out, '"', ':')
	if isString {
		out = append(out, '"')
		out = append(out, value...)
		return append(out, '"')
	}
	return append(out, value...)
}

// sameFlatText reports whether writing ms back as compact JSON gives text,
// without writing it.
func sameFlatText(ms []member, text []byte) bool {
	if len(text) < 2 || text[0] != '{' || text[len(text)-1] != '}' {
		return false
	}
	rest := text[1 : len(text)-1]
	for i, m := range ms {
		var buf [64]byte
		want := appendMember(buf[:0], i == 0, m.name, m.value, m.isString)
		if !bytes.HasPrefix(rest, want) {
			return false
		}
		rest = rest[len(want):]
	}
	return len(rest) == 0
}

// errCompact is every reason a compact event is refused.
var errCompact = errors.New("damaged compact event")

// compactReader reads one compact event (or execution record); the first
// problem sticks.
type compactReader struct {
	pack.Cursor
	key string // the event's Key, once read
}

// newCompactReader reads a compact event or record, data, after its magic
// byte.
func newCompactReader(data []byte) *compactReader {
	return &compactReader{Cursor: pack.NewCursor(data[1:], errCompact)}
}

func (r *compactReader) str() string {
	v := r.Uvarint()
	if r.Err() != nil {
		return ""
	}
	switch v & 3 {
	case 0:
		if v>>2 >= uint64(len(table)) {
			r.Fail()
			return ""
		}
		return table[v>>2]
	case 1:
		return string(r.Next(v >> 2))
	case 2:
		p := r.Uvarint()
		raw := r.Next(v >> 2)
		if r.Err() != nil || p >= uint64(len(table)) {
			r.Fail()
			return ""
		}
		var space [80]byte // a prefix and a 32-byte key, without an allocation
		return string(pack.AppendHexText(append(space[:0], table[p]...), raw))
	default:
		if v != 3 || r.key == "" {
			r.Fail()
			return ""
		}
		return r.key
	}
}

// appendStr appends the next string to dst, as str reads it, without
// making a string of it (a flat body's members are only written out).
func (r *compactReader) appendStr(dst []byte) []byte {
	v := r.Uvarint()
	if r.Err() != nil {
		return dst
	}
	switch v & 3 {
	case 0:
		if v>>2 >= uint64(len(table)) {
			r.Fail()
			return dst
		}
		return append(dst, table[v>>2]...)
	case 1:
		return append(dst, r.Next(v>>2)...)
	case 2:
		p := r.Uvarint()
		raw := r.Next(v >> 2)
		if r.Err() != nil || p >= uint64(len(table)) {
			r.Fail()
			return dst
		}
		return pack.AppendHexText(append(dst, table[p]...), raw)
	default:
		if v != 3 || r.key == "" {
			r.Fail()
			return dst
		}
		return append(dst, r.key...)
	}
}

func (r *compactReader) json() json.RawMessage {
	v := r.Uvarint()
	var text []byte
	if v&1 == 0 {
		text = append([]byte(nil), r.Next(v>>1)...)
	} else {
		n := v >> 1
		if n == 0 || n > uint64(r.Left()) {
			r.Fail()
			return nil
		}
		// The members are written as they are read; the text must then
		// split back into as many (only what the writer stores this way).
		// Members that each keep the text flat and JSON as they are
		// written (flatMember) make a text flatObject splits back into
		// them and validFlat accepts: only when one does not (a damaged
		// or crafted record, never the writer's) is the text split again
		// to decide, as it always was.
		clean := true
		text = append(make([]byte, 0, 64), '{')
		for i := range n {
			// As appendMember writes a member, from the strings as read.
			if i > 0 {
				text = append(text, ',')
			}
			from := len(text) + 1
			text = append(r.appendStr(append(text, '"')), '"', ':')
			name := text[from : len(text)-2]
			kind := r.Next(1)
			if r.Err() != nil || kind[0] > 1 {
				r.Fail()
				return nil
			}
			var value []byte
			if kind[0] == 0 {
				from = len(text) + 1
				text = append(r.appendStr(append(text, '"')), '"')
				value = text[from : len(text)-1]
			} else {
				from = len(text)
				text = r.appendStr(text)
				value = text[from:]
			}
			if r.Err() != nil {
				r.Fail()
				return nil
			}
			clean = clean && flatMember(name, value, kind[0] == 0)
		}
		text = append(text, '}')
		if !clean {
			var space [flatMembers]member
			if again, ok := flatObject(space[:0], text); !ok || uint64(len(again)) != n || !validFlat(again) {
				r.Fail()
				return nil
			}
		}
	}
	if r.Err() != nil || len(text) == 0 || v&1 == 0 && !json.Valid(text) {
		r.Fail()
		return nil
	}
	return json.RawMessage(text)
}

func (r *compactReader) exchange() *Exchange {
	bits := r.Bits(xLast)
	x := &Exchange{}
	if bits&xMethod != 0 {
		x.Method = r.str()
	}
	if bits&xURL != 0 {
		x.URL = r.str()
	}
	if bits&xStatus != 0 {
		x.Status = r.Int()
	}
	if bits&xHeaders != 0 {
		n := r.Uvarint()
		if n == 0 || n > uint64(r.Left()) {
			r.Fail()
			return nil
		}
		x.Headers = make(map[string]string, n)
		for range n {
			k := r.str()
			x.Headers[k] = r.str()
		}
	}
	if bits&xBody != 0 {
		x.Body = r.json()
	}
	return x
}

// decodeCompact reads what encodeCompact wrote.
func decodeCompact(data []byte) (Event, error) {
	r := newCompactReader(data)
	var e Event
	e.Seq = r.Uvarint()
	e.Type = Type(r.str())
	bits := r.Bits(fLast)
	if bits&fTime != 0 && bits&fWideTime != 0 || bits&fZone != 0 && bits&(fTime|fWideTime) == 0 {
		r.Fail()
	}
	for bit := pack.Bits(1); bit < fLast && r.Err() == nil; bit <<= 1 {
		if bits&bit == 0 {
			continue
		}
		switch bit {
		case fTime:
			e.Time = r.Nanos()
		case fWideTime:
			e.Time = r.WideTime()
		case fZone:
			if off := r.Varint(); pack.ValidOffset(off) {
				e.Time = pack.InZone(e.Time, off)
			} else {
				r.Fail()
			}
		case fRun:
			e.Run = r.Int()
		case fStep:
			e.Step = r.str()
		case fTool:
			e.Tool = r.str()
		case fKey:
			e.Key = r.str()
			r.key = e.Key
		case fAttempt:
			e.Attempt = r.Int()
		case fText:
			e.Text = r.str()
		case fOutcome:
			e.Outcome = Outcome(r.str())
		case fFault:
			e.Fault = r.str()
		case fPlan:
			e.Plan = r.Int()
		case fMaxAttempts:
			e.MaxAttempts = r.Int()
		case fDuration:
			e.Duration = time.Duration(r.Varint())
		case fDelay:
			e.Delay = time.Duration(r.Varint())
		case fRequest:
			e.Request = r.exchange()
		case fResponse:
			e.Response = r.exchange()
		case fError:
			e.Error = r.str()
		case fDeduplicated:
			e.Deduplicated = true
		case fTurn:
			e.Turn = r.Int()
		case fArgs:
			e.Args = r.json()
		case fResult:
			e.Result = r.json()
		case fResultRun:
			e.ResultRun = r.Int()
		case fExitCode:
			e.ExitCode = r.Int()
		case fPID:
			e.PID = r.Int()
		case fScenario:
			e.Scenario = r.str()
		case fEffect:
			e.Effect = &Effect{Service: r.str(), ID: r.str(), Target: r.str(), Summary: r.str()}
			e.Effect.Version = r.Int()
		case fOffset:
			e.Offset = time.Duration(r.Varint())
		}
	}
	if e.Type == "" {
		r.Fail()
	}
	if err := r.Done(); err != nil {
		return Event{}, fmt.Errorf("decode event: %w", err)
	}
	return e, nil
}
