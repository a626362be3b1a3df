package otlp

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/retrylab/retrylab/internal/jsonlimit"
	"github.com/retrylab/retrylab/store"
)

// DefaultMaxBody bounds a request body, compressed or not, as received and
// as decompressed.
const DefaultMaxBody = 32 << 20

// Receiver is an OTLP/HTTP trace receiver (POST /v1/traces) that stores
// what it receives as imported executions. It answers as the OTLP
// specification says: 200 with an ExportTraceServiceResponse (and a
// partial success naming the refused spans) once the spans are durably
// committed, 400 for data that does not decode, 413 for a body over the
// limit, 415 for a content type or encoding it does not speak, 405 for a
// method other than POST. Concurrent requests share the store's group
// commit, so many exporters cost few fsyncs.
type Receiver struct {
	DB *store.DB
	// Source names the receiver in the execution records.
	Source string
	// MaxBody bounds a body; zero means DefaultMaxBody.
	MaxBody int64
	// Stored, if set, is told which executions each request changed.
	Stored func(executions []string)
	// Token, if set, is asked of every request ("Authorization: Bearer
	// <token>"): one without it is answered 401 (OTLP/HTTP) or
	// Unauthenticated (OTLP/gRPC) and nothing of it is read.
	Token string

	// bodies holds request bodies' buffers (*bytes.Buffer) to read the
	// next ones into: a body is done with once decoded (the spans copy
	// what they keep), and reading each into a new buffer grown by
	// doubling was the receiver's largest allocation.
	bodies sync.Pool
	// memories holds the *requestMemory of requests answered.
	memories sync.Pool
	// decoding lets requests decode and prepare their spans on all cores
	// but one, and on at least two (decodeGate).
	decoding     chan struct{}
	decodingOnce sync.Once
}

// decodeGate runs fn, a request's decoding or preparing of its spans,
// once fewer than GOMAXPROCS-1 requests, and at least two, are at it. A core
// left to the group commit that answers them and to an attached explorer's
// reads keeps those from waiting behind the next requests' decoding
// (BENCHMARKS.md, 24c); but on two cores a single decoder was the
// receivers' bottleneck: with two, 24a's rate rose by a fifth and more,
// and the explorer's key p99 by about a millisecond.
func (rc *Receiver) decodeGate(fn func()) {
	rc.decodingOnce.Do(func() { rc.decoding = make(chan struct{}, max(2, runtime.GOMAXPROCS(0)-1)) })
	rc.decoding <- struct{}{}
	defer func() { <-rc.decoding }()
	fn()
}

// pooledBody is the largest buffer kept for the next body; preGrow the
// most of a body's announced length a buffer is grown to before it comes.
const (
	pooledBody = 4 << 20
	preGrow    = 1 << 20
)

// readBody reads body, of size bytes when size > 0, into a buffer of
// rc.bodies, up to limit+1 bytes; done gives the buffer back once the
// bytes are no longer read.
func (rc *Receiver) readBody(body io.Reader, size, limit int64) (data []byte, done func(), err error) {
	// Room for the whole body and the read that finds its end, but no
	// more than preGrow ahead of what has come: a Content-Length is only
	// a claim.
	var grow int
	if size > 0 && size <= limit {
		grow = int(min(size, preGrow)) + bytes.MinRead
	}
	buf, done := rc.bodyBuffer(grow)
	_, err = buf.ReadFrom(io.LimitReader(body, limit+1))
	return buf.Bytes(), done, err
}

// bodyBuffer is an empty buffer of rc.bodies with room for n bytes, and
// the func that gives it back.
func (rc *Receiver) bodyBuffer(n int) (*bytes.Buffer, func()) {
	buf, _ := rc.bodies.Get().(*bytes.Buffer)
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	buf.Reset()
	buf.Grow(n)
	return buf, func() {
		if buf.Cap() <= pooledBody {
			rc.bodies.Put(buf)
		}
	}
}

// Handler serves /v1/traces.
func (rc *Receiver) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/traces", rc.serve)
	return rc.requireToken(mux)
}

type encoding int

const (
	encProto encoding = iota
	encJSON
)

