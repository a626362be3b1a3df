package otlp_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/otlp"
	"github.com/retrylab/retrylab/store"
)

// grpcReceiver serves rc over OTLP/gRPC on a loopback port and returns
// its address.
func grpcReceiver(t *testing.T, rc *otlp.Receiver) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := rc.GRPCServer(0)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.GracefulStop(); <-done })
	return ln.Addr().String()
}

func openDB(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(t.TempDir()+"/r.db", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// sendTwice has the agent of the HTTP receiver's test: a send retried
// under new tool-call ids, ended by tp's Shutdown (which exports).
func sendTwice(t *testing.T, tp *sdktrace.TracerProvider) error {
	t.Helper()
	ctx := context.Background()
	tr := tp.Tracer("retrylab-test-agent")
	agentCtx, agent := tr.Start(ctx, "invoke_agent mailer")
	agent.SetAttributes(attribute.String("gen_ai.operation.name", "invoke_agent"), attribute.String("gen_ai.conversation.id", "grpc-conv-1"))
	for i, outcome := range []otelcodes.Code{otelcodes.Error, otelcodes.Ok, otelcodes.Ok} {
		_, tool := tr.Start(agentCtx, "execute_tool send_email")
		tool.SetAttributes(attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", "send_email"),
			attribute.String("gen_ai.tool.call.id", []string{"call_1", "call_2", "call_3"}[i]),
			attribute.String("gen_ai.tool.call.arguments", `{"to":"ana@example.com","subject":"Invoice 42"}`))
		if outcome == otelcodes.Error {
			tool.SetAttributes(attribute.String("error.type", "TimeoutError"))
		}
		tool.SetStatus(outcome, "")
		tool.End()
	}
	agent.End()
	return tp.Shutdown(ctx)
}

// The OpenTelemetry Go SDK's OTLP/gRPC exporter, gzip on, is the client:
// its spans are stored and the retried send audits as a duplicate.
func TestGRPCReceiverTakesTheGoSDKExporter(t *testing.T) {
	db := openDB(t)
	var stored []string
	addr := grpcReceiver(t, &otlp.Receiver{DB: db, Source: "test grpc receiver", Stored: func(x []string) { stored = append(stored, x...) }})
	exp, err := otlptracegrpc.New(context.Background(), otlptracegrpc.WithEndpoint(addr), otlptracegrpc.WithInsecure(),
		otlptracegrpc.WithCompressor("gzip"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sendTwice(t, sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))); err != nil {
		t.Fatalf("export: %v", err)
	}
	traces := folded(t, db)
	if len(traces) != 1 || traces[0].Execution != "otlp-conv-grpc-conv-1" {
		t.Fatalf("executions %d", len(traces))
	}
	if len(stored) == 0 {
		t.Error("the explorer was never told")
	}
	p, _ := audit.ParseEffects(audit.DefaultEffects)
	rep := audit.Run(traces, audit.Options{Effects: p})
	if rep.Counts.Duplicate != 1 || len(rep.Findings[0].Attempts) != 3 {
		t.Errorf("audit %+v", rep)
	}
}

// bytesCodec sends a message's bytes as they are, to send what no
// exporter would.
type bytesCodec struct{}

func (bytesCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}
func (bytesCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}
func (bytesCodec) Name() string { return "proto" }

const exportMethod = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

func dial(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// The status codes OTLP/gRPC gives: InvalidArgument for bytes that are no
// export, ResourceExhausted for a message over the limit, OK with a
// partial success for a refused span.
func TestGRPCReceiverStatusCodes(t *testing.T) {
	db := openDB(t)
	addr := grpcReceiver(t, &otlp.Receiver{DB: db, Source: "test grpc receiver", MaxBody: 64 << 10})
	conn := dial(t, addr)
	ctx := context.Background()
	var out []byte
	bad := []byte{0x0a, 0xff, 0x01}
	err := conn.Invoke(ctx, exportMethod, &bad, &out, grpc.ForceCodecV2(bytesCodec{}))
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "not an OTLP trace export") {
		t.Errorf("malformed protobuf: %v", err)
	}
	big := make([]byte, 65<<10)
	err = conn.Invoke(ctx, exportMethod, &big, &out, grpc.ForceCodecV2(bytesCodec{}))
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("too large: %v", err)
	}

	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for i, start := range []uint64{1790607000000000000, 5} {
		s := spans.AppendEmpty()
		s.SetTraceID([16]byte{0x5b, 1})
		s.SetSpanID([8]byte{0xa0, 0, 0, 0, 0, 0, 0, byte(i + 1)})
		s.SetName("x")
		s.SetStartTimestamp(pcommonTime(start))
		s.SetEndTimestamp(pcommonTime(1790607001000000000))
	}
	resp, err := ptraceotlp.NewGRPCClient(conn).Export(ctx, ptraceotlp.NewExportRequestFromTraces(td))
	if err != nil {
		t.Fatalf("one span refused: %v", err)
	}
	ps := resp.PartialSuccess()
	if ps.RejectedSpans() != 1 || !strings.Contains(ps.ErrorMessage(), "span a000000000000002: start time 1970") {
		t.Errorf("partial success %d %q", ps.RejectedSpans(), ps.ErrorMessage())
	}
	if n := len(folded(t, db)); n != 1 {
		t.Errorf("%d executions, want the good span's", n)
	}
}

// With a token, a request without it or with another is refused, over
// gRPC (Unauthenticated) and HTTP (401), and nothing of it is stored; one
// with it is taken.
func TestReceiversAskTheToken(t *testing.T) {
	db := openDB(t)
	rc := &otlp.Receiver{DB: db, Source: "test receiver", Token: "s3cret-token"}
	addr := grpcReceiver(t, rc)
	conn := dial(t, addr)
	td := ptrace.NewTraces()
	s := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	s.SetTraceID([16]byte{0x5b, 2})
	s.SetSpanID([8]byte{0xb0, 1})
	s.SetName("x")
	s.SetStartTimestamp(pcommonTime(1790607000000000000))
	s.SetEndTimestamp(pcommonTime(1790607001000000000))
	client := ptraceotlp.NewGRPCClient(conn)
	for _, md := range []metadata.MD{nil, metadata.Pairs("authorization", "Bearer wrong"), metadata.Pairs("authorization", "s3cret-token")} {
		ctx := metadata.NewOutgoingContext(context.Background(), md)
		if _, err := client.Export(ctx, ptraceotlp.NewExportRequestFromTraces(td)); status.Code(err) != codes.Unauthenticated {
			t.Errorf("gRPC with %v: %v, want Unauthenticated", md, err)
		}
	}

	doc, err := os.ReadFile("../../fixtures/otlp/genai-semconv.json")
	if err != nil {
		t.Fatal(err)
	}
	srv := httpServer(t, rc.Handler())
	for _, auth := range []string{"", "Bearer wrong", "Basic czNjcmV0LXRva2Vu", "Bearer s3cret-tokenX"} {
		code, body := postAuth(t, srv, auth, doc)
		if code != http.StatusUnauthorized || !strings.Contains(body, `"code":16`) {
			t.Errorf("HTTP with %q: %d %s", auth, code, body)
		}
	}
	if n := len(folded(t, db)); n != 0 {
		t.Fatalf("%d executions stored from refused requests", n)
	}

	ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("authorization", "Bearer s3cret-token"))
	if _, err := client.Export(ctx, ptraceotlp.NewExportRequestFromTraces(td)); err != nil {
		t.Errorf("gRPC with the token: %v", err)
	}
	if code, body := postAuth(t, srv, "bearer s3cret-token", doc); code != http.StatusOK {
		t.Errorf("HTTP with the token: %d %s", code, body)
	}
	if n := len(folded(t, db)); n != 2 {
		t.Errorf("%d executions, want the span's and the fixture's", n)
	}
}

