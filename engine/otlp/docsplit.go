package otlp

import (
	"errors"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/retrylab/retrylab/internal/jsonlimit"
)

// A large OTLP/JSON document is decoded in pieces side by side, as the
// lines of a JSON Lines file are, instead of whole on one goroutine:
// planDocument walks the document's bytes once to find where its
// resourceSpans, their scopeSpans and their spans begin and end, and each
// piece is a small document of its own, made of the raw text of about
// deliverSpans spans with their scope's and resource's other members,
// decoded as a line of JSON Lines is (spansOf: the fast path, pdata when
// it declines):
//
//	{"resourceSpans":[{<resource members>,"scopeSpans":[{<scope members>,"spans":[<spans>]}]}]}
//
// Its spans convert to exactly the spans of the whole document, in the
// same order and in the same batches (deliverSpans each). The pieces are
// cut and decoded while the walk goes on, but none is delivered before
// it is over: a document it does not plan is then decoded whole, and
// pieces cut before a member of their resource or scope came (a
// "resource" after its "scopeSpans") are cut and decoded again. The plan is
// strict: anything it does not expect (a syntax fault outside a span, a
// value of the wrong type, a repeated or unknown key, a key written with
// escapes, the older or snake_case names pdata also reads, Tempo's and
// Jaeger's shapes, a document without spans) leaves the document to the
// whole decode, whose errors name the line, span and field. Every byte of
// the document is either checked by the plan (its frame: keys, brackets,
// commas) or decoded in a piece (values, spans), and the plan refuses a
// document nesting deeper than jsonlimit.MaxDepth: a piece nests each
// byte it holds exactly as deep as the document does, so the bound holds
// for every byte pdata decodes (and unmarshalJSON checks each piece it
// is given again).

// splitOver is the size above which a whole document is decoded in
// pieces: below it, the plan and the side-by-side decoding cost about
// what they save. BenchmarkImportShapes/document's ratio, whole against
// in pieces: 2 000 spans (1.3 MB) 0.35-0.38 against 0.28-0.33; 4 000
// (2.6 MB) 0.41 against 0.41-0.42; 6 500 (4.2 MB) 0.44 against 0.46-0.47;
// 20 000 (13 MB) 0.47-0.51 against 0.58-0.59; 50 000 (33 MB) 0.36-0.37
// against 0.62-0.64.
const splitOver = 4 << 20

// textRange is doc[from:to].
type textRange struct{ from, to int }

// docPlan is where the spans of an OTLP/JSON document lie, and how they
// go in pieces. Its walk cuts the pieces one after the other, and they
// may be decoded while it goes on (decodeDocument): each piece holds what
// it needs of the plan as it was when the piece was cut.
type docPlan struct {
	doc        []byte
	pieceSpans int
	// The walk's own, until it is over.
	resources []planResource
	scopes    []planScope
	spans     []textRange // every span's object, in document order

	mu     sync.Mutex
	cut    *sync.Cond    // a piece was cut, or the walk is over
	pieces [][]piecePart // the pieces cut so far
	walked bool          // the walk is over
	ok     bool          // ... and doc is planned (walked, without a fault)
	// late is a member of a resource or scope come after a piece holding
	// some of its spans was cut: the pieces, made again from the whole
	// plan, must all be decoded again.
	late bool
	stop atomic.Bool // the walk is to stop: its pieces are not wanted
}

// planResource is one element of resourceSpans: its members other than
// scopeSpans, each `"key":value` as written.
type planResource struct{ other []textRange }

// planScope is one element of a resource's scopeSpans: its members other
// than spans, each `"key":value` as written.
type planScope struct{ other []textRange }

// piecePart is what a piece holds of one scope: the scope (or -1 for a
// resource without any, kept so that it is still decoded) of resource
// res, its spans plan.spans[first:end], and, as they were when the piece
// was cut, those spans and the scope's and resource's other members.
type piecePart struct {
	res, scope, first, end int
	spans, resOther, other []textRange
}

// planScanner walks a document for its plan.
type planScanner struct {
	jsonWalk
	plan    *docPlan
	piece   []piecePart // the piece being filled
	inPiece int         // its spans
	// The resource and scope being walked, their other members so far,
	// and the last of each that a piece cut holds (-1: none).
	atRes, atScope       int
	resOther, scopeOther []textRange
	cutRes, cutScope     int
	late                 bool // docPlan.late
}