func (rc *Receiver) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeStatus(w, encJSON, http.StatusMethodNotAllowed, "POST spans to /v1/traces")
		return
	}
	enc := encProto
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/x-protobuf", "application/protobuf":
	case "application/json":
		enc = encJSON
	default:
		writeStatus(w, encJSON, http.StatusUnsupportedMediaType,
			fmt.Sprintf("content type %q: send application/x-protobuf or application/json", ct))
		return
	}
	limit := rc.MaxBody
	if limit <= 0 {
		limit = DefaultMaxBody
	}
	var body io.Reader = http.MaxBytesReader(w, r.Body, limit)
	size := int64(0) // the decompressed size, when known
	compressed := false
	switch strings.ToLower(r.Header.Get("Content-Encoding")) {
	case "", "identity":
		size = r.ContentLength
	case "gzip":
		compressed = true
		zr, err := gzip.NewReader(body)
		if err != nil {
			writeStatus(w, enc, http.StatusBadRequest, "gzip: "+err.Error())
			return
		}
		defer zr.Close()
		body = zr
	default:
		writeStatus(w, enc, http.StatusUnsupportedMediaType,
			fmt.Sprintf("content encoding %q: send gzip or none", r.Header.Get("Content-Encoding")))
		return
	}
	data, done, err := rc.readBody(body, size, limit)
	defer done()
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig) || int64(len(data)) > limit:
		writeStatus(w, enc, http.StatusRequestEntityTooLarge, fmt.Sprintf("body over %d bytes: send smaller batches", limit))
		return
	case err != nil:
		writeStatus(w, enc, http.StatusBadRequest, "read body: "+err.Error())
		return
	case !compressed && len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b:
		writeStatus(w, enc, http.StatusBadRequest, "the body looks gzip-compressed (it starts as gzip does) but came without Content-Encoding: send it with Content-Encoding: gzip")
		return
	}
	mem := rc.memory()
	defer rc.release(mem)
	var req protoRequest
	rc.decodeGate(func() {
		if enc == encJSON {
			req, err = jsonRequest(data)
		} else {
			req, err = decodeProtoSpans(data, jsonlimit.MaxRequestSpans, mem.spans)
			mem.spans = req.spans
		}
	})
	var refused *refusal
	var bad *badRequest
	if errors.As(err, &refused) || errors.As(err, &bad) {
		writeStatus(w, enc, http.StatusBadRequest, err.Error())
		return
	}
	if err != nil {
		writeStatus(w, enc, http.StatusBadRequest, "not an OTLP trace export: "+strings.Join(strings.Fields(err.Error()), " "))
		return
	}
	if err := tooManySpans(req.count); err != nil {
		writeStatus(w, enc, http.StatusBadRequest, err.Error())
		return
	}
	rejected, msg, err := rc.accept(req, mem)
	if err != nil {
		writeStatus(w, enc, http.StatusServiceUnavailable, "store: "+err.Error())
		return
	}
	if enc == encJSON {
		w.Header().Set("Content-Type", "application/json")
	} else {
		w.Header().Set("Content-Type", "application/x-protobuf")
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(exportResponse(enc, rejected, msg))
}

// exportResponse encodes ExportTraceServiceResponse: empty on full
// success, else partial_success{rejected_spans, error_message}.
func exportResponse(enc encoding, rejected int, msg string) []byte {
	if enc == encJSON {
		if rejected == 0 {
			return []byte("{}")
		}
		return fmt.Appendf(nil, "{\"partialSuccess\":{\"rejectedSpans\":\"%d\",\"errorMessage\":%s}}", rejected, jsonString(msg))
	}
	if rejected == 0 {
		return nil
	}
	inner := []byte{0x08}
	inner = appendVarint(inner, uint64(rejected))
	inner = append(inner, 0x12)
	inner = appendVarint(inner, uint64(len(msg)))
	inner = append(inner, msg...)
	out := []byte{0x0a}
	out = appendVarint(out, uint64(len(inner)))
	return append(out, inner...)
}

// jsonRequest decodes an OTLP/JSON ExportTraceServiceRequest (it has
// TracesData's fields, so ptrace's unmarshaler reads it) into the spans
// SpansLenient makes of it.
func jsonRequest(data []byte) (protoRequest, error) {
	td, err := unmarshalJSON(data)
	var refused *refusal
	if err != nil && !errors.As(err, &refused) {
		// The words 'retrylab import' says of the same document.
		return protoRequest{}, &badRequest{jsonFault(data, 0, err)}
	}
	if err != nil {
		return protoRequest{}, err
	}
	if td.ResourceSpans().Len() == 0 {
		if what := foreignDocument(data); what != "" {
			return protoRequest{}, &badRequest{fmt.Errorf("%s, not an OTLP trace export (no resourceSpans): import it with 'retrylab import FILE'", what)}
		}
	}
	if n := td.SpanCount(); n > jsonlimit.MaxRequestSpans {
		return protoRequest{count: n}, nil
	}
	var req protoRequest
	req.spans, req.rejected, req.first = SpansLenient(td)
	req.count = td.SpanCount()
	return req, nil
}

