package cli

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/control"
)

// serveCmd hosts the world for agents of any language, until Ctrl-C.
func (a *app) serveCmd() *cobra.Command {
	var port int
	var otlpFl otlpFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Host the simulated world so any HTTP client can be the agent",
		Long: `Start the mail API and the CRM on 127.0.0.1 and print their addresses, so an
agent in any language can call them with plain HTTP. Requests without
retrylab's attribution headers still work; their effects show as
unattributed in the outbox (accept them in 'retrylab check' with
--external-ok). Stop with Ctrl-C.

The ports are free ones unless --port N fixes them: the mail API on N, the
CRM on N+1, the control API on N+2. The control API (POST /v1/control/...,
with the token from the .host file beside the database as a bearer token)
is how an HTTP client moves the world clock: see README.`,
		Example: "  retrylab serve\n  retrylab serve --port 8025",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("port") {
				if err := a.fixPorts(port); err != nil {
					return err
				}
			}
			if err := otlpFl.check(os.Getenv); err != nil {
				return err
			}
			return a.withService(func(h engine.Service) error {
				// The receiver listens before the banner, so that a busy
				// address is said before any address is announced.
				otlpLine, stopOTLP, err := a.startOTLP(h, otlpFl)
				if err != nil {
					return err
				}
				defer stopOTLP()
				fmt.Fprintf(a.out, "retrylab world on %s\n", h.DBPath())
				fmt.Fprintf(a.out, "  mail API  POST %s/v1/send       (Idempotency-Key honoured)\n", h.MailURL())
				fmt.Fprintf(a.out, "  CRM       PUT  %s/v1/records/{id}  POST %s/v1/records  GET %s/v1/records/{id}\n", h.CRMURL(), h.CRMURL(), h.CRMURL())
				if c, ok := h.(interface{ ControlURL() string }); ok {
					fmt.Fprintf(a.out, "  control   POST %s/v1/control/advance  {\"duration\": \"25h\"}  (bearer token: \"token\" in %s)\n",
						c.ControlURL(), control.HostFile(a.dbPath))
				}
				fmt.Fprint(a.out, otlpLine)
				fmt.Fprintln(a.out, "press Ctrl-C to stop")
				sigs := make(chan os.Signal, 1)
				signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
				defer signal.Stop(sigs)
				// What the host has to say (an import committed after its
				// client went away) is printed as it comes.
				notices, stopNotices := h.Subscribe(256)
				defer stopNotices()
				for stopped := false; !stopped; {
					select {
					case n, ok := <-notices:
						if !ok {
							notices = nil
						} else if n.Host != "" {
							fmt.Fprintf(a.out, "[host]      %s\n", n.Host)
						}
					case <-sigs:
						stopped = true
					}
				}
				fmt.Fprintln(a.out, "stopped")
				return nil
			})
		},
	}
	cmd.Flags().IntVar(&port, "port", 0, "fixed ports: the mail API on `N`, the CRM on N+1, the control API on N+2 (default: free ports)")
	addOTLPFlag(cmd, &otlpFl)
	return cmd
}
