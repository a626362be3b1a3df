// Package interceptor records every attempt of every activity a Temporal
// worker runs, which Temporal's history does not keep (it keeps only the
// last attempt and the last failure), as OpenTelemetry spans that retrylab
// reads: send them to `retrylab serve --otlp`, import the workflow's
// history, and the explorer shows attempts 1..N-1 with their real outcomes
// instead of "not kept".
//
// Add it to a worker:
//
//	tp, _ := interceptor.NewTracerProvider(ctx, "http://127.0.0.1:4318")
//	defer tp.Shutdown(ctx)
//	w := worker.New(c, "orders", worker.Options{
//		Interceptors: []temporalinterceptor.WorkerInterceptor{interceptor.New(interceptor.Options{TracerProvider: tp})},
//	})
//
// Each attempt is one span: `execute_tool ACTIVITY_TYPE`, with the GenAI
// semantic conventions' tool attributes (the activity id as the tool-call
// id, the workflow run as the conversation) and retrylab's: the attempt
// number, a digest of the arguments (SHA-256 of their canonical JSON), the
// idempotency key the activity declared (SetIdempotencyKey), the faults
// retrylab injected into it (RecordFault), and the
// Temporal ids that tie the span to the history (workflow id, run id,
// activity id).
package interceptor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"

	"github.com/retrylab/retrylab/engine/idemkey"
	rltemporal "github.com/retrylab/retrylab/engine/temporal"
)

// Options configure the interceptor.
type Options struct {
	// TracerProvider makes the spans; NewTracerProvider sends them to
	// retrylab. Required.
	TracerProvider trace.TracerProvider
	// RecordArguments also records the arguments themselves (as
	// gen_ai.tool.call.arguments), which lets retrylab's audit group
	// repeated effects by them; off by default, since arguments may be
	// private: the digest is always recorded.
	RecordArguments bool
}

// New returns the worker interceptor.
func New(opts Options) interceptor.WorkerInterceptor {
	return &workerInterceptor{tracer: opts.TracerProvider.Tracer("github.com/retrylab/retrylab/temporal/interceptor"), opts: opts}
}

// NewTracerProvider sends spans to an OTLP/HTTP receiver such as
// `retrylab serve --otlp 127.0.0.1:4318` (endpoint "http://127.0.0.1:4318"),
// one batch per attempt's end, so a worker killed mid-activity has sent
// every attempt before it. Shut it down when the worker stops.
func NewTracerProvider(ctx context.Context, endpoint string) (*sdktrace.TracerProvider, error) {
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint+"/v1/traces"))
	if err != nil {
		return nil, err
	}
	return sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)), nil
}

type workerInterceptor struct {
	interceptor.WorkerInterceptorBase
	tracer trace.Tracer
	opts   Options
}

func (w *workerInterceptor) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	a := &activityInterceptor{w: w}
	a.Next = next
	return a
}

type activityInterceptor struct {
	interceptor.ActivityInboundInterceptorBase
	w *workerInterceptor
}

// attemptState is what an activity declares about its attempt while it
// runs (SetIdempotencyKey, RecordFault), for the attempt's span.
type attemptState struct {
	mu     sync.Mutex
	key    string
	faults []string
	// tracer, ctx and attrs make the fault markers: children of the
	// attempt's span, tied to the history as its start marker is.
	tracer trace.Tracer
	ctx    context.Context
	attrs  []attribute.KeyValue
}

type keyCtx struct{}

// SetIdempotencyKey declares, from inside an activity, the idempotency key
// its side effect carries (the one it sends to its provider), so the span
// of this attempt records it and retrylab's audit can tell a repeat the
// provider absorbed from a duplicate. Without the interceptor it does
// nothing.
func SetIdempotencyKey(ctx context.Context, key string) {
	if h, ok := ctx.Value(keyCtx{}).(*attemptState); ok {
		h.mu.Lock()
		h.key = key
		h.mu.Unlock()
	}
}

// RecordFault declares, from inside an activity, a fault injected into
// this attempt (a fault point such as timeout-after-effect, and where it
// came from: "armed from the explorer", "from the scenario's fault plan"),
// so retrylab marks the attempt ⚡ as it marks a native one. The attempt's
// span lists it in retrylab.faults; a marker span (retrylab.fault.injected)
// is sent at once, so a fault that kills the worker before the attempt
// ends is still known. Without the interceptor it does nothing.
func RecordFault(ctx context.Context, point, source string) {
	h, ok := ctx.Value(keyCtx{}).(*attemptState)
	if !ok {
		return
	}
	h.mu.Lock()
	h.faults = append(h.faults, point)
	h.mu.Unlock()
	_, marker := h.tracer.Start(h.ctx, rltemporal.SpanFaultInjected, trace.WithAttributes(append(h.attrs,
		attribute.String(rltemporal.AttrPhase, "fault"),
		attribute.String(rltemporal.AttrFaults, point),
		attribute.String(rltemporal.AttrFaultSource, source))...))
	marker.End()
}

