// Package rsctl is the operator's command line over resultsync's gRPC APIs
// (the binary is services/rsctl): results (record, correct, delete, get,
// list), reconciliation runs (start, with --wait following the run's stream
// and printing progress on stderr; list, get, watch) and their
// discrepancies, repairs (plan, create, approve, get, list, items, watch,
// verify, cancel), the outbox (stats, parked replay) and the projection
// (status).
//
// Output is a table for people or, with --output json, the response
// message in protojson for scripts (one JSON document on stdout). Progress
// and notes go to stderr. Addresses, the bearer token and TLS come from
// flags or the environment (RS_RESULTS_ADDR ... RS_REPAIR_ADDR as
// deploy/local/env.sh sets them, RS_TOKEN, RSCTL_TLS_*).
//
// Exit codes (Run's result):
//
//	0 ok
//	1 any other error (INTERNAL, UNKNOWN, ...)
//	2 usage: unknown command or flag, missing argument, INVALID_ARGUMENT
//	3 NOT_FOUND
//	4 PERMISSION_DENIED or UNAUTHENTICATED
//	5 conflict: ABORTED (a version conflict), ALREADY_EXISTS, FAILED_PRECONDITION
//	6 UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED (worth retrying)
//	7 what was waited for ended badly: the run FAILED or did not reach its
//	  boundary, the repair FAILED or was CANCELLED
//	8 the run succeeded but found discrepancies (--fail-on-discrepancies)
package rsctl

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/platform/buildinfo"
	"github.com/resultsync/resultsync/pkg/platform/config"
	"github.com/resultsync/resultsync/pkg/platform/tlsconfig"
)

// Exit codes of Run (the package documentation says what each means).
const (
	ExitOK            = 0
	ExitError         = 1
	ExitUsage         = 2
	ExitNotFound      = 3
	ExitPermission    = 4
	ExitConflict      = 5
	ExitUnavailable   = 6
	ExitWaitFailed    = 7
	ExitDiscrepancies = 8
)

// usageError is a mistake in the command line (exit 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// exitError ends the command with its code after printing what it waited for.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

// ExitCode is the exit code that stands for err (nil: 0).
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ue usageError
	if errors.As(err, &ue) || errors.Is(err, flag.ErrHelp) {
		return ExitUsage
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	st, ok := status.FromError(err)
	if !ok {
		if errors.Is(err, context.DeadlineExceeded) {
			return ExitUnavailable
		}
		return ExitError
	}
	switch st.Code() {
	case codes.OK:
		return ExitOK
	case codes.InvalidArgument, codes.OutOfRange:
		return ExitUsage
	case codes.NotFound:
		return ExitNotFound
	case codes.PermissionDenied, codes.Unauthenticated:
		return ExitPermission
	case codes.Aborted, codes.AlreadyExists, codes.FailedPrecondition:
		return ExitConflict
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted:
		return ExitUnavailable
	default:
		return ExitError
	}
}

// globals are the settings every command shares.
type globals struct {
	resultsAddr, relayAddr, consumerAddr, reconcileAddr, repairAddr string
	token                                                           string
	output                                                          string
	timeout                                                         time.Duration
	tls                                                             tlsconfig.Files
}

// defaults reads the environment.
func defaults() (globals, error) {
	g := globals{
		resultsAddr:   config.Env("RS_RESULTS_ADDR", "127.0.0.1:7101"),
		relayAddr:     config.Env("RS_RELAY_ADDR", "127.0.0.1:7102"),
		consumerAddr:  config.Env("RS_CONSUMER_ADDR", "127.0.0.1:7103"),
		reconcileAddr: config.Env("RS_RECONCILE_ADDR", "127.0.0.1:7104"),
		repairAddr:    config.Env("RS_REPAIR_ADDR", "127.0.0.1:7105"),
		token:         os.Getenv("RS_TOKEN"),
		output:        config.Env("RSCTL_OUTPUT", "table"),
		timeout:       30 * time.Second,
		tls: tlsconfig.Files{
			CAFile:     os.Getenv("RSCTL_TLS_CA_FILE"),
			CertFile:   os.Getenv("RSCTL_TLS_CERT_FILE"),
			KeyFile:    os.Getenv("RSCTL_TLS_KEY_FILE"),
			ServerName: os.Getenv("RSCTL_TLS_SERVER_NAME"),
		},
	}
	var errs []error
	if v := os.Getenv("RSCTL_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("RSCTL_TIMEOUT=%q: %w", v, err))
		}
		g.timeout = d
	}
	switch v := strings.ToLower(os.Getenv("RSCTL_TLS")); v {
	case "", "0", "false":
	case "1", "true":
		g.tls.Enable = true
	default:
		errs = append(errs, fmt.Errorf("RSCTL_TLS=%q: want true or false", v))
	}
	return g, errors.Join(errs...)
}