// newPlan is the plan of doc in pieces of pieceSpans spans, to be walked.
func newPlan(doc []byte, pieceSpans int) *docPlan {
	p := &docPlan{doc: doc, pieceSpans: max(pieceSpans, 1)}
	p.cut = sync.NewCond(&p.mu)
	return p
}

// planDocument plans doc's pieces of pieceSpans spans each; ok is false
// when doc is not the plain OTLP/JSON document planDocument expects (see
// above), or holds no span.
func planDocument(doc []byte, pieceSpans int) (plan *docPlan, ok bool) {
	plan = newPlan(doc, pieceSpans)
	plan.walk()
	return plan, plan.ok
}

// walk plans the document, cutting its pieces as it goes.
func (p *docPlan) walk() {
	s := &planScanner{jsonWalk: jsonWalk{doc: p.doc}, plan: p, atRes: -1, atScope: -1, cutRes: -1, cutScope: -1}
	seen := false
	err := s.object(func(key []byte) error {
		if string(key) != "resourceSpans" || seen {
			return errJSONDecline
		}
		seen = true
		return s.array(s.resource)
	})
	s.ws()
	ok := err == nil && seen && s.pos == len(p.doc) && len(p.spans) > 0
	if ok && len(s.piece) > 0 {
		s.cutPiece()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.late = s.late; ok && p.late {
		// Each piece again, with every member its resource and scope have
		// (in new memory: the pieces cut may still be being made).
		for k, piece := range p.pieces {
			piece = slices.Clone(piece)
			for i := range piece {
				s.fill(&piece[i])
			}
			p.pieces[k] = piece
		}
	}
	p.walked, p.ok = true, ok
	p.cut.Broadcast()
}

// cutPiece hands on the piece being filled.
func (s *planScanner) cutPiece() {
	for i := range s.piece {
		s.fill(&s.piece[i])
	}
	last := s.piece[len(s.piece)-1]
	s.cutRes, s.cutScope = last.res, max(s.cutScope, last.scope)
	p := s.plan
	p.mu.Lock()
	p.pieces = append(p.pieces, s.piece)
	p.cut.Signal()
	p.mu.Unlock()
	s.piece, s.inPiece = nil, 0
}

// fill puts in part its spans and other members as the walk knows them.
func (s *planScanner) fill(part *piecePart) {
	p := s.plan
	part.spans = p.spans[part.first:part.end:part.end]
	part.resOther, part.other = p.resources[part.res].other, nil
	if part.res == s.atRes {
		part.resOther = s.resOther[:len(s.resOther):len(s.resOther)]
	}
	if part.scope >= 0 {
		part.other = p.scopes[part.scope].other
		if part.scope == s.atScope {
			part.other = s.scopeOther[:len(s.scopeOther):len(s.scopeOther)]
		}
	}
}

// resource plans one element of resourceSpans.
func (s *planScanner) resource() error {
	res := len(s.plan.resources)
	s.plan.resources = append(s.plan.resources, planResource{})
	s.atRes, s.resOther = res, nil
	scopesBefore := len(s.plan.scopes)
	var resource, schema, scopes bool
	err := s.object(func(key []byte) error {
		from := s.keyAt
		switch string(key) {
		case "scopeSpans":
			if scopes {
				return errJSONDecline
			}
			scopes = true
			return s.array(func() error { return s.scope(res) })
		case "resource":
			if resource {
				return errJSONDecline
			}
			resource = true
		case "schemaUrl":
			if schema {
				return errJSONDecline
			}
			schema = true
		default:
			return errJSONDecline
		}
		if !s.skipValue() {
			return errJSONDecline
		}
		s.resOther = append(s.resOther, textRange{from, s.pos})
		s.late = s.late || res <= s.cutRes
		return nil
	})
	s.plan.resources[res].other, s.resOther, s.atRes = s.resOther, nil, -1
	if err == nil && len(s.plan.scopes) == scopesBefore {
		// A resource without scopes: decoded all the same, in the piece
		// being filled.
		s.add(piecePart{res: res, scope: -1})
	}
	return err
}

// scope plans one element of a resource's scopeSpans.
func (s *planScanner) scope(res int) error {
	sc := len(s.plan.scopes)
	s.plan.scopes = append(s.plan.scopes, planScope{})
	s.atScope, s.scopeOther = sc, nil
	first := len(s.plan.spans) // the scope's first span
	part := piecePart{res: res, scope: sc, first: first, end: first}
	var scope, schema, spans bool
	err := s.object(func(key []byte) error {
		from := s.keyAt
		switch string(key) {
		case "spans":
			if spans {
				return errJSONDecline
			}
			spans = true
			return s.array(func() error {
				from := s.pos
				if s.peek() != '{' || !s.skipValue() || s.plan.stop.Load() {
					return errJSONDecline
				}
				s.plan.spans = append(s.plan.spans, textRange{from, s.pos})
				part.end++
				if s.inPiece++; s.inPiece == s.plan.pieceSpans {
					s.add(part)
					s.cutPiece()
					part.first = part.end
				}
				return nil
			})
		case "scope":
			if scope {
				return errJSONDecline
			}
			scope = true
		case "schemaUrl":
			if schema {
				return errJSONDecline
			}
			schema = true
		default:
			return errJSONDecline
		}
		if !s.skipValue() {
			return errJSONDecline
		}
		s.scopeOther = append(s.scopeOther, textRange{from, s.pos})
		s.late = s.late || sc <= s.cutScope
		return nil
	})
	s.plan.scopes[sc].other, s.scopeOther, s.atScope = s.scopeOther, nil, -1
	if err == nil && (part.end > part.first || part.first == first) {
		// The scope's spans not in a full piece yet, or a scope without
		// any (decoded all the same, in the piece being filled).
		s.add(part)
	}
	return err
}

// add puts part in the piece being filled.
func (s *planScanner) add(part piecePart) { s.piece = append(s.piece, part) }

// skipValue moves s.pos past the value at it, inside the walk's open
// arrays and objects, refusing one that would nest deeper than
// jsonlimit.MaxDepth. It only finds the value's end: strings and brackets
// are matched, the rest is left to the decoding of the piece that holds
// the value.
func (s *planScanner) skipValue() bool {
	doc, i, depth := s.doc, s.pos, s.depth
	if i >= len(doc) {
		return false
	}
	switch doc[i] {
	case '"':
		end, ok := quoteEnd(doc, i)
		s.pos = end
		return ok
	case '{', '[':
		start := depth
		for i < len(doc) {
			switch doc[i] {
			case '"':
				end, ok := quoteEnd(doc, i)
				if !ok {
					return false
				}
				i = end
				continue
			case '{', '[':
				if depth++; depth > jsonlimit.MaxDepth {
					return false
				}
			case '}', ']':
				if depth--; depth == start {
					s.pos = i + 1
					return true
				}
			}
			i++
		}
		return false
	case ',', '}', ']', ':':
		return false
	}
	// A number, true, false or null: up to the next delimiter.
	for i < len(doc) {
		switch doc[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			s.pos = i
			return true
		case '"', '{', '[', ':':
			return false
		}
		i++
	}
	return false
}

// quoteEnd is the index just past the string that starts at doc[i] (a
// quote), and whether it ends at all. (A byte at a time: most strings of
// OTLP/JSON are short, and bytes.IndexByte costs more than it saves.)
func quoteEnd(doc []byte, i int) (int, bool) {
	for j := i + 1; j < len(doc); j++ {
		switch doc[j] {
		case '"':
			return j + 1, true
		case '\\':
			j++ // the escaped byte, a quote or not
		}
	}
	return len(doc), false
}

// piece writes the document of the piece of parts into buf's memory.
func (p *docPlan) piece(parts []piecePart, buf []byte) []byte {
	doc := p.doc
	if first, last := parts[0].spans, parts[len(parts)-1].spans; len(first) > 0 && len(last) > 0 {
		// About its size, at once: its spans lie together in doc.
		buf = slices.Grow(buf[:0], last[len(last)-1].to-first[0].from+4<<10)
	}
	buf = append(buf[:0], `{"resourceSpans":[`...)
	members := func(other []textRange) {
		for _, m := range other {
			buf = append(buf, doc[m.from:m.to]...)
			buf = append(buf, ',')
		}
	}
	for i := 0; i < len(parts); {
		res := parts[i].res
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '{')
		members(parts[i].resOther)
		buf = append(buf, `"scopeSpans":[`...)
		first := true
		for ; i < len(parts) && parts[i].res == res; i++ {
			part := parts[i]
			if part.scope < 0 {
				continue
			}
			if !first {
				buf = append(buf, ',')
			}
			first = false
			buf = append(buf, '{')
			members(part.other)
			buf = append(buf, `"spans":[`...)
			for j, r := range part.spans {
				if j > 0 {
					buf = append(buf, ',')
				}
				buf = append(buf, doc[r.from:r.to]...)
			}
			buf = append(buf, "]}"...)
		}
		buf = append(buf, "]}"...)
	}
	return append(buf, "]}"...)
}

