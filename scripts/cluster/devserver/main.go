// temporal-dev-server: the project's dev server, Temporal server 1.32 and its Web UI in one process on
// SQLite, started with the flags of `temporal server start-dev`. The Temporal CLI whose dev server runs
// 1.32 (1.9.1) cannot be built from the module proxy (docs/operations.md), so this embeds the server
// and UI releases that scripts/cluster/go.mod pins, the same ones `npm run cluster` runs.
package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
	uiversion "github.com/temporalio/ui-server/v2/server/version"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/headers"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/membership/static"
	"go.temporal.io/server/common/metrics"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

const clusterName = "active"

// defaultDynamicConfig: what the CLI's start-dev sets unless told otherwise, for a server on one
// SQLite connection; a --dynamic-config-value of the same key wins.
var defaultDynamicConfig = map[string]any{
	// A search attribute is usable as soon as it is registered (no cache refresh to wait for);
	// the persistence rate limits are raised to pay for the reads this adds.
	"system.forceSearchAttributesCacheRefreshOnRead": true,
	"system.forceNexusEndpointRefreshOnRead":         true,
	"frontend.persistenceMaxQPS":                     10000,
	"history.persistenceMaxQPS":                      45000,
	"history.hostLevelCacheMaxSize":                  8096,
	"frontend.namespaceRPS.visibility":               100,
	// No internet here: no call home for the version check.
	"frontend.enableServerVersionCheck": false,
}

func main() {
	opts, err := parseArgs(os.Args[1:], os.Stdout)
	if errors.Is(err, errHelp) {
		return
	}
	if err != nil {
		fail(err, 2)
	}
	if opts.version {
		fmt.Printf("temporal-dev-server: Temporal server %s, UI server %s\n", headers.ServerVersion, uiversion.UIVersion)
		return
	}
	// Caught from the start: the frontend may answer before start returns, and a SIGTERM then must
	// still stop the server cleanly (exit 0), not end the process by the signal's default.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	stop, err := start(opts)
	var stale *staleSchemaError
	if errors.As(err, &stale) {
		fail(err, exitStaleSchema)
	} else if err != nil {
		fail(err, 1)
	}
	<-signals
	stop()
}

func fail(err error, code int) {
	fmt.Fprintf(os.Stderr, "temporal-dev-server: %v\n", err)
	os.Exit(code)
}

// start checks the ports, prepares the database and starts the server (and the UI); the function it
// returns stops them.
func start(opts *options) (func(), error) {
	if err := checkFree(opts.ip, opts.port, "--port"); err != nil {
		return nil, err
	}
	if opts.httpPort == 0 {
		port, err := freePort(opts.ip)
		if err != nil {
			return nil, err
		}
		opts.httpPort = port
	} else if err := checkFree(opts.ip, opts.httpPort, "--http-port"); err != nil {
		return nil, err
	}
	if !opts.headless {
		if err := checkFree(opts.uiIP, opts.uiPort, "--ui-port"); err != nil {
			return nil, err
		}
	}
	if opts.metricsPort != 0 {
		if err := checkFree(opts.ip, opts.metricsPort, "--metrics-port"); err != nil {
			return nil, err
		}
	}
	sql, err := prepareDatabase(opts)
	if err != nil {
		return nil, err
	}
	conf, hosts, err := serverConfig(opts, sql)
	if err != nil {
		return nil, err
	}
	level := opts.logLevel
	if level == "never" {
		level = "fatal"
	}
	format := "json"
	if opts.logFormat == "pretty" || opts.logFormat == "console" || opts.logFormat == "text" {
		format = "console"
	}
	logLevel := zap.NewAtomicLevelAt(log.ParseZapLevel(level))
	encoding := log.DefaultZapEncoderConfig
	encoding.CallerKey = zapcore.OmitKey
	zapLogger, err := zap.Config{
		Level:            logLevel,
		Encoding:         format,
		EncoderConfig:    encoding,
		OutputPaths:      []string{"stderr"},
		ErrorOutputPaths: []string{"stderr"},
	}.Build()
	if err != nil {
		return nil, fmt.Errorf("building the logger: %w", err)
	}
	logger := log.NewZapLogger(zapLogger)

	dynamic := dynamicconfig.StaticClient{}
	for key, value := range defaultDynamicConfig {
		dynamic[dynamicconfig.MakeKey(key)] = value
	}
	for key, value := range opts.dynamicConfig {
		dynamic[dynamicconfig.MakeKey(key)] = value
	}
	server, err := temporal.NewServer(
		temporal.WithConfig(conf),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(hosts),
		temporal.WithLogger(logger),
		temporal.WithDynamicConfigClient(dynamic),
	)
	if err != nil {
		return nil, fmt.Errorf("creating the server: %w", err)
	}

	var ui *uiserver.Server
	if !opts.headless {
		ui = uiserver.NewServer(uiserveroptions.WithConfigProvider(&uiconfig.Config{
			Host:                opts.uiIP,
			Port:                opts.uiPort,
			TemporalGRPCAddress: net.JoinHostPort(opts.ip, strconv.Itoa(opts.port)),
			EnableUI:            true,
			CORS:                uiconfig.CORS{CookieInsecure: true},
			HideLogs:            true,
			DisableNewsFetch:    true,
		}))
		// Start blocks until Stop; the port was checked free above, and a listen error ends the
		// process with the UI server's own message.
		go func() { _ = ui.Start() }()
	}
	if err := server.Start(); err != nil {
		if ui != nil {
			ui.Stop()
		}
		return nil, fmt.Errorf("starting the server: %w", err)
	}

	persistence := "in memory"
	if opts.dbFilename != "" {
		persistence = opts.dbFilename
	}
	fmt.Printf("Temporal server %s (temporal-dev-server) at %s, HTTP %d, SQLite %s\n",
		headers.ServerVersion, net.JoinHostPort(opts.ip, strconv.Itoa(opts.port)), opts.httpPort, persistence)
	if ui != nil {
		fmt.Printf("Web UI %s at http://%s\n", uiversion.UIVersion, net.JoinHostPort(opts.uiIP, strconv.Itoa(opts.uiPort)))
	}
	return func() {
		// Stopping services warn about each other going away (pollers of the internal worker, the
		// membership): noise, not news.
		if logLevel.Level() < zap.ErrorLevel {
			logLevel.SetLevel(zap.ErrorLevel)
		}
		if ui != nil {
			ui.Stop()
		}
		if err := server.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "temporal-dev-server: stopping: %v\n", err)
		}
	}, nil
}