// register defines the global flags on fs, each defaulting to its current
// value (the environment's, or what an earlier flag set parsed).
func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.resultsAddr, "results-addr", g.resultsAddr, "ResultService address (env RS_RESULTS_ADDR)")
	fs.StringVar(&g.relayAddr, "relay-addr", g.relayAddr, "OutboxService (relay) address (env RS_RELAY_ADDR)")
	fs.StringVar(&g.consumerAddr, "consumer-addr", g.consumerAddr, "ProjectionService (consumer) address (env RS_CONSUMER_ADDR)")
	fs.StringVar(&g.reconcileAddr, "reconcile-addr", g.reconcileAddr, "ReconcileService address (env RS_RECONCILE_ADDR)")
	fs.StringVar(&g.repairAddr, "repair-addr", g.repairAddr, "RepairService address (env RS_REPAIR_ADDR)")
	fs.StringVar(&g.token, "token", g.token, "bearer token sent with every call (env RS_TOKEN)")
	fs.StringVar(&g.output, "output", g.output, "table (for people) or json (protojson, for scripts) (env RSCTL_OUTPUT)")
	fs.StringVar(&g.output, "o", g.output, "short for --output")
	fs.DurationVar(&g.timeout, "timeout", g.timeout, "deadline of each unary call; --wait and watch run until the end (env RSCTL_TIMEOUT)")
	fs.BoolVar(&g.tls.Enable, "tls", g.tls.Enable, "dial over TLS with the system roots (implied by any --tls-* file) (env RSCTL_TLS)")
	fs.StringVar(&g.tls.CAFile, "tls-ca-file", g.tls.CAFile, "PEM CA certificates that verify the servers (env RSCTL_TLS_CA_FILE)")
	fs.StringVar(&g.tls.CertFile, "tls-cert-file", g.tls.CertFile, "PEM client certificate, for servers that require one (env RSCTL_TLS_CERT_FILE)")
	fs.StringVar(&g.tls.KeyFile, "tls-key-file", g.tls.KeyFile, "PEM private key of --tls-cert-file (env RSCTL_TLS_KEY_FILE)")
	fs.StringVar(&g.tls.ServerName, "tls-server-name", g.tls.ServerName, "name the servers' certificates must carry (empty: the host dialed) (env RSCTL_TLS_SERVER_NAME)")
}

func (g *globals) check() error {
	if g.output != "table" && g.output != "json" {
		return usagef("--output %q: want table or json", g.output)
	}
	if g.timeout <= 0 {
		return usagef("--timeout must be positive, got %s", g.timeout)
	}
	if err := g.tls.CheckClient("rsctl"); err != nil {
		return usageError{err.Error()}
	}
	return nil
}

// env is one command's running state.
type env struct {
	g      *globals
	stdout io.Writer
	stderr io.Writer
	conns  map[string]*grpc.ClientConn
	creds  credentials.TransportCredentials
}

func (e *env) dial(addr string) (*grpc.ClientConn, error) {
	if c, ok := e.conns[addr]; ok {
		return c, nil
	}
	if e.creds == nil {
		e.creds = insecure.NewCredentials()
		if e.g.tls.ClientEnabled() {
			tc, err := tlsconfig.Client(slog.New(slog.NewTextHandler(e.stderr, nil)), e.g.tls, "resultsync servers")
			if err != nil {
				return nil, usageError{fmt.Sprintf("TLS settings: %v", err)}
			}
			e.creds = credentials.NewTLS(tc)
		}
	}
	c, err := grpc.NewClient(addr, grpc.WithTransportCredentials(e.creds))
	if err != nil {
		return nil, usagef("server address %q: %v", addr, err)
	}
	e.conns[addr] = c
	return c, nil
}

