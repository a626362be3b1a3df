package otlp

import (
	"context"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A request over the receiver's limit of requests at once is refused
// before it is read: ResourceExhausted with a RetryInfo, which OTLP
// clients retry after the delay.
func TestGRPCOverloadIsRetryable(t *testing.T) {
	svc := &traceService{rc: &Receiver{}, slots: make(chan struct{}, 1)}
	svc.slots <- struct{}{} // one request under way fills it
	_, err := svc.handle(nil, context.Background(), func(any) error {
		t.Error("an overloaded receiver read the request")
		return nil
	}, nil)
	st := status.Convert(err)
	if st.Code() != codes.ResourceExhausted {
		t.Fatalf("overload: %v", err)
	}
	var delay bool
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay().AsDuration() == retryAfterOverload {
			delay = true
		}
	}
	if !delay {
		t.Errorf("no RetryInfo of %s in %v", retryAfterOverload, st.Details())
	}
}