// prepareDatabase: a new file gets the schema; an existing one is kept as it is. Missing namespaces
// are registered either way, with the search attributes (an existing namespace keeps its own: add
// more through the operator API).
func prepareDatabase(opts *options) (*config.SQL, error) {
	sql := &config.SQL{PluginName: sqliteplugin.PluginName}
	if opts.dbFilename == "" {
		// Shared cache: every service of this process sees the one in-memory database; the schema
		// is set up when it is first opened.
		sql.ConnectAttributes = map[string]string{"mode": "memory", "cache": "shared"}
		sql.DatabaseName = fmt.Sprintf("temporal-dev-server-%d", os.Getpid())
	} else {
		sql.ConnectAttributes = map[string]string{"mode": "rwc"}
		sql.DatabaseName = opts.dbFilename
		if _, err := os.Stat(opts.dbFilename); errors.Is(err, os.ErrNotExist) {
			if _, err := os.Stat(filepath.Dir(opts.dbFilename)); err != nil {
				return nil, fmt.Errorf("--db-filename %s: %w", opts.dbFilename, err)
			}
			if err := sqliteschema.SetupSchema(sql); err != nil {
				return nil, fmt.Errorf("setting up the schema in %s: %w", opts.dbFilename, err)
			}
		} else if err != nil {
			return nil, fmt.Errorf("--db-filename %s: %w", opts.dbFilename, err)
		} else if err := checkSchema(opts.dbFilename); err != nil {
			return nil, err
		}
	}
	namespaces := make([]*sqliteschema.NamespaceConfig, 0, len(opts.namespaces))
	for _, name := range opts.namespaces {
		ns, err := sqliteschema.NewNamespaceConfig(clusterName, name, false, opts.searchAttributes)
		if err != nil {
			return nil, fmt.Errorf("namespace %s: %w", name, err)
		}
		namespaces = append(namespaces, ns)
	}
	if err := sqliteschema.CreateNamespaces(sql, namespaces...); err != nil {
		return nil, fmt.Errorf("registering the namespaces: %w", err)
	}
	return sql, nil
}

// serverConfig: one node running every service, the frontend on the asked ip:port and the others on
// free ports of the same IP, one history shard.
func serverConfig(opts *options, sql *config.SQL) (*config.Config, map[primitives.ServiceName]static.Hosts, error) {
	frontend := net.JoinHostPort(opts.ip, strconv.Itoa(opts.port))
	conf := &config.Config{}
	conf.Global.Membership.BroadcastAddress = opts.ip
	if opts.metricsPort != 0 {
		conf.Global.Metrics = &metrics.Config{Prometheus: &metrics.PrometheusConfig{
			ListenAddress: net.JoinHostPort(opts.ip, strconv.Itoa(opts.metricsPort)),
			HandlerPath:   "/metrics",
		}}
	}
	conf.Persistence.DefaultStore = "sqlite"
	conf.Persistence.VisibilityStore = "sqlite"
	conf.Persistence.NumHistoryShards = 1
	conf.Persistence.DataStores = map[string]config.DataStore{"sqlite": {SQL: sql}}
	conf.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{clusterName: {
			Enabled:                true,
			InitialFailoverVersion: 1,
			RPCAddress:             frontend,
			HTTPAddress:            net.JoinHostPort(opts.ip, strconv.Itoa(opts.httpPort)),
		}},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	conf.PublicClient.HostPort = frontend

	conf.Services = map[string]config.Service{}
	hosts := map[primitives.ServiceName]static.Hosts{}
	for _, name := range temporal.DefaultServices {
		var service config.Service
		service.RPC.BindOnIP = opts.ip
		if name == string(primitives.FrontendService) {
			service.RPC.GRPCPort = opts.port
			service.RPC.HTTPPort = opts.httpPort
		} else {
			port, err := freePort(opts.ip)
			if err != nil {
				return nil, nil, err
			}
			service.RPC.GRPCPort = port
		}
		conf.Services[name] = service
		hosts[primitives.ServiceName(name)] = static.SingleLocalHost(net.JoinHostPort(opts.ip, strconv.Itoa(service.RPC.GRPCPort)))
	}
	return conf, hosts, nil
}

// checkFree fails with the flag's name when ip:port cannot be listened on (most often: in use).
func checkFree(ip string, port int, flagName string) error {
	listener, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("%s %d: %w", flagName, port, err)
	}
	return listener.Close()
}

func freePort(ip string) (int, error) {
	listener, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("finding a free port on %s: %w", ip, err)
	}
	defer func() { _ = listener.Close() }()
	return listener.Addr().(*net.TCPAddr).Port, nil
}