// accept is the durable commit path both receivers (OTLP/HTTP and
// OTLP/gRPC) share: it stores the spans of req it can, and returns once
// they are committed (fsynced), with how many it refused and why (the
// partial success), or the store's error, in which case nothing the
// request held may be taken as stored.
func (rc *Receiver) accept(req protoRequest, mem *requestMemory) (rejected int, msg string, err error) {
	stats, dropped, err := rc.store(req.spans, mem)
	if err != nil {
		return 0, "", err
	}
	why := req.first
	if rejected = req.rejected + dropped.n; why == nil {
		why = dropped.first
	}
	if rc.Stored != nil && len(stats.Executions) > 0 {
		rc.Stored(stats.Executions)
	}
	if rejected > 0 {
		msg = why.Error()
	}
	return rejected, msg, nil
}

// tooManySpans refuses a request of n spans, more than one request may
// hold (jsonlimit.MaxRequestSpans), whichever receiver it came to.
func tooManySpans(n int) error {
	if n > jsonlimit.MaxRequestSpans {
		return fmt.Errorf("%d spans in one request, more than %d: send smaller batches", n, jsonlimit.MaxRequestSpans)
	}
	return nil
}

type refused struct {
	n     int
	first error
}

// store commits spans, dropping one that conflicts with a stored span of
// the same id (and trying again) rather than refusing the whole batch.
// Each span's stored form and facts, and the audits of its executions on
// its spans, are made here, on the request's goroutine, so that the group
// commit's transaction, which runs its requests' writes one after the
// other, does not (BENCHMARKS.md, 24a).
func (rc *Receiver) store(spans []Span, mem *requestMemory) (Stats, refused, error) {
	var dropped refused
	ahead := madeAhead{prepared: &mem.blocks, scratch: &mem.write}
	rc.decodeGate(func() {
		ahead.encoded, ahead.facts = mem.prepare(spans)
		ahead.audits, ahead.grouped = mem.auditAhead(spans, ahead.facts)
	})
	for {
		var st Stats
		err := rc.DB.Update(func(tx *store.Tx) error {
			var err error
			st, err = save(tx, spans, ahead, rc.Source)
			return err
		})
		var se *SpanError
		if err == nil || !errors.As(err, &se) || len(spans) == 0 {
			return st, dropped, err
		}
		kept := 0
		for i := range spans {
			if spans[i].SpanID != se.SpanID {
				spans[kept], ahead.encoded[kept], ahead.facts[kept] = spans[i], ahead.encoded[i], ahead.facts[i]
				kept++
			}
		}
		if kept == len(spans) {
			return st, dropped, err
		}
		dropped.n += len(spans) - kept
		if dropped.first == nil {
			dropped.first = se
		}
		clear(spans[kept:])
		spans, ahead.encoded, ahead.facts = spans[:kept], ahead.encoded[:kept], ahead.facts[:kept]
		ahead.prepared = nil // its places are the spans' before some were dropped
		ahead.audits = nil   // and its audits and groups were of all of them
		ahead.grouped = nil
	}
}

// auditAhead audits the executions of spans (facts: theirs) in mem's
// memory (see the package's auditAhead), and returns the spans grouped by
// trace as it found them.
func (mem *requestMemory) auditAhead(spans []Span, facts []spanFacts) (aheadAudits, *traceGroups) {
	if mem.audits == nil {
		mem.audits, mem.auditScratch = aheadAudits{}, newAheadScratch()
	}
	grouped := auditAhead(spans, facts, mem.audits, mem.auditScratch)
	return mem.audits, grouped
}

