package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/control"
	"github.com/retrylab/retrylab/engine/otlp"
)

// otlpCommands are the commands for OpenTelemetry traces: import, audit, export.
func otlpCommands(a *app) []*cobra.Command {
	return []*cobra.Command{a.importCmd(), a.auditCmd(), a.exportCmd()}
}

// addOTLPFlag gives 'serve' its --otlp flag.
func addOTLPFlag(cmd *cobra.Command, addr *string) {
	cmd.Flags().StringVar(addr, "otlp", "", "also receive OpenTelemetry traces (OTLP/HTTP POST /v1/traces) on this loopback address, e.g. 127.0.0.1:4318")
	cmd.Long += `

With --otlp 127.0.0.1:4318 it is also an OTLP/HTTP trace receiver: point any
OpenTelemetry exporter at http://127.0.0.1:4318 (protobuf or JSON, gzip or
not) and the spans are stored as imported executions, as 'retrylab import'
stores files; an explorer attached to the same database shows them arriving.
A 200 answer means the spans are on disk (fsynced); refused spans are counted
in the answer's partial success; 400, 413 and 415 answer bad data, too large
a body and an unknown content type or encoding.`
}

// checkOTLPAddr checks --otlp's address before anything starts: a bad one
// is a usage error (exit 2), said before any banner.
func checkOTLPAddr(addr string) error {
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return &exitError{code: 2, msg: fmt.Sprintf("--otlp %s: %v (want host:port, e.g. 127.0.0.1:4318)", addr, err)}
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return &exitError{code: 2, msg: fmt.Sprintf("--otlp %s: retrylab listens on loopback only (127.0.0.1)", addr)}
	}
	return nil
}

// startOTLP starts the OTLP/HTTP receiver on the host's database when addr
// (checked by checkOTLPAddr) is set. It returns the line that announces it,
// for the caller to print with its banner, and how to stop it.
func (a *app) startOTLP(s engine.Service, addr string) (string, func(), error) {
	if addr == "" {
		return "", func() {}, nil
	}
	h, ok := s.(*control.Server)
	if !ok {
		return "", nil, fmt.Errorf("--otlp: another retrylab holds %s; stop it and run 'retrylab serve --otlp %s' alone", s.DBPath(), addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("--otlp: %w", err)
	}
	rc := &otlp.Receiver{DB: h.Store(), Source: "OTLP receiver " + ln.Addr().String(), Stored: func(execs []string) {
		for _, x := range execs {
			h.Announce(x)
		}
	}}
	srv := &http.Server{Handler: rc.Handler(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(a.errOut, "retrylab: OTLP receiver:", err)
		}
	}()
	line := fmt.Sprintf("  OTLP      POST http://%s/v1/traces  (protobuf or JSON, gzip; 200 once on disk)\n", ln.Addr())
	return line, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}