// nextPiece writes piece n (1, 2, ...) into buf's memory, io.EOF when
// none is left, waiting for the walk to cut it (sideBySide's next).
func (p *docPlan) nextPiece(n int, buf []byte) ([]byte, error) {
	p.mu.Lock()
	for len(p.pieces) < n && !p.walked {
		p.cut.Wait()
	}
	if len(p.pieces) < n {
		p.mu.Unlock()
		return nil, io.EOF
	}
	parts := p.pieces[n-1]
	p.mu.Unlock()
	return p.piece(parts, buf), nil
}

// errNotPlanned and errCutAgain are why the pieces decoded while the walk
// went on are not delivered: the document is not planned, or its pieces
// were cut again (docPlan.late).
var (
	errNotPlanned = errors.New("not planned")
	errCutAgain   = errors.New("pieces cut again")
)

// walkedAsCut waits for the walk to end and says whether the pieces cut while
// it went on stand.
func (p *docPlan) walkedAsCut() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.walked {
		p.cut.Wait()
	}
	switch {
	case !p.ok:
		return errNotPlanned
	case p.late:
		return errCutAgain
	}
	return nil
}

// pieceError is a piece that the decoding refused: the document's error
// is the whole decode's.
type pieceError struct{ error }

func (e *pieceError) Unwrap() error { return e.error }