// prepare makes each span's stored form, in one arena laid out in blocks
// as the write stores them (prepareBlocks), and its facts, as a file
// import's decoding side does (fileChunk.add), in mem's memory.
func (mem *requestMemory) prepare(spans []Span) ([][]byte, []spanFacts) {
	encoded := slices.Grow(mem.encoded[:0], len(spans))[:len(spans)]
	facts := slices.Grow(mem.facts[:0], len(spans))[:len(spans)]
	arena := slices.Grow(mem.arena[:0], 256*len(spans))
	effect := effects{}
	for i := range spans {
		facts[i] = effect.factsOf(&spans[i])
	}
	arena = mem.blocks.prepareBlocks(spans, arena, encoded)
	mem.encoded, mem.facts, mem.arena = encoded, facts, arena
	return encoded, facts
}

// requestMemory is what a request's spans are decoded and encoded into:
// a receiver keeps it (Receiver.memories) for a later request once the
// request is answered and the transaction that stored its spans is over.
type requestMemory struct {
	spans   []Span
	encoded [][]byte
	arena   []byte
	facts   []spanFacts
	blocks  preparedBlocks // how arena is laid out
	write   writeScratch   // the write's bookkeeping (save)
	// audits and auditScratch are auditAhead's answers and memory.
	audits       aheadAudits
	auditScratch *aheadScratch
}

// The most a requestMemory kept holds: a request of many spans or large
// ones gets its own.
const (
	pooledSpans = 4096
	pooledArena = 4 << 20
)

func (rc *Receiver) memory() *requestMemory {
	if mem, ok := rc.memories.Get().(*requestMemory); ok {
		return mem
	}
	return &requestMemory{}
}

// release keeps mem for a later request, holding nothing of this one.
func (rc *Receiver) release(mem *requestMemory) {
	if mem != nil && mem.reset() {
		rc.memories.Put(mem)
	}
}

// reset lets go of what mem holds of its request, and says whether it is
// worth keeping (it is not once a request of many spans or large ones
// grew it).
func (mem *requestMemory) reset() bool {
	if cap(mem.spans) > pooledSpans || cap(mem.arena) > pooledArena {
		return false
	}
	clear(mem.spans[:cap(mem.spans)])
	clear(mem.encoded[:cap(mem.encoded)])
	clear(mem.blocks.blocks[:cap(mem.blocks.blocks)])
	mem.write.release()
	clear(mem.audits)
	mem.spans, mem.encoded, mem.facts, mem.arena = mem.spans[:0], mem.encoded[:0], mem.facts[:0], mem.arena[:0]
	return true
}

// writeStatus answers an error with a google.rpc.Status, in the request's
// encoding as the OTLP/HTTP specification asks.
func writeStatus(w http.ResponseWriter, enc encoding, code int, msg string) {
	if enc == encJSON {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, "{\"code\":%d,\"message\":%s}\n", grpcCode(code), jsonString(msg))
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(code)
	_, _ = w.Write(statusProto(grpcCode(code), msg))
}

func jsonString(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// grpcCode is the google.rpc.Code that goes with an HTTP status.
func grpcCode(http int) int {
	switch http {
	case 400:
		return 3 // INVALID_ARGUMENT
	case 401:
		return 16 // UNAUTHENTICATED
	case 413:
		return 8 // RESOURCE_EXHAUSTED
	case 415, 405:
		return 12 // UNIMPLEMENTED
	case 503:
		return 14 // UNAVAILABLE
	}
	return 13 // INTERNAL
}

// statusProto encodes google.rpc.Status{code, message}: field 1 a varint,
// field 2 a string. pdata has no public type for it.
func statusProto(code int, msg string) []byte {
	b := []byte{0x08}
	b = appendVarint(b, uint64(code))
	b = append(b, 0x12)
	b = appendVarint(b, uint64(len(msg)))
	return append(b, msg...)
}

func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// badRequest is a request refused in the user's words, said as it is.
type badRequest struct{ error }

func (b *badRequest) Unwrap() error { return b.error }

// foreignDocument names what a JSON document without resourceSpans is
// when its top-level fields say (a Tempo or Jaeger download, a Temporal
// history: files 'retrylab import' reads), or "" when they do not.
func foreignDocument(data []byte) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		switch key, _ := tok.(string); key {
		case "resourceSpans":
			return ""
		case "batches":
			return "a Tempo trace ({\"batches\": ...})"
		case "trace":
			return "a Tempo trace ({\"trace\": ...})"
		case "data":
			return "a Jaeger trace ({\"data\": ...})"
		case "result":
			return "a Jaeger trace ({\"result\": ...})"
		case "events", "history":
			return "a Temporal workflow history"
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return ""
		}
	}
	return ""
}
