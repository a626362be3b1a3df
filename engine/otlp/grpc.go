package otlp

import (
	"context"

	"fmt"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip" // OTLP/gRPC exporters may gzip their requests
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/retrylab/retrylab/internal/jsonlimit"
)

// DefaultMaxInFlight bounds the OTLP/gRPC requests a receiver works on at
// once; one over it is refused as overload, to be retried.
const DefaultMaxInFlight = 64

// retryAfterOverload is the delay an overloaded receiver asks a client
// to wait before it sends again.
const retryAfterOverload = time.Second

// GRPCServer is the receiver as an OTLP/gRPC trace receiver (the
// TraceService's Export, which the OpenTelemetry SDKs' gRPC exporters and
// collectors call), with the OTLP/HTTP receiver's promise: an OK once
// the spans are durably committed, through the same commit path, with a
// partial success naming the refused spans. Data that does not decode is
// InvalidArgument, a request over MaxBody (decompressed) or over
// maxInFlight at once is ResourceExhausted (the latter with a RetryInfo,
// which makes it retryable), a store that fails is Unavailable, and with
// a Token a request without it is Unauthenticated. gzip is understood.
// maxInFlight <= 0 means DefaultMaxInFlight. The caller serves it on a
// listener and stops it (GracefulStop waits for requests under way).
func (rc *Receiver) GRPCServer(maxInFlight int) *grpc.Server {
	limit := rc.MaxBody
	if limit <= 0 {
		limit = DefaultMaxBody
	}
	if maxInFlight <= 0 {
		maxInFlight = DefaultMaxInFlight
	}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(int(limit)), grpc.ForceServerCodecV2(rawCodec{rc: rc}))
	svc := &traceService{rc: rc, slots: make(chan struct{}, maxInFlight)}
	srv.RegisterService(&grpc.ServiceDesc{
		ServiceName: "opentelemetry.proto.collector.trace.v1.TraceService",
		HandlerType: (*any)(nil),
		Methods:     []grpc.MethodDesc{{MethodName: "Export", Handler: svc.handle}},
		Metadata:    "opentelemetry/proto/collector/trace/v1/trace_service.proto",
	}, svc)
	return srv
}

// traceService serves Export. Its codec (rawCodec) decodes the request
// into spans and leaves an error to the service: gRPC would answer a
// message its codec cannot decode with Internal, where OTLP asks for
// InvalidArgument.
type traceService struct {
	rc    *Receiver
	slots chan struct{}
}

// handle is the method handler gRPC calls: it checks the token before
// reading the request, and runs no interceptor (the server has none).
func (svc *traceService) handle(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
	if tok := svc.rc.Token; tok != "" {
		md, _ := metadata.FromIncomingContext(ctx)
		var header string
		if v := md.Get("authorization"); len(v) > 0 {
			header = v[0]
		}
		if !authorized(tok, header) {
			return nil, status.Error(codes.Unauthenticated, "send the receiver's token: authorization: Bearer <token>")
		}
	}
	select {
	case svc.slots <- struct{}{}:
		defer func() { <-svc.slots }()
	default:
		return nil, overloaded()
	}
	var req exportRequest
	if err := dec(&req); err != nil {
		return nil, err
	}
	defer svc.rc.release(req.mem)
	return svc.export(&req)
}

// export stores what req holds and answers the ExportTraceServiceResponse.
func (svc *traceService) export(req *exportRequest) (*rawMessage, error) {
	if req.err != nil {
		return nil, status.Error(codes.InvalidArgument, "not an OTLP trace export: "+strings.Join(strings.Fields(req.err.Error()), " "))
	}
	if err := tooManySpans(req.spans.count); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	rejected, msg, err := svc.rc.accept(req.spans, req.mem)
	if err != nil {
		return nil, status.Error(codes.Unavailable, "store: "+err.Error())
	}
	resp := rawMessage(exportResponse(encProto, rejected, msg))
	return &resp, nil
}

// overloaded is ResourceExhausted with a RetryInfo: the OTLP
// specification's answer for a server that cannot keep up, which a client
// retries after the delay.
func overloaded() error {
	st := status.New(codes.ResourceExhausted, fmt.Sprintf("more than the receiver's requests at once: retry in %s", retryAfterOverload))
	if withInfo, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(retryAfterOverload)}); err == nil {
		st = withInfo
	}
	return st.Err()
}

// rawMessage is a protobuf message's bytes: the service's response.
type rawMessage []byte

// exportRequest is an Export call's request as rawCodec decodes it,
// straight from the buffers gRPC received it in (decodeProtoSpans), or
// why it does not decode.
type exportRequest struct {
	spans protoRequest
	err   error
	mem   *requestMemory // the receiver's, the spans' memory
}

// rawCodec decodes the service's requests itself, and sends its
// responses' bytes as they are. A request that does not decode is not the
// codec's error (gRPC would answer Internal) but the request's, which the
// service answers InvalidArgument, as OTLP asks.
type rawCodec struct{ rc *Receiver }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(*rawMessage)
	if !ok {
		return nil, fmt.Errorf("otlp grpc: cannot marshal %T", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(*m)}, nil
}

func (c rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(*exportRequest)
	if !ok {
		return fmt.Errorf("otlp grpc: cannot unmarshal into %T", v)
	}
	// The spans copy what they keep: the received buffers are read in
	// place, or once joined into one of the receiver's body buffers (of
	// the request's size: gRPC's pool would give one of 1 MiB), and not
	// kept.
	m.mem = c.rc.memory()
	c.rc.decodeGate(func() {
		var b []byte
		if len(data) == 1 {
			b = data[0].ReadOnlyData()
		} else {
			buf, done := c.rc.bodyBuffer(data.Len())
			defer done()
			for _, d := range data {
				buf.Write(d.ReadOnlyData())
			}
			b = buf.Bytes()
		}
		m.spans, m.err = decodeProtoSpans(b, jsonlimit.MaxRequestSpans, m.mem.spans)
	})
	m.mem.spans = m.spans.spans
	return nil
}

// Name is the content subtype OTLP/gRPC clients send.
func (rawCodec) Name() string { return "proto" }