// decodePiece decodes one piece of a document and converts its spans.
func decodePiece(piece []byte) decoded {
	spans, err := spansOf(piece, 0)
	if err != nil {
		return decoded{err: &pieceError{err}}
	}
	return decoded{batch: Batch{Spans: spans}, ok: len(spans) > 0}
}

// decodeDocument decodes doc, a whole OTLP/JSON document, and calls fn
// with its spans, pieceSpans at a time, all with line 0. A document of
// more than over bytes is decoded in pieces side by side, which are
// decoded while the plan is walked and delivered once it is over, when
// it planned the document; the others are decoded whole. Its errors are
// decodeJSON's for the document.
func decodeDocument(doc []byte, over, pieceSpans int, fn func(Batch) error) error {
	if len(doc) <= over {
		return decodeJSON(doc, 0, fn)
	}
	err := decodePieces(doc, pieceSpans, fn)
	var pe *pieceError
	switch {
	case errors.Is(err, errNotPlanned):
		return decodeJSON(doc, 0, fn)
	case errors.As(err, &pe):
		// What the whole decode says of the document, with its line, span
		// and field; nothing more is delivered.
		if werr := decodeJSON(doc, 0, func(Batch) error { return nil }); werr != nil {
			return werr
		}
		return pe.error
	}
	return err
}

// decodePieces is decodeDocument in pieces: errNotPlanned (nothing
// delivered) when the walk does not plan doc, a *pieceError when the
// decoding refuses a piece.
func decodePieces(doc []byte, pieceSpans int, fn func(Batch) error) error {
	// The text is live until the last piece is made.
	defer roomForDocument(len(doc))()
	plan := newPlan(doc, pieceSpans)
	go plan.walk()
	defer plan.walkedAsCut() // nothing is left running
	decode := func(_ int, piece []byte) decoded { return decodePiece(piece) }
	err := sideBySide(plan.nextPiece, plan.walkedAsCut, decode, fn)
	// Unless it is over, the walk is of no more use (an error).
	plan.stop.Store(true)
	if errors.Is(err, errCutAgain) {
		err = sideBySide(plan.nextPiece, nil, decode, fn)
	}
	return err
}