func (a *activityInterceptor) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	info := activity.GetInfo(ctx)
	args, _ := json.Marshal(in.Args)
	if c, err := idemkey.Canonical(args); err == nil {
		args = c
	}
	sum := sha256.Sum256(args)
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", info.ActivityType.Name),
		attribute.String("gen_ai.tool.call.id", info.ActivityID),
		attribute.String("gen_ai.conversation.id", rltemporal.SpanConversation(info.WorkflowExecution.RunID)),
		attribute.Int("retrylab.attempt", int(info.Attempt)),
		attribute.String("retrylab.args_digest", hex.EncodeToString(sum[:])),
		attribute.String(rltemporal.AttrWorkflowID, info.WorkflowExecution.ID),
		attribute.String(rltemporal.AttrRunID, info.WorkflowExecution.RunID),
		attribute.String(rltemporal.AttrActivityID, info.ActivityID),
		attribute.String("temporal.task_queue", info.TaskQueue),
		attribute.String("temporal.workflow_type", info.WorkflowType.Name),
	}
	if a.w.opts.RecordArguments {
		attrs = append(attrs, attribute.String("gen_ai.tool.call.arguments", string(args)))
	}
	ctx, span := a.w.tracer.Start(ctx, "execute_tool "+info.ActivityType.Name, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attrs...))
	// A span is sent only when it ends, and a worker killed mid-attempt
	// never ends it: a marker, ended at once, says the attempt started (and
	// where), so a killed attempt is still known to have run.
	markerAttrs := []attribute.KeyValue{
		attribute.String("gen_ai.tool.name", info.ActivityType.Name),
		attribute.Int("retrylab.attempt", int(info.Attempt)),
		attribute.String(rltemporal.AttrRunID, info.WorkflowExecution.RunID),
		attribute.String(rltemporal.AttrActivityID, info.ActivityID),
		attribute.String("gen_ai.conversation.id", rltemporal.SpanConversation(info.WorkflowExecution.RunID)),
		attribute.String("temporal.worker", workerIdentity()),
	}
	_, started := a.w.tracer.Start(ctx, rltemporal.SpanAttemptStarted, trace.WithAttributes(
		append(markerAttrs, attribute.String(rltemporal.AttrPhase, "started"))...))
	started.End()
	holder := &attemptState{tracer: a.w.tracer, ctx: ctx, attrs: markerAttrs}
	ctx = context.WithValue(ctx, keyCtx{}, holder)
	res, err := a.Next.ExecuteActivity(ctx, in)
	holder.mu.Lock()
	if holder.key != "" {
		span.SetAttributes(attribute.String("retrylab.idempotency_key", holder.key))
	}
	if len(holder.faults) > 0 {
		span.SetAttributes(attribute.String(rltemporal.AttrFaults, strings.Join(holder.faults, ",")))
	}
	holder.mu.Unlock()
	if err != nil {
		msg := err.Error()
		var app *temporal.ApplicationError
		if errors.As(err, &app) && app.Message() != "" {
			msg = app.Message()
		}
		span.SetStatus(codes.Error, msg)
		span.SetAttributes(attribute.String("error.type", errorType(ctx, err)))
	} else {
		span.SetStatus(codes.Ok, "")
		if out, jerr := json.Marshal(res); jerr == nil && a.w.opts.RecordArguments {
			span.SetAttributes(attribute.String("gen_ai.tool.call.result", string(out)))
		}
	}
	span.End()
	return res, err
}

// workerIdentity is this worker process as Temporal's SDKs name one by
// default: pid@host.
func workerIdentity() string {
	host, err := os.Hostname()
	if err != nil {
		host = "?"
	}
	return strconv.Itoa(os.Getpid()) + "@" + host
}

// errorType names an attempt's error as the OTLP importer reads it: an
// application error's type, a timeout or a cancellation as such (retrylab
// treats both as an unknown outcome), else the Go type.
func errorType(ctx context.Context, err error) string {
	var app *temporal.ApplicationError
	var to *temporal.TimeoutError
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &to):
		return "timeout"
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		return "cancelled"
	case errors.As(err, &app) && app.Type() != "":
		return app.Type()
	}
	return "error"
}
