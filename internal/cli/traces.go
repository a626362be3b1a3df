package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/control"
	"github.com/retrylab/retrylab/engine/otlp"
	"github.com/retrylab/retrylab/internal/plural"
)

// otlpCommands are the commands for OpenTelemetry traces: import, audit, export.
func otlpCommands(a *app) []*cobra.Command {
	return []*cobra.Command{a.importCmd(), a.auditCmd(), a.exportCmd()}
}

// otlpFlags are 'serve”s receiver flags: --otlp (OTLP/HTTP),
// --otlp-grpc (OTLP/gRPC) with --otlp-grpc-max-in-flight, and --token,
// which RETRYLAB_OTLP_TOKEN stands for when the flag is not given.
type otlpFlags struct {
	http, grpc, token string
	grpcMaxInFlight   int
}

// otlpTokenEnv is the environment variable a receiver's token may come
// from, which keeps it out of the process list.
const otlpTokenEnv = "RETRYLAB_OTLP_TOKEN"

// addOTLPFlag gives 'serve' its receiver flags.
func addOTLPFlag(cmd *cobra.Command, f *otlpFlags) {
	cmd.Flags().StringVar(&f.http, "otlp", "", "also receive OpenTelemetry traces (OTLP/HTTP POST /v1/traces) on this address, e.g. 127.0.0.1:4318")
	cmd.Flags().StringVar(&f.grpc, "otlp-grpc", "", "also receive OpenTelemetry traces (OTLP/gRPC) on this address, e.g. 127.0.0.1:4317")
	cmd.Flags().IntVar(&f.grpcMaxInFlight, "otlp-grpc-max-in-flight", otlp.DefaultMaxInFlight, "the most OTLP/gRPC exports worked on at once; one more is refused as overload (ResourceExhausted, retried by exporters)")
	cmd.Flags().StringVar(&f.token, "token", "", "bearer `token` the OTLP receivers ask of every request, 16 characters or more; needed off loopback (default: $"+otlpTokenEnv+")")
	cmd.Long += `

With --otlp 127.0.0.1:4318 it is also an OTLP/HTTP trace receiver: point any
OpenTelemetry exporter at http://127.0.0.1:4318 (protobuf or JSON, gzip or
not) and the spans are stored as imported executions, as 'retrylab import'
stores files; an explorer attached to the same database shows them arriving.
A 200 answer means the spans are on disk (fsynced); refused spans are counted
in the answer's partial success; 400, 413 and 415 answer bad data, too large
a body and an unknown content type or encoding.

With --otlp-grpc 127.0.0.1:4317 it is an OTLP/gRPC trace receiver too (the
SDKs' gRPC exporters, collectors), with the same promise: OK once on disk,
partial success for refused spans, InvalidArgument for bad data,
ResourceExhausted for too large a message or too many at once (retryable:
more than --otlp-grpc-max-in-flight, 64 unless given), gzip understood.

Either may listen off loopback (0.0.0.0:4318, for agents in a container or a
cluster) only with a token: --token or $` + otlpTokenEnv + `. Every request
must then carry "Authorization: Bearer <token>" (exporters:
OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer <token>"); one without it is
answered 401 or Unauthenticated. A token has at least 16 characters
(openssl rand -hex 16 makes one); --token without a receiver is refused.`
}

// minTokenLen is the shortest token the OTLP receivers accept: one that
// guards a receiver off loopback must not be guessed.
const minTokenLen = 16

