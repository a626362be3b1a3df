package jaeger

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The service whose spans the test sends, and the arguments of the
// article's email.
const (
	service     = "mailer-agent"
	invoiceArgs = `{"to":"ana@example.com","subject":"Invoice 42","body":"Your invoice is attached."}`
)

// The traces sent, with the executions retrylab makes of them (one per
// gen_ai.conversation.id) and how many spans each holds.
var (
	articleTrace = trace.TraceID{0x5e, 0x11, 0xd0, 0x0c, 0xa1, 15: 1}
	controlTrace = trace.TraceID{0x5e, 0x11, 0xd0, 0x0c, 0xa1, 15: 2}
)

const (
	articleExecution = "otlp-conv-jaeger-real-article"
	controlExecution = "otlp-conv-jaeger-real-control"
	articleSpans     = 5
	controlSpans     = 3
)

// sendWindow sends, with the OpenTelemetry Go SDK's OTLP/HTTP exporter,
// the article's window: an agent's send_email times out (after the mail
// went out: the trace cannot say) and the model sends it again with the
// same arguments; and a control trace, an agent that sends two different
// emails. The spans start at base and carry the GenAI conventions'
// names, as an instrumented agent's do.
func sendWindow(t *testing.T, otlpAddr string, base time.Time) {
	t.Helper()
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(otlpAddr), otlptracehttp.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	ids := &fixedIDs{traces: []trace.TraceID{articleTrace, controlTrace}}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithIDGenerator(ids),
		sdktrace.WithResource(resource.NewSchemaless(
			attribute.String("service.name", service),
			attribute.String("telemetry.sdk.language", "go"),
		)),
	)
	tracer := tp.Tracer("retrylab.test/jaeger")
	at := func(d time.Duration) trace.SpanStartEventOption { return trace.WithTimestamp(base.Add(d)) }
	ends := func(d time.Duration) trace.SpanEndOption { return trace.WithTimestamp(base.Add(d)) }

	agent := func(conv string, start time.Duration) (context.Context, trace.Span) {
		return tracer.Start(ctx, "invoke_agent mailer", at(start), trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "invoke_agent"),
			attribute.String("gen_ai.agent.name", "mailer"),
			attribute.String("gen_ai.conversation.id", conv),
		))
	}
	chat := func(ctx context.Context, start, end time.Duration) {
		_, s := tracer.Start(ctx, "chat gpt-4.1", at(start), trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "chat"),
			attribute.String("gen_ai.request.model", "gpt-4.1"),
		))
		s.End(ends(end))
	}
	send := func(ctx context.Context, callID, args string, start, end time.Duration) trace.Span {
		_, s := tracer.Start(ctx, "execute_tool send_email", at(start), trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", "send_email"),
			attribute.String("gen_ai.tool.call.id", callID),
			attribute.String("gen_ai.tool.call.arguments", args),
		))
		return s
	}

	// The article: the first send times out, the second succeeds.
	actx, root := agent("jaeger-real-article", 0)
	chat(actx, 100*time.Millisecond, 900*time.Millisecond)
	first := send(actx, "call_1", invoiceArgs, time.Second, 0)
	first.SetAttributes(attribute.String("error.type", "TimeoutError"))
	first.RecordError(timeoutError{}, trace.WithTimestamp(base.Add(4*time.Second)))
	first.SetStatus(codes.Error, "timed out after 3s")
	first.End(ends(4 * time.Second))
	chat(actx, 4100*time.Millisecond, 5*time.Second)
	second := send(actx, "call_2", invoiceArgs, 5100*time.Millisecond, 0)
	second.SetStatus(codes.Ok, "")
	second.End(ends(5600 * time.Millisecond))
	root.End(ends(6 * time.Second))

	// The control: two different emails, each sent once.
	cctx, croot := agent("jaeger-real-control", 10*time.Second)
	for i, to := range []string{"bob@example.com", "carol@example.com"} {
		start := 10*time.Second + time.Duration(i+1)*time.Second
		s := send(cctx, "call_c"+string(rune('1'+i)), `{"to":"`+to+`","subject":"Welcome","body":"Hello."}`, start, 0)
		s.SetStatus(codes.Ok, "")
		s.End(ends(start + 300*time.Millisecond))
	}
	croot.End(ends(13 * time.Second))

	// Shutdown exports what the batcher holds, and says if it could not.
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := tp.Shutdown(sctx); err != nil {
		t.Fatalf("export to Jaeger: %v", err)
	}
}

// timeoutError is the error the first send's exception event records.
type timeoutError struct{}

func (timeoutError) Error() string { return "TimeoutError: no answer from the mail API within 3s" }

// fixedIDs gives the root spans the traces in order, and every span the
// next span id: the test knows the ids it asks Jaeger for.
type fixedIDs struct {
	mu     sync.Mutex
	traces []trace.TraceID
	next   uint64
}

func (g *fixedIDs) NewIDs(context.Context) (trace.TraceID, trace.SpanID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	tid := g.traces[0]
	g.traces = g.traces[1:]
	return tid, g.spanID()
}

func (g *fixedIDs) NewSpanID(context.Context, trace.TraceID) trace.SpanID {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.spanID()
}

func (g *fixedIDs) spanID() trace.SpanID {
	g.next++
	var id trace.SpanID
	binary.BigEndian.PutUint64(id[:], 0x5e11000000000000|g.next)
	return id
}
