// Package workerproc lets a test binary run itself as a Temporal worker
// process, as a team's worker would run, so a test can kill it (SIGKILL) in
// the middle of an activity. Only tests use it.
package workerproc

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"go.temporal.io/sdk/client"
	temporalinterceptor "go.temporal.io/sdk/interceptor"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/retrylab/retrylab/temporal/interceptor"
)

// The environment that makes a test binary a worker process: the cluster's
// address, the OTLP endpoint its spans go to, and a file the test's
// activities may write to say they started.
const (
	EnvAddr = "RETRYLAB_TEST_WORKER_ADDR"
	EnvOTLP = "RETRYLAB_TEST_WORKER_OTLP"
	EnvMark = "RETRYLAB_TEST_WORKER_MARK"
)

// Command is the running test binary started again as a worker process (it
// runs no tests); its stderr is the caller's. The caller's TestMain sees
// EnvAddr and calls Serve.
func Command(addr, otlpURL, mark string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), EnvAddr+"="+addr, EnvOTLP+"="+otlpURL, EnvMark+"="+mark)
	cmd.Stderr = os.Stderr
	return cmd
}

// quiet keeps the SDK's client and worker logs out of the test output.
var quiet = sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))

// Serve runs a worker on taskQueue of the cluster at addr, with what
// register registers, every attempt recorded as an OTLP span to otlpURL by
// retrylab's interceptor, until SIGTERM or an interrupt. It returns the
// process's exit code; errors go to stderr.
func Serve(addr, otlpURL, taskQueue string, register func(worker.Worker)) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	c, err := client.Dial(client.Options{HostPort: addr, Logger: quiet})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Close()
	tp, err := interceptor.NewTracerProvider(ctx, otlpURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer tp.Shutdown(context.Background())
	w := worker.New(c, taskQueue, worker.Options{
		Interceptors: []temporalinterceptor.WorkerInterceptor{interceptor.New(interceptor.Options{TracerProvider: tp})},
	})
	register(w)
	if err := w.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	<-ctx.Done()
	w.Stop()
	return 0
}
