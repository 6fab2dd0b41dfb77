package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
)

// options is what a command line asks for, in the words of `temporal server start-dev`.
type options struct {
	ip               string
	port             int
	httpPort         int
	metricsPort      int
	uiIP             string
	uiPort           int
	headless         bool
	dbFilename       string
	namespaces       []string
	searchAttributes map[string]enumspb.IndexedValueType
	dynamicConfig    map[string]any
	logLevel         string
	logFormat        string
	version          bool
}

// repeated collects every value of a flag given more than once.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

var errHelp = errors.New("help requested")

// parseArgs reads the flags the project passes to `temporal server start-dev` (the words `server
// start-dev` in front are accepted, so callers written for the CLI, such as the SDK's test
// environment, start this program unchanged). Anything else is an error naming it.
func parseArgs(args []string, usageOut io.Writer) (*options, error) {
	if len(args) >= 2 && args[0] == "server" && args[1] == "start-dev" {
		args = args[2:]
	}
	o := &options{}
	var namespaces, searchAttributes, dynamicConfig repeated
	fs := flag.NewFlagSet("temporal-dev-server", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.ip, "ip", "127.0.0.1", "IP the frontend (and, unless --ui-ip, the UI) binds to")
	fs.IntVar(&o.port, "port", 7233, "frontend gRPC port")
	fs.IntVar(&o.port, "p", 7233, "shorthand for --port")
	fs.IntVar(&o.httpPort, "http-port", 0, "frontend HTTP API port (default: a free one)")
	fs.IntVar(&o.metricsPort, "metrics-port", 0, "Prometheus metrics port (default: no metrics)")
	fs.StringVar(&o.uiIP, "ui-ip", "", "IP of the Web UI (default: --ip)")
	fs.IntVar(&o.uiPort, "ui-port", 0, "Web UI port (default: --port + 1000)")
	fs.BoolVar(&o.headless, "headless", false, "no Web UI")
	fs.StringVar(&o.dbFilename, "db-filename", "", "SQLite file (default: in memory)")
	fs.StringVar(&o.dbFilename, "f", "", "shorthand for --db-filename")
	fs.Var(&namespaces, "namespace", "namespace to register besides default (repeatable)")
	fs.Var(&namespaces, "n", "shorthand for --namespace")
	fs.Var(&searchAttributes, "search-attribute", "name=Type to register (repeatable)")
	fs.Var(&dynamicConfig, "dynamic-config-value", "key=JSON dynamic config value (repeatable)")
	fs.StringVar(&o.logLevel, "log-level", "warn", "debug, info, warn, error or never")
	fs.StringVar(&o.logFormat, "log-format", "json", "json, or pretty (console lines)")
	fs.BoolVar(&o.version, "version", false, "print the server and UI versions and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(usageOut)
			fs.PrintDefaults()
			return nil, errHelp
		}
		if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok {
			return nil, fmt.Errorf("unknown flag --%s (flags: %s)", name, flagNames(fs))
		}
		return nil, fmt.Errorf("%w (flags: %s)", err, flagNames(fs))
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q: only `server start-dev` and flags are accepted", fs.Arg(0))
	}
	if o.ip == "localhost" {
		o.ip = "127.0.0.1" // the server's membership needs an IP
	}
	if o.uiIP == "" {
		o.uiIP = o.ip
	}
	if o.uiPort == 0 {
		o.uiPort = min(o.port+1000, 65535)
	}
	switch o.logLevel {
	case "debug", "info", "warn", "error", "never":
	default:
		return nil, fmt.Errorf("--log-level %q: expected debug, info, warn, error or never", o.logLevel)
	}
	o.namespaces = append([]string{"default"}, namespaces...)
	var err error
	if o.searchAttributes, err = parseSearchAttributes(searchAttributes); err != nil {
		return nil, err
	}
	if o.dynamicConfig, err = parseDynamicConfig(dynamicConfig); err != nil {
		return nil, err
	}
	return o, nil
}

func flagNames(fs *flag.FlagSet) string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) {
		if len(f.Name) > 1 {
			names = append(names, "--"+f.Name)
		}
	})
	return strings.Join(names, " ")
}

func splitPair(flagName, value string) (string, string, error) {
	key, v, ok := strings.Cut(value, "=")
	if !ok || key == "" {
		return "", "", fmt.Errorf("--%s %q: expected key=value", flagName, value)
	}
	return key, v, nil
}

// parseSearchAttributes reads name=Type pairs; Type as the CLI spells it (Keyword, Text, Int, Double,
// Bool, Datetime, KeywordList), any case.
func parseSearchAttributes(values []string) (map[string]enumspb.IndexedValueType, error) {
	attrs := map[string]enumspb.IndexedValueType{}
	for _, value := range values {
		name, typeName, err := splitPair("search-attribute", value)
		if err != nil {
			return nil, err
		}
		var found enumspb.IndexedValueType
		for shorthand, ordinal := range enumspb.IndexedValueType_shorthandValue {
			if strings.EqualFold(shorthand, typeName) {
				found = enumspb.IndexedValueType(ordinal)
			}
		}
		if found == enumspb.INDEXED_VALUE_TYPE_UNSPECIFIED {
			return nil, fmt.Errorf("--search-attribute %q: unknown type %q", value, typeName)
		}
		attrs[name] = found
	}
	return attrs, nil
}

// parseDynamicConfig reads key=JSON pairs. A whole JSON number becomes an int: the server's integer
// settings do not accept a float64.
func parseDynamicConfig(values []string) (map[string]any, error) {
	config := map[string]any{}
	for _, value := range values {
		key, raw, err := splitPair("dynamic-config-value", value)
		if err != nil {
			return nil, err
		}
		decoder := json.NewDecoder(bytes.NewReader([]byte(raw)))
		decoder.UseNumber()
		var decoded any
		if err := decoder.Decode(&decoded); err != nil {
			return nil, fmt.Errorf("--dynamic-config-value %q: the value is not JSON: %w", value, err)
		}
		if number, ok := decoded.(json.Number); ok {
			if i, err := number.Int64(); err == nil {
				decoded = int(i)
			} else if f, err := number.Float64(); err == nil {
				decoded = f
			}
		}
		config[key] = decoded // a later value of the same key wins
	}
	return config, nil
}