func (e *env) close() {
	for _, c := range e.conns {
		_ = c.Close()
	}
}

// withToken adds the bearer token to ctx's outgoing metadata.
func (e *env) withToken(ctx context.Context) context.Context {
	if e.g.token == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+e.g.token)
}

// unary is the context of one unary call: the token and --timeout.
func (e *env) unary(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(e.withToken(ctx), e.g.timeout)
}

func (e *env) results() (fitnessv1.ResultServiceClient, error) {
	c, err := e.dial(e.g.resultsAddr)
	if err != nil {
		return nil, err
	}
	return fitnessv1.NewResultServiceClient(c), nil
}

func (e *env) reconcile() (fitnessv1.ReconcileServiceClient, error) {
	c, err := e.dial(e.g.reconcileAddr)
	if err != nil {
		return nil, err
	}
	return fitnessv1.NewReconcileServiceClient(c), nil
}

func (e *env) repair() (fitnessv1.RepairServiceClient, error) {
	c, err := e.dial(e.g.repairAddr)
	if err != nil {
		return nil, err
	}
	return fitnessv1.NewRepairServiceClient(c), nil
}

func (e *env) outbox() (fitnessv1.OutboxServiceClient, error) {
	c, err := e.dial(e.g.relayAddr)
	if err != nil {
		return nil, err
	}
	return fitnessv1.NewOutboxServiceClient(c), nil
}

func (e *env) projection() (fitnessv1.ProjectionServiceClient, error) {
	c, err := e.dial(e.g.consumerAddr)
	if err != nil {
		return nil, err
	}
	return fitnessv1.NewProjectionServiceClient(c), nil
}

// print writes m as protojson with --output json, else as the table t.
func (e *env) print(m proto.Message, t func(w *tableWriter)) error {
	if e.g.output == "json" {
		b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(m)
		if err != nil {
			return fmt.Errorf("encoding the answer as JSON: %w", err)
		}
		_, err = fmt.Fprintf(e.stdout, "%s\n", b)
		return err
	}
	tw := newTableWriter(e.stdout)
	t(tw)
	return tw.flush()
}

// notef writes a note for people on stderr (never part of the output).
func (e *env) notef(format string, args ...any) {
	_, _ = fmt.Fprintf(e.stderr, format+"\n", args...)
}

// command is one verb of a noun ("results get").
type command struct {
	path    string // "results get"
	args    string // positional arguments, for the usage line
	summary string
	flags   func(fs *flag.FlagSet)
	// run does the work; pos are the positional arguments (checked
	// against nargs first).
	run   func(ctx context.Context, e *env, pos []string) error
	nargs int
}

// Run runs rsctl with args (without the program name), writing the output
// to stdout and notes, progress and errors to stderr, and returns the exit
// code (see the package documentation).
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := run(ctx, args, stdout, stderr)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		_, _ = fmt.Fprintf(stderr, "rsctl: %s\n", describe(err))
	}
	return ExitCode(err)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	g, err := defaults()
	if err != nil {
		return usageError{err.Error()}
	}
	cmds := commands()
	top := flag.NewFlagSet("rsctl", flag.ContinueOnError)
	top.SetOutput(stderr)
	g.register(top)
	var version bool
	top.BoolVar(&version, "version", false, "print the build and exit")
	top.Usage = func() { usage(stderr, top, cmds) }
	if err := top.Parse(args); err != nil {
		return err
	}
	if version {
		_, err := fmt.Fprintln(stdout, buildinfo.Get().String("rsctl"))
		return err
	}
	rest := top.Args()
	if len(rest) == 0 {
		usage(stderr, top, cmds)
		return usagef("no command given")
	}
	if rest[0] == "version" {
		_, err := fmt.Fprintln(stdout, buildinfo.Get().String("rsctl"))
		return err
	}
	var cmd *command
	for i := range cmds {
		words := strings.Fields(cmds[i].path)
		if len(rest) >= len(words) && slices.Equal(rest[:len(words)], words) {
			cmd = &cmds[i]
			rest = rest[len(words):]
			break
		}
	}
	if cmd == nil {
		usage(stderr, top, cmds)
		return usagef("unknown command %q", strings.Join(rest[:min(2, len(rest))], " "))
	}
	fs := flag.NewFlagSet("rsctl "+cmd.path, flag.ContinueOnError)
	fs.SetOutput(stderr)
	g.register(fs)
	if cmd.flags != nil {
		cmd.flags(fs)
	}
	fs.Usage = func() {
		_, _ = fmt.Fprintf(stderr, "usage: rsctl %s [flags] %s\n  %s\n\nflags:\n", cmd.path, cmd.args, cmd.summary)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, rest)
	if err != nil {
		return err
	}
	if len(pos) != cmd.nargs {
		fs.Usage()
		return usagef("rsctl %s takes %d argument(s) (%s), got %d", cmd.path, cmd.nargs, cmd.args, len(pos))
	}
	if err := g.check(); err != nil {
		return err
	}
	e := &env{g: &g, stdout: stdout, stderr: stderr, conns: map[string]*grpc.ClientConn{}}
	defer e.close()
	return cmd.run(ctx, e, pos)
}

