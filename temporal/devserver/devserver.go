// Package devserver runs Temporal's own server in this process, on SQLite,
// bound to loopback only: a cluster for `retrylab-temporal dev` and for
// tests, with nothing to download or install. It is the server code the
// Temporal CLI's dev server runs (go.temporal.io/server's temporal package
// with the SQLite persistence plugin), configured here for one machine.
package devserver

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/retrylab/retrylab/internal/freeport"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

// DefaultAddress is where the frontend listens unless told otherwise: the
// port every Temporal client and the temporal CLI try first.
const DefaultAddress = "127.0.0.1:7233"

// Options configure a dev server.
type Options struct {
	// Address is the frontend's host:port; the host must be a loopback
	// address. Port 0 picks a free one (tests). Default DefaultAddress.
	Address string
	// DBPath is the SQLite file that keeps the cluster's state across
	// restarts (created, with its schema, when missing); "" keeps it in
	// memory, gone when the server stops.
	DBPath string
	// Namespaces are registered at start; default "default".
	Namespaces []string
	// Logger receives the server's logs; nil discards them.
	Logger log.Logger
}

// Server is a running dev server.
type Server struct {
	srv     temporal.Server
	address string
}

// Address is the frontend's host:port, for clients.
func (s *Server) Address() string { return s.address }

// Stop stops every service of the server.
func (s *Server) Stop() error { return s.srv.Stop() }

// Start starts the server's frontend, history, matching and worker
// services in this process and returns once they serve.
func Start(opts Options) (*Server, error) {
	if opts.Address == "" {
		opts.Address = DefaultAddress
	}
	if len(opts.Namespaces) == 0 {
		opts.Namespaces = []string{"default"}
	}
	if opts.Logger == nil {
		opts.Logger = log.NewNoopLogger()
	}
	host, portText, err := net.SplitHostPort(opts.Address)
	if err != nil {
		return nil, fmt.Errorf("address %q: %w", opts.Address, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("address %q: the dev server binds a loopback address only (127.0.0.1)", opts.Address)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return nil, fmt.Errorf("address %q: bad port", opts.Address)
	}
	// Fail early, with the address, when the port is taken: the server
	// itself would only log it.
	if port != 0 {
		if err := portFree(host, port); err != nil {
			return nil, err
		}
	}
	need := servicePorts
	if port == 0 {
		need++
	}
	ports, err := distinctPorts(host, need, port)
	if err != nil {
		return nil, err
	}
	if port == 0 {
		port, ports = ports[0], ports[1:]
	}
	return start(opts, host, port, ports)
}

// start is Start on the ports chosen: the frontend's and servicePorts
// others. A port the server cannot bind (another process took it since
// it was found free) is start's error: the server says so through its
// logger's Fatal, and would go on without the listener.
func start(opts Options, host string, port int, ports []int) (s *Server, err error) {
	logger := fatalStops{opts.Logger}
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(fatalStopped)
			if !ok {
				panic(r)
			}
			s, err = nil, fmt.Errorf("start the Temporal server on %s: %s", host, f)
		}
	}()
	cfg, sqlCfg, err := serverConfig(host, port, ports, opts.DBPath)
	if err != nil {
		return nil, err
	}
	if opts.DBPath != "" {
		if _, err := os.Stat(opts.DBPath); errors.Is(err, os.ErrNotExist) {
			// Created 0600 before SQLite opens it: the cluster's state is
			// the user's alone, like retrylab's own database.
			f, err := os.OpenFile(opts.DBPath, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil {
				return nil, fmt.Errorf("create %s: %w", opts.DBPath, err)
			}
			f.Close()
			if err := sqlite.SetupSchema(sqlCfg); err != nil {
				os.Remove(opts.DBPath)
				return nil, fmt.Errorf("create the Temporal schema in %s: %w", opts.DBPath, err)
			}
		} else if err != nil {
			return nil, err
		}
	}
	var nss []*sqlite.NamespaceConfig
	for _, ns := range opts.Namespaces {
		nc, err := sqlite.NewNamespaceConfig(cfg.ClusterMetadata.CurrentClusterName, ns, false, nil)
		if err != nil {
			return nil, fmt.Errorf("namespace %s: %w", ns, err)
		}
		nss = append(nss, nc)
	}
	if err := sqlite.CreateNamespaces(sqlCfg, nss...); err != nil {
		return nil, fmt.Errorf("register namespaces: %w", err)
	}
	authorizer, err := authorization.GetAuthorizerFromConfig(&cfg.Global.Authorization)
	if err != nil {
		return nil, err
	}
	claims, err := authorization.GetClaimMapperFromConfig(&cfg.Global.Authorization, logger)
	if err != nil {
		return nil, err
	}
	srv, err := temporal.NewServer(
		temporal.WithConfig(cfg),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claims }),
		temporal.WithDynamicConfigClient(dynamicconfig.StaticClient{}),
	)
	if err != nil {
		return nil, fmt.Errorf("create the Temporal server: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("start the Temporal server: %w", err)
	}
	return &Server{srv: srv, address: net.JoinHostPort(host, strconv.Itoa(port))}, nil
}

// fatalStops is the server's logger with Fatal as its name says: the
// server calls it where it cannot go on (a listener it could not open)
// and, under a logger that returns, goes on all the same, into a nil
// pointer. Its panic ends start with an error, or the process, as the
// Temporal server's own logger would by exiting.
type fatalStops struct{ log.Logger }