func pcommonTime(ns uint64) pcommon.Timestamp { return pcommon.Timestamp(ns) }

func httpServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func postAuth(t *testing.T, url, auth string, body []byte) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/traces", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A request of many frames (gRPC hands it over in several buffers, which
// the receiver joins) is taken whole, plain or gzipped.
func TestGRPCReceiverTakesARequestOfManyFrames(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	addr := grpcReceiver(t, &otlp.Receiver{DB: db, Source: "test grpc receiver"})
	conn := dial(t, addr)
	client := ptraceotlp.NewGRPCClient(conn)
	for round, opts := range [][]grpc.CallOption{nil, {grpc.UseCompressor("gzip")}} {
		td := ptrace.NewTraces()
		spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
		const traces = 75
		for i := range traces * 8 {
			s := spans.AppendEmpty()
			s.SetTraceID([16]byte{0x6c, byte(round), byte(i / 8)})
			s.SetSpanID([8]byte{0xb0, byte(round), 0, 0, 0, 0, byte(i >> 8), byte(i)})
			s.SetName("execute_tool send_email")
			s.SetStartTimestamp(pcommonTime(1790607000000000000))
			s.SetEndTimestamp(pcommonTime(1790607001000000000))
			s.Attributes().PutStr("gen_ai.tool.call.arguments", strings.Repeat("x", 300))
		}
		req := ptraceotlp.NewExportRequestFromTraces(td)
		if b, _ := req.MarshalProto(); len(b) < 100<<10 {
			t.Fatalf("a request of %d bytes: not many frames", len(b))
		}
		resp, err := client.Export(context.Background(), req, opts...)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if ps := resp.PartialSuccess(); ps.RejectedSpans() != 0 {
			t.Fatalf("round %d: %d spans refused: %s", round, ps.RejectedSpans(), ps.ErrorMessage())
		}
		if n := len(folded(t, db)); n != traces*(round+1) {
			t.Errorf("round %d: %d executions, want %d", round, n, traces*(round+1))
		}
	}
}