// parseInterleaved parses flags wherever they stand among the positional
// arguments ("runs get <id> -o json"), which flag.Parse stops at.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func usage(w io.Writer, top *flag.FlagSet, cmds []command) {
	_, _ = fmt.Fprintf(w, "usage: rsctl [global flags] <command> [flags] [arguments]\n\ncommands:\n")
	tw := newTableWriter(w)
	for _, c := range cmds {
		tw.row("  "+c.path+" "+c.args, c.summary)
	}
	_ = tw.flush()
	_, _ = fmt.Fprintf(w, "\nglobal flags (also accepted after the command):\n")
	top.PrintDefaults()
	_, _ = fmt.Fprintf(w, "\nexit codes: 0 ok, 1 error, 2 usage or invalid argument, 3 not found, 4 permission denied or unauthenticated,\n"+
		"5 conflict or failed precondition, 6 unavailable (retry), 7 the run or repair waited for failed, 8 discrepancies found (--fail-on-discrepancies)\n")
}

// describe is err for people: the gRPC code, the message and the details
// (a VersionConflict, field violations, an error reason).
func describe(err error) string {
	st, ok := status.FromError(err)
	if !ok || st.Code() == codes.OK {
		return err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", st.Code(), st.Message())
	for _, d := range st.Details() {
		m, ok := d.(proto.Message)
		if !ok {
			continue
		}
		j, jerr := protojson.Marshal(m)
		if jerr != nil {
			continue
		}
		fmt.Fprintf(&b, "\n  %s %s", m.ProtoReflect().Descriptor().FullName(), j)
	}
	return b.String()
}

// requestID is the request id to send: the one given, or a fresh one
// (printed, so that the same call can be retried with it).
func requestID(e *env, given, what string) string {
	if given != "" {
		return given
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := "rsctl-" + what + "-" + hex.EncodeToString(b[:])
	e.notef("request id %s (repeat the command with --request-id %s to retry it safely)", id, id)
	return id
}

// enumFlag parses the name of an enum value given without its prefix,
// case-insensitively ("content" -> RECONCILE_DEPTH_CONTENT).
func enumFlag(flagName, value, prefix string, values map[string]int32) (int32, error) {
	if value == "" {
		return 0, nil
	}
	if v, ok := values[prefix+strings.ToUpper(strings.ReplaceAll(value, "-", "_"))]; ok {
		return v, nil
	}
	if v, ok := values[strings.ToUpper(value)]; ok {
		return v, nil
	}
	var names []string
	for n, v := range values {
		if v != 0 {
			names = append(names, strings.ToLower(strings.TrimPrefix(n, prefix)))
		}
	}
	sort.Strings(names)
	return 0, usagef("--%s %q: want one of %s", flagName, value, strings.Join(names, ", "))
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// int64List is a repeatable integer flag.
type int64List []int64

func (l *int64List) String() string { return fmt.Sprint([]int64(*l)) }
func (l *int64List) Set(v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return fmt.Errorf("%q is not an integer", v)
	}
	*l = append(*l, n)
	return nil
}