// check checks the receivers' addresses before anything starts: a bad one,
// one off loopback without a token, a token shorter than minTokenLen, or
// --token without a receiver, is a usage error (exit 2), said before any
// banner. The token comes from the environment if the flag
// did not give it.
func (f *otlpFlags) check(getenv func(string) string) error {
	if f.token != "" && f.http == "" && f.grpc == "" {
		// It would guard nothing, and the user believes it does.
		return &exitError{code: 2, msg: "--token is the OTLP receivers' token: give --otlp or --otlp-grpc with it"}
	}
	from := "--token"
	if f.token == "" {
		f.token, from = getenv(otlpTokenEnv), "$"+otlpTokenEnv
	}
	if f.token != "" && len(f.token) < minTokenLen && (f.http != "" || f.grpc != "") {
		return &exitError{code: 2, msg: fmt.Sprintf("%s is %s: give a token of at least %d, hard to guess (openssl rand -hex 16)", from, plural.Count(len(f.token), "character"), minTokenLen)}
	}
	for _, a := range []struct{ flag, addr, example string }{{"--otlp", f.http, "127.0.0.1:4318"}, {"--otlp-grpc", f.grpc, "127.0.0.1:4317"}} {
		if a.addr == "" {
			continue
		}
		host, _, err := net.SplitHostPort(a.addr)
		if err != nil {
			return &exitError{code: 2, msg: fmt.Sprintf("%s %s: %v (want host:port, e.g. %s)", a.flag, a.addr, err, a.example)}
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) && f.token == "" {
			return &exitError{code: 2, msg: fmt.Sprintf("%s %s is off loopback: give --token (or $%s) so that only agents with it can send, or listen on 127.0.0.1", a.flag, a.addr, otlpTokenEnv)}
		}
	}
	if f.grpcMaxInFlight <= 0 {
		return &exitError{code: 2, msg: fmt.Sprintf("--otlp-grpc-max-in-flight %d: give a number above zero", f.grpcMaxInFlight)}
	}
	// Port 0 asks for a free port: two of them are two ports.
	if _, port, _ := net.SplitHostPort(f.http); f.http != "" && f.http == f.grpc && port != "0" {
		return &exitError{code: 2, msg: fmt.Sprintf("--otlp and --otlp-grpc both on %s: give each its own port (4318 and 4317)", f.http)}
	}
	return nil
}

// startOTLP starts the receivers f asks for (checked by check) on the
// host's database. It returns the lines that announce them, for the caller
// to print with its banner, and how to stop them.
func (a *app) startOTLP(s engine.Service, f otlpFlags) (string, func(), error) {
	if f.http == "" && f.grpc == "" {
		return "", func() {}, nil
	}
	h, ok := s.(*control.Server)
	if !ok {
		return "", nil, fmt.Errorf("--otlp: another retrylab holds %s; stop it and run 'retrylab serve' with the receivers alone", s.DBPath())
	}
	var lines strings.Builder
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	receiver := func(addr string) *otlp.Receiver {
		return &otlp.Receiver{DB: h.Store(), Source: "OTLP receiver " + addr, Token: f.token, Stored: func(execs []string) {
			for _, x := range execs {
				h.Announce(x)
			}
		}}
	}
	if f.http != "" {
		ln, err := net.Listen("tcp", f.http)
		if err != nil {
			return "", nil, fmt.Errorf("--otlp: %w", err)
		}
		srv := &http.Server{Handler: receiver(ln.Addr().String()).Handler(), ReadHeaderTimeout: 10 * time.Second}
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				fmt.Fprintln(a.errOut, "retrylab: OTLP receiver:", err)
			}
		}()
		stops = append(stops, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(ctx)
			<-done
		})
		fmt.Fprintf(&lines, "  OTLP      POST http://%s/v1/traces  (protobuf or JSON, gzip; 200 once on disk)\n", ln.Addr())
	}
	if f.grpc != "" {
		ln, err := net.Listen("tcp", f.grpc)
		if err != nil {
			stop()
			return "", nil, fmt.Errorf("--otlp-grpc: %w", err)
		}
		srv := receiver(ln.Addr().String()).GRPCServer(f.grpcMaxInFlight)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := srv.Serve(ln); err != nil {
				fmt.Fprintln(a.errOut, "retrylab: OTLP/gRPC receiver:", err)
			}
		}()
		stops = append(stops, func() {
			// GracefulStop waits for exports under way, which end once on disk.
			srv.GracefulStop()
			<-done
		})
		fmt.Fprintf(&lines, "  OTLP      gRPC %s  (TraceService/Export, gzip; OK once on disk)\n", ln.Addr())
	}
	if f.token != "" {
		lines.WriteString("  OTLP      every request must carry \"Authorization: Bearer <token>\" (--token or $" + otlpTokenEnv + "); others get 401 / Unauthenticated\n")
	}
	return lines.String(), stop, nil
}