// fatalStopped is what fatalStops panics with: the message and its tags.
type fatalStopped string

func (l fatalStops) Fatal(msg string, tags ...tag.Tag) {
	l.Logger.Fatal(msg, tags...)
	var b strings.Builder
	b.WriteString(msg)
	for _, t := range tags {
		fmt.Fprintf(&b, ", %s: %v", t.Key(), t.Value())
	}
	panic(fatalStopped(b.String()))
}

// servicePorts is how many ports the services take besides the
// frontend's gRPC port: a membership port each, and the history's,
// matching's and worker's gRPC ports.
const servicePorts = 7

// serverConfig is one cluster on one machine: the four services on
// loopback ports (the frontend's gRPC port, and servicePorts others), one
// history shard, SQLite for both stores, archival off.
func serverConfig(host string, frontend int, ports []int, dbPath string) (*config.Config, *config.SQL, error) {
	sqlCfg := &config.SQL{PluginName: sqliteplugin.PluginName, ConnectAttributes: map[string]string{}}
	if dbPath == "" {
		// A name of its own, so two servers in one process (tests, one
		// after another) never share a memory database.
		var id [8]byte
		if _, err := rand.Read(id[:]); err != nil {
			return nil, nil, err
		}
		sqlCfg.DatabaseName = "retrylab-dev-" + hex.EncodeToString(id[:])
		sqlCfg.ConnectAttributes["mode"] = "memory"
		sqlCfg.ConnectAttributes["cache"] = "shared"
	} else {
		abs, err := filepath.Abs(dbPath)
		if err != nil {
			return nil, nil, err
		}
		sqlCfg.DatabaseName = abs
		sqlCfg.ConnectAttributes["mode"] = "rwc"
	}
	if len(ports) != servicePorts {
		return nil, nil, fmt.Errorf("%d ports for the services, want %d", len(ports), servicePorts)
	}
	next := func() int {
		p := ports[0]
		ports = ports[1:]
		return p
	}
	services := map[string]config.Service{}
	for _, name := range []string{"frontend", "history", "matching", "worker"} {
		grpc := frontend
		if name != "frontend" {
			grpc = next()
		}
		services[name] = config.Service{RPC: config.RPC{GRPCPort: grpc, MembershipPort: next(), BindOnIP: host}}
	}
	frontendAddr := net.JoinHostPort(host, strconv.Itoa(frontend))
	cfg := &config.Config{
		Global: config.Global{
			Membership: config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: host},
		},
		Persistence: config.Persistence{
			DefaultStore:     sqliteplugin.PluginName,
			VisibilityStore:  sqliteplugin.PluginName,
			NumHistoryShards: 1,
			DataStores:       map[string]config.DataStore{sqliteplugin.PluginName: {SQL: sqlCfg}},
		},
		ClusterMetadata: &cluster.Config{
			EnableGlobalNamespace:    false,
			FailoverVersionIncrement: 10,
			MasterClusterName:        "active",
			CurrentClusterName:       "active",
			ClusterInformation: map[string]cluster.ClusterInformation{
				"active": {Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontendAddr},
			},
		},
		DCRedirectionPolicy: config.DCRedirectionPolicy{Policy: "noop"},
		Services:            services,
		Archival: config.Archival{
			History:    config.HistoryArchival{State: "disabled"},
			Visibility: config.VisibilityArchival{State: "disabled"},
		},
		NamespaceDefaults: config.NamespaceDefaults{Archival: config.ArchivalNamespaceDefaults{
			History:    config.HistoryArchivalNamespaceDefaults{State: "disabled"},
			Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"},
		}},
		// The server's own clients (the worker service's) dial the frontend.
		PublicClient: config.PublicClient{HostPort: frontendAddr},
	}
	return cfg, sqlCfg, nil
}

// distinctPorts finds n free ports on host for the server's services,
// none of them avoid, which the server binds later itself (its
// configuration takes ports, not listeners): a block below the kernel's
// ephemeral range (freeport), else one by one. They are distinct: two
// services given one port would find it taken inside the server, whose
// logger only says so, and the second bind fail with no listener.
func distinctPorts(host string, n, avoid int) ([]int, error) {
	for range 10 {
		base, err := freeport.Ports(host, n)
		if err != nil {
			break
		}
		if avoid >= base && avoid < base+n {
			continue
		}
		ports := make([]int, n)
		for i := range ports {
			ports[i] = base + i
		}
		return ports, nil
	}
	seen := map[int]bool{avoid: true}
	var ports []int
	for range 100 * n {
		p, err := freeport.Port(host)
		if err != nil {
			return nil, err
		}
		if !seen[p] {
			seen[p] = true
			ports = append(ports, p)
			if len(ports) == n {
				return ports, nil
			}
		}
	}
	return nil, fmt.Errorf("find %d distinct free ports on %s: none", n, host)
}

// portFree says whether a port the user named is free.
func portFree(host string, port int) error {
	if err := freeport.Free(host, port); err != nil {
		return fmt.Errorf("%s is in use (another Temporal server?): %w", net.JoinHostPort(host, strconv.Itoa(port)), err)
	}
	return nil
}
