// Package chdb is a clickhouse-go driver.Conn over chdb (current ClickHouse,
// in-process, from PyPI): a Python subprocess,
// deploy/local/chdb/chdb_server.py, holds one chdb session and answers one
// JSON line per statement. It lets the tests that run on the local
// ClickHouse 18.16 server run unchanged on ClickHouse 26.x
// (RS_CH_ENGINE=chdb; pkg/testkit/infratest's CreateClickHouseDatabase opens it).
//
// Fidelity to clickhouse-go's native protocol, where it matters for proving
// statements:
//   - `?` arguments are bound client-side into literals exactly as
//     clickhouse-go v2.51 binds them (bind.go), with the server timezone UTC.
//   - A batch's columns are clickhouse-go's own column types, built from the
//     table's column types, so Append accepts and rejects exactly the Go
//     values the native driver does.
//   - Scan converts to the destination type. A connection from Open is
//     lenient (an Int64 scans into *int, which the native driver refuses); one
//     from OpenStrict is strict: it also rejects every destination
//     clickhouse-go's native column of that type rejects, so a result type
//     that changed between engines fails as it would on a 26.x server.
//     RS_CHDB_STRICT_SCAN=1 or 0 forces either.
//
// Limits: positional `?` only (no named or $N arguments), strings must be
// UTF-8, settings passed with clickhouse.Context are ignored, and a result
// set is read whole before Query returns.
package chdb

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	std_driver "database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/column"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/ClickHouse/clickhouse-go/v2/lib/proto"
	"github.com/shopspring/decimal"
)

var _ driver.Conn = (*chdbConn)(nil)

// chdbServerTZ is the timezone of the chdb process (TZ), like the local
// server's <timezone>UTC</timezone>.
var chdbServerTZ = time.UTC

// ErrUnavailable is wrapped by Open's errors when chdb is not installed or
// its process does not start or dies at once (pkg/testkit/infratest reports it as
// its ErrUnreachable: a failure under CI, a skip otherwise).
var ErrUnavailable = errors.New("unavailable")

// Python is the Python interpreter that runs chdb: RS_CHDB_PYTHON, or the
// virtualenv deploy/local/chdb.sh install creates in $RS_CACHE.
func Python() string {
	if p := os.Getenv("RS_CHDB_PYTHON"); p != "" {
		return p
	}
	cache := os.Getenv("RS_CACHE")
	if cache == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			home, _ := os.UserHomeDir()
			base = filepath.Join(home, ".cache")
		}
		cache = filepath.Join(base, "resultsync")
	}
	return filepath.Join(cache, "chdb-venv", "bin", "python")
}

// RepoRoot is $RS_ROOT or the nearest directory above the working directory
// that holds go.mod: where tests find deploy/local's scripts (chdb_server.py
// among them).
func RepoRoot() (string, error) {
	if d := os.Getenv("RS_ROOT"); d != "" {
		return d, nil
	}
	dir, ok := moduleRoot()
	if !ok {
		return "", errors.New("no go.mod above the working directory (set RS_ROOT)")
	}
	return dir, nil
}

// StateDir is the project-local state directory ($RS_STATE or <the nearest
// directory above the working directory that holds go.mod>/.local, else
// .local); the chdb process's stderr goes to its logs/chdb.log.
func StateDir() string {
	if d := os.Getenv("RS_STATE"); d != "" {
		return d
	}
	if dir, ok := moduleRoot(); ok {
		return filepath.Join(dir, ".local")
	}
	return ".local"
}

// moduleRoot is the nearest directory above the working directory that
// holds go.mod.
func moduleRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// Open starts a chdb subprocess with a fresh session in a temporary
// directory, creates database (if missing) and makes it the session's
// current database, and returns a connection over it that scans leniently
// (see the package doc). Close ends the process and removes the directory. A
// missing or broken chdb installation wraps ErrUnavailable; the process's
// stderr is appended to StateDir()/logs/chdb.log.
func Open(ctx context.Context, database string) (driver.Conn, error) {
	return open(ctx, database, false)
}

// OpenStrict is Open with strict scanning (see the package doc), as
// pkg/testkit/infratest's CreateClickHouseDatabase opens each database.
func OpenStrict(ctx context.Context, database string) (driver.Conn, error) {
	return open(ctx, database, true)
}

// open returns an interface holding a non-nil *chdbConn or a nil interface
// (not a typed nil).
func open(ctx context.Context, database string, strict bool) (driver.Conn, error) {
	c, err := openChDB(ctx, database, strict)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// openChDB is Open with the scanning chosen by strict; RS_CHDB_STRICT_SCAN
// overrides it.
func openChDB(ctx context.Context, database string, strict bool) (*chdbConn, error) {
	switch os.Getenv("RS_CHDB_STRICT_SCAN") {
	case "1":
		strict = true
	case "0":
		strict = false
	}
	python := Python()
	if _, err := os.Stat(python); err != nil {
		return nil, fmt.Errorf("chdb: %w: no Python at %s (run deploy/local/chdb.sh install): %w", ErrUnavailable, python, err)
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, fmt.Errorf("chdb: locating chdb_server.py: %w", err)
	}
	script := filepath.Join(root, "deploy", "local", "chdb", "chdb_server.py")
	if _, err := os.Stat(script); err != nil {
		return nil, fmt.Errorf("chdb: %w", err)
	}
	dir, err := os.MkdirTemp("", "rs-chdb-")
	if err != nil {
		return nil, fmt.Errorf("chdb: session directory: %w", err)
	}
	c := &chdbConn{
		dir:     dir,
		sem:     make(chan struct{}, 1),
		pending: map[uint64]chan *chdbReply{},
		done:    make(chan struct{}),
		tail:    &tailBuffer{max: 8 << 10},
		strict:  strict,
	}
	// Not CommandContext: the process lives as long as the connection, not ctx.
	c.cmd = exec.Command(python, script, dir) //nolint:gosec // test helper, fixed program
	c.cmd.Env = append(os.Environ(), "TZ=UTC")
	var stderr io.Writer = c.tail
	if err := os.MkdirAll(filepath.Join(StateDir(), "logs"), 0o755); err == nil {
		if f, err := os.OpenFile(filepath.Join(StateDir(), "logs", "chdb.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			c.logFile = f
			stderr = io.MultiWriter(f, c.tail)
		}
	}
	c.cmd.Stderr = stderr
	stdin, err := c.cmd.StdinPipe()
	if err != nil {
		c.cleanup()
		return nil, fmt.Errorf("chdb: %w", err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		c.cleanup()
		return nil, fmt.Errorf("chdb: %w", err)
	}
	c.stdin = stdin
	if err := c.cmd.Start(); err != nil {
		c.cleanup()
		return nil, fmt.Errorf("chdb: %w: starting %s: %w", ErrUnavailable, python, err)
	}
	go c.read(stdout)

	ident := quoteIdent(database)
	if _, err := c.run(ctx, "CREATE DATABASE IF NOT EXISTS "+ident); err != nil {
		_ = c.Close()
		if errors.Is(err, errChDBExited) {
			return nil, fmt.Errorf("chdb: %w: %w", ErrUnavailable, err)
		}
		return nil, fmt.Errorf("chdb: creating database %s: %w", database, err)
	}
	if _, err := c.run(ctx, "USE "+ident); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("chdb: using database %s: %w", database, err)
	}
	return c, nil
}

var errChDBExited = errors.New("chdb subprocess exited")

type chdbConn struct {
	dir     string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	logFile *os.File
	tail    *tailBuffer
	strict  bool // Scan rejects what the native driver rejects

	sem chan struct{} // one request at a time (a mutex that honours ctx)

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]chan *chdbReply
	closed  bool
	exitErr error         // set before done is closed
	done    chan struct{} // closed when the process's stdout ends
	version *driver.ServerVersion

	closeOnce sync.Once
	closeErr  error
}

type chdbRequest struct {
	ID  uint64 `json:"id"`
	SQL string `json:"sql"`
}

type chdbColumn struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

type chdbReply struct {
	ID    uint64       `json:"id"`
	OK    bool         `json:"ok"`
	Error string       `json:"error"`
	Meta  []chdbColumn `json:"meta"`
	Data  [][]any      `json:"data"` // json.Number for numbers
}

// read dispatches replies by id until the process's stdout ends; a reply
// nobody waits for (its caller's context ended) is dropped.
func (c *chdbConn) read(stdout io.Reader) {
	r := bufio.NewReaderSize(stdout, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			dec := json.NewDecoder(bytes.NewReader(line))
			dec.UseNumber()
			var rep chdbReply
			if derr := dec.Decode(&rep); derr == nil {
				c.mu.Lock()
				ch := c.pending[rep.ID]
				delete(c.pending, rep.ID)
				c.mu.Unlock()
				if ch != nil {
					ch <- &rep
				}
			}
		}
		if err != nil {
			break
		}
	}
	werr := c.cmd.Wait()
	c.mu.Lock()
	c.exitErr = fmt.Errorf("%w (%w); stderr: %s", errChDBExited, werr, strings.TrimSpace(c.tail.String()))
	c.mu.Unlock()
	close(c.done)
}

func (c *chdbConn) exitError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exitErr
}

// run sends one statement and waits for its reply, ctx's end or the
// process's exit.
func (c *chdbConn) run(ctx context.Context, query string) (*chdbReply, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.done:
		return nil, c.exitError()
	}
	defer func() { <-c.sem }()

	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errors.New("chdb: connection is closed")
	}
	c.nextID++
	id := c.nextID
	ch := make(chan *chdbReply, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}

	line, err := json.Marshal(chdbRequest{ID: id, SQL: query})
	if err != nil {
		forget()
		return nil, fmt.Errorf("chdb: encoding request: %w", err)
	}
	if _, err := c.stdin.Write(append(line, '\n')); err != nil {
		forget()
		select {
		case <-c.done:
			return nil, c.exitError()
		default:
			return nil, fmt.Errorf("chdb: sending request: %w", err)
		}
	}
	var rep *chdbReply
	select {
	case rep = <-ch:
	case <-ctx.Done():
		forget()
		return nil, ctx.Err()
	case <-c.done:
		select {
		case rep = <-ch:
		default:
			return nil, c.exitError()
		}
	}
	if !rep.OK {
		return nil, chdbException(rep.Error)
	}
	return rep, nil
}

var chdbExceptionRe = regexp.MustCompile(`(?s)^Code: (\d+)\. (DB::Exception): (.*?)(?: \(([A-Z0-9_]+)\))?(?: \(version [^)]*\))?\s*$`)

// chdbException turns chdb's error text into the *proto.Exception
// (clickhouse.Exception) the native driver returns, so errors.As works.
func chdbException(msg string) error {
	m := chdbExceptionRe.FindStringSubmatch(msg)
	if m == nil {
		return errors.New("chdb: " + msg)
	}
	code, _ := strconv.ParseInt(m[1], 10, 32)
	return &proto.Exception{Code: int32(code), Name: m[2], CodeName: m[4], Message: m[3]}
}

func (c *chdbConn) Exec(ctx context.Context, query string, args ...any) error {
	q, err := chdbBind(query, args...)
	if err != nil {
		return err
	}
	_, err = c.run(ctx, q)
	return err
}

func (c *chdbConn) Query(ctx context.Context, query string, args ...any) (driver.Rows, error) {
	q, err := chdbBind(query, args...)
	if err != nil {
		return nil, err
	}
	rep, err := c.run(ctx, q)
	if err != nil {
		return nil, err
	}
	return &chdbRows{cols: rep.Meta, data: rep.Data, strict: c.strict}, nil
}

func (c *chdbConn) QueryRow(ctx context.Context, query string, args ...any) driver.Row {
	rows, err := c.Query(ctx, query, args...)
	if err != nil {
		return &chdbRow{err: err}
	}
	return &chdbRow{rows: rows.(*chdbRows)}
}

func (c *chdbConn) Select(context.Context, any, string, ...any) error {
	return errors.New("chdb: Select is not supported (use Query and Scan)")
}

func (c *chdbConn) QueryFormat(context.Context, string, string, ...any) (io.ReadCloser, error) {
	return nil, clickhouse.ErrFormatNativeUnsupported
}

func (c *chdbConn) InsertFormat(context.Context, string, string, io.Reader) error {
	return clickhouse.ErrFormatNativeUnsupported
}

func (c *chdbConn) AsyncInsert(context.Context, string, bool, ...any) error {
	return errors.New("chdb: AsyncInsert is not supported")
}

func (c *chdbConn) Ping(ctx context.Context) error {
	_, err := c.run(ctx, "SELECT 1")
	return err
}

func (c *chdbConn) Contributors() []string { return nil }

func (c *chdbConn) Stats() driver.Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return driver.Stats{MaxOpenConns: 1, MaxIdleConns: 1}
	}
	return driver.Stats{MaxOpenConns: 1, MaxIdleConns: 1, Open: 1, Idle: 1 - len(c.sem)}
}

// ServerVersion reports the chdb engine's ClickHouse version (SELECT version()).
func (c *chdbConn) ServerVersion() (*driver.ServerVersion, error) {
	c.mu.Lock()
	v := c.version
	c.mu.Unlock()
	if v != nil {
		return v, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var s string
	if err := c.QueryRow(ctx, "SELECT version()").Scan(&s); err != nil {
		return nil, err
	}
	v = &driver.ServerVersion{Name: "ClickHouse", DisplayName: "chdb " + s, Version: proto.ParseVersion(s), Timezone: chdbServerTZ}
	c.mu.Lock()
	c.version = v
	c.mu.Unlock()
	return v, nil
}

// Close ends the subprocess (stdin closed, then killed after 10s) and removes
// its session directory. It is idempotent.
func (c *chdbConn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		_ = c.stdin.Close()
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.done
		}
		c.closeErr = c.cleanup()
	})
	return c.closeErr
}

func (c *chdbConn) cleanup() error {
	if c.logFile != nil {
		_ = c.logFile.Close()
	}
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("chdb: removing %s: %w", c.dir, err)
	}
	return nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

func quoteIdent(s string) string {
	return "`" + strings.NewReplacer(`\`, `\\`, "`", "\\`").Replace(s) + "`"
}

// ---------------------------------------------------------------- binding

// chdbBind binds positional `?` arguments into the query as SQL literals the
// way clickhouse-go v2.51 does client-side (bind.go: bindPositional and
// format): not inside quoted identifiers, string literals or comments; `\?`
// is a literal `?`; a driver.Valuer is bound by its Value (so a
// decimal.Decimal becomes a quoted string, as in clickhouse-go).
func chdbBind(query string, args ...any) (string, error) {
	if len(args) == 0 {
		return query, nil
	}
	for _, a := range args {
		switch a.(type) {
		case driver.NamedValue, driver.NamedDateValue:
			return "", errors.New("chdb: named arguments are not supported (use ?)")
		}
	}
	var (
		last    = -1
		argIdx  = 0
		unbound = 0
		buf     = make([]byte, 0, len(query))
		st      bindState
	)
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			if st.inIdentifierOrComment() {
				continue
			}
			if i > 0 && query[i-1] == '\\' {
				buf = append(buf, query[last+1:i-1]...)
				buf = append(buf, '?')
				last = i
				continue
			}
			if st.inSingle {
				continue
			}
			buf = append(buf, query[last+1:i]...)
			if argIdx < len(args) {
				v := args[argIdx]
				if fn, ok := v.(std_driver.Valuer); ok {
					var err error
					if v, err = fn.Value(); err != nil {
						return "", err
					}
				}
				lit, err := chdbLiteral(v, false)
				if err != nil {
					return "", err
				}
				buf = append(buf, lit...)
				argIdx++
			} else {
				unbound++
			}
			last = i
			continue
		}
		i = st.update(query, i)
	}
	if last < 0 {
		return query, nil
	}
	buf = append(buf, query[last+1:]...)
	if unbound > 0 {
		return "", fmt.Errorf("have no arg for param ? at last %d positions", unbound)
	}
	return string(buf), nil
}

// bindState is clickhouse-go's bindQuoteState: where the scanner is, quoted
// identifier, string literal, line comment or (nested) block comment.
type bindState struct {
	inBacktick, inSingle, inDouble, inLineComment bool
	blockComment                                  int
}

func (s *bindState) inIdentifierOrComment() bool {
	return s.inBacktick || s.inDouble || s.inLineComment || s.blockComment > 0
}

// update consumes query[pos] and returns the index of the last byte consumed.
func (s *bindState) update(q string, pos int) int {
	next := func(b byte) bool { return pos+1 < len(q) && q[pos+1] == b }
	closeQuote := func(in *bool, delim byte) int {
		if q[pos] == delim && !isEscapedAt(q, pos) {
			if next(delim) {
				return pos + 1
			}
			*in = false
		}
		return pos
	}
	switch {
	case s.inLineComment:
		if q[pos] == '\n' {
			s.inLineComment = false
		}
	case s.blockComment > 0:
		switch {
		case q[pos] == '/' && next('*'):
			s.blockComment++
			return pos + 1
		case q[pos] == '*' && next('/'):
			s.blockComment--
			return pos + 1
		}
	case s.inBacktick:
		return closeQuote(&s.inBacktick, '`')
	case s.inSingle:
		return closeQuote(&s.inSingle, '\'')
	case s.inDouble:
		return closeQuote(&s.inDouble, '"')
	default:
		if isEscapedAt(q, pos) {
			return pos
		}
		switch {
		case q[pos] == '`':
			s.inBacktick = true
		case q[pos] == '\'':
			s.inSingle = true
		case q[pos] == '"':
			s.inDouble = true
		case q[pos] == '#':
			s.inLineComment = true
		case q[pos] == '-' && next('-'):
			s.inLineComment = true
			return pos + 1
		case q[pos] == '/' && next('*'):
			s.blockComment++
			return pos + 1
		}
	}
	return pos
}

func isEscapedAt(q string, pos int) bool {
	n := 0
	for i := pos - 1; i >= 0 && q[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

var chdbQuoteReplacer = strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\x00", `\0`)

func chdbQuote(s string) string { return "'" + chdbQuoteReplacer.Replace(s) + "'" }

// chdbLiteral is clickhouse-go's format(tz, Seconds, v) in SQL mode for the
// types this project binds; wide integers are refused rather than mis-bound.
func chdbLiteral(v any, nested bool) (string, error) {
	switch v := v.(type) {
	case nil:
		return "NULL", nil
	case string:
		return chdbQuote(v), nil
	case []byte:
		if v == nil {
			return "NULL", nil
		}
		if !nested {
			return chdbQuote(string(v)), nil
		}
		parts := make([]string, len(v))
		for i, b := range v {
			parts[i] = strconv.FormatUint(uint64(b), 10)
		}
		return "[" + strings.Join(parts, ", ") + "]", nil
	case time.Time:
		return chdbTimeLiteral(v)
	case *time.Time:
		if v == nil {
			return "NULL", nil
		}
		return chdbTimeLiteral(*v)
	case bool:
		if v {
			return "1", nil
		}
		return "0", nil
	case float32:
		return chdbFloatLiteral(float64(v), "Float32"), nil
	case float64:
		return chdbFloatLiteral(v, "Float64"), nil
	case clickhouse.GroupSet:
		s, err := chdbJoin(v.Value)
		return "(" + s + ")", err
	case clickhouse.ArraySet:
		s, err := chdbJoin(v)
		return "[" + s + "]", err
	case big.Int, *big.Int:
		return "", fmt.Errorf("chdb: binding %T is not supported", v)
	case time.Duration, *time.Duration:
		return "", fmt.Errorf("chdb: binding %T is not supported", v)
	case fmt.Stringer:
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
			return "NULL", nil
		}
		return chdbQuote(v.String()), nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String:
		return chdbQuote(rv.String()), nil
	case reflect.Slice, reflect.Array:
		items := make([]any, rv.Len())
		for i := range items {
			items[i] = rv.Index(i).Interface()
		}
		s, err := chdbJoin(items)
		return "[" + s + "]", err
	case reflect.Map:
		var pairs []string
		for _, k := range rv.MapKeys() {
			ks, err := chdbLiteral(k.Interface(), true)
			if err != nil {
				return "", err
			}
			vs, err := chdbLiteral(rv.MapIndex(k).Interface(), true)
			if err != nil {
				return "", err
			}
			pairs = append(pairs, ks+", "+vs)
		}
		return "map(" + strings.Join(pairs, ", ") + ")", nil
	case reflect.Float32:
		return chdbFloatLiteral(rv.Float(), "Float32"), nil
	case reflect.Float64:
		return chdbFloatLiteral(rv.Float(), "Float64"), nil
	case reflect.Pointer:
		if rv.IsNil() {
			return "NULL", nil
		}
		return chdbLiteral(rv.Elem().Interface(), nested)
	}
	return fmt.Sprint(v), nil
}

func chdbJoin(items []any) (string, error) {
	parts := make([]string, len(items))
	for i, it := range items {
		s, err := chdbLiteral(it, true)
		if err != nil {
			return "", err
		}
		parts[i] = s
	}
	return strings.Join(parts, ", "), nil
}

func chdbFloatLiteral(f float64, typ string) string {
	switch {
	case math.IsNaN(f):
		return fmt.Sprintf("cast('nan', '%s')", typ)
	case math.IsInf(f, 1):
		return fmt.Sprintf("cast('inf', '%s')", typ)
	case math.IsInf(f, -1):
		return fmt.Sprintf("cast('-inf', '%s')", typ)
	}
	bits := 64
	if typ == "Float32" {
		bits = 32
	}
	return fmt.Sprintf("cast(%s, '%s')", strconv.FormatFloat(f, 'g', -1, bits), typ)
}

// chdbTimeLiteral is clickhouse-go's formatTime at second precision: a Local
// time by its epoch seconds, a time in the server timezone as wall time, any
// other zone with the zone named.
func chdbTimeLiteral(t time.Time) (string, error) {
	switch loc := t.Location().String(); loc {
	case "Local", "":
		if t.Unix() == 0 {
			return "toDateTime(0)", nil
		}
		return fmt.Sprintf("toDateTime('%d')", t.Unix()), nil
	case chdbServerTZ.String():
		return fmt.Sprintf("toDateTime('%s')", t.Format(time.DateTime)), nil
	default:
		if chdbQuoteReplacer.Replace(loc) != loc {
			return "", fmt.Errorf("%w: %q", clickhouse.ErrInvalidTimezone, loc)
		}
		return fmt.Sprintf("toDateTime('%s', '%s')", t.Format(time.DateTime), loc), nil
	}
}

// ---------------------------------------------------------------- rows

type chdbRows struct {
	cols   []chdbColumn
	data   [][]any
	pos    int // 1-based index of the current row
	closed bool
	strict bool
	checks map[chdbCheckKey]error
}

type chdbCheckKey struct {
	col int
	typ reflect.Type
}

func (r *chdbRows) Next() bool {
	if r.closed || r.pos >= len(r.data) {
		return false
	}
	r.pos++
	return true
}

func (r *chdbRows) Scan(dest ...any) error {
	if r.pos == 0 || r.pos > len(r.data) {
		return errors.New("chdb: Scan called without a current row (call Next first)")
	}
	if len(dest) != len(r.cols) {
		return fmt.Errorf("clickhouse [Scan]: expected %d destination arguments in Scan, not %d", len(r.cols), len(dest))
	}
	row := r.data[r.pos-1]
	for i, d := range dest {
		col := r.cols[i]
		rv := reflect.ValueOf(d)
		if rv.Kind() != reflect.Pointer || rv.IsNil() {
			return fmt.Errorf("chdb: scanning column %s: destination %T is not a non-nil pointer", col.Name, d)
		}
		if r.strict {
			if err := r.nativeCheck(i, rv.Type()); err != nil {
				return err
			}
		}
		var raw any
		if i < len(row) {
			raw = row[i]
		}
		v, err := chdbGoValue(col.Type, raw)
		if err != nil {
			return fmt.Errorf("chdb: reading column %s (%s): %w", col.Name, col.Type, err)
		}
		if err := chdbAssign(rv.Elem(), v); err != nil {
			return fmt.Errorf("chdb: scanning column %s (%s) into %T: %w", col.Name, col.Type, d, err)
		}
	}
	return nil
}

// nativeCheck reports the error clickhouse-go's native column of this type
// gives when scanned into a destination of type dest (strict mode).
func (r *chdbRows) nativeCheck(i int, dest reflect.Type) error {
	if dest.Elem().Kind() == reflect.Interface {
		return nil
	}
	key := chdbCheckKey{i, dest}
	if err, ok := r.checks[key]; ok {
		return err
	}
	var err error
	col, cerr := column.Type(r.cols[i].Type).Column(r.cols[i].Name, &column.ServerContext{Timezone: chdbServerTZ})
	if cerr == nil && col.AppendRow(nil) == nil {
		if serr := col.ScanRow(reflect.New(dest.Elem()).Interface(), 0); serr != nil {
			err = fmt.Errorf("chdb (strict scan): clickhouse-go rejects this scan: column %s (%s): %w", r.cols[i].Name, r.cols[i].Type, serr)
		}
	}
	if r.checks == nil {
		r.checks = map[chdbCheckKey]error{}
	}
	r.checks[key] = err
	return err
}

func (r *chdbRows) ScanStruct(any) error {
	return errors.New("chdb: ScanStruct is not supported (use Scan)")
}

func (r *chdbRows) ColumnTypes() []driver.ColumnType {
	out := make([]driver.ColumnType, len(r.cols))
	for i, c := range r.cols {
		out[i] = chdbColumnType{c}
	}
	return out
}

func (r *chdbRows) Totals(...any) error { return errors.New("chdb: Totals is not supported") }

func (r *chdbRows) Columns() []string {
	names := make([]string, len(r.cols))
	for i, c := range r.cols {
		names[i] = c.Name
	}
	return names
}

func (r *chdbRows) Close() error { r.closed = true; return nil }
func (r *chdbRows) Err() error   { return nil }
func (r *chdbRows) HasData() bool {
	return len(r.data) > 0
}

type chdbColumnType struct{ c chdbColumn }

func (t chdbColumnType) Name() string             { return t.c.Name }
func (t chdbColumnType) DatabaseTypeName() string { return t.c.Type }
func (t chdbColumnType) Nullable() bool           { return strings.HasPrefix(t.c.Type, "Nullable(") }
func (t chdbColumnType) ScanType() reflect.Type {
	if col, err := column.Type(t.c.Type).Column(t.c.Name, &column.ServerContext{Timezone: chdbServerTZ}); err == nil {
		return col.ScanType()
	}
	return reflect.TypeOf((*any)(nil)).Elem()
}

type chdbRow struct {
	err  error
	rows *chdbRows
}

func (r *chdbRow) Err() error { return r.err }

func (r *chdbRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		return sql.ErrNoRows
	}
	return r.rows.Scan(dest...)
}

func (r *chdbRow) ScanStruct(any) error {
	return errors.New("chdb: ScanStruct is not supported (use Scan)")
}

// typeArgs returns what is inside the outer parentheses of a type such as
// Nullable(String), or "".
func typeArgs(typ string) string {
	i := strings.IndexByte(typ, '(')
	if i < 0 || !strings.HasSuffix(typ, ")") {
		return ""
	}
	return typ[i+1 : len(typ)-1]
}

var chdbTZRe = regexp.MustCompile(`'([^']*)'`)

// chdbGoValue converts a JSONCompact value of ClickHouse type typ into the Go
// value clickhouse-go's native column gives (int64 for Int64, uint8 for
// UInt8, decimal.Decimal, time.Time, string, bool, []any for arrays).
func chdbGoValue(typ string, v any) (any, error) {
	base := typ
	if i := strings.IndexByte(typ, '('); i >= 0 {
		base = typ[:i]
	}
	if v == nil {
		if base == "Float32" || base == "Float64" {
			return math.NaN(), nil // JSON has no NaN or infinities: ClickHouse writes null
		}
		return nil, nil
	}
	text := func() (string, error) {
		switch v := v.(type) {
		case json.Number:
			return v.String(), nil
		case string:
			return v, nil
		}
		return "", fmt.Errorf("unexpected JSON value %v (%T)", v, v)
	}
	switch base {
	case "Nullable", "LowCardinality", "SimpleAggregateFunction":
		inner := typeArgs(typ)
		if base == "SimpleAggregateFunction" {
			if i := strings.IndexByte(inner, ','); i >= 0 {
				inner = strings.TrimSpace(inner[i+1:])
			}
		}
		return chdbGoValue(inner, v)
	case "Array":
		list, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("unexpected JSON value %v (%T) for an array", v, v)
		}
		out := make([]any, len(list))
		for i, e := range list {
			ev, err := chdbGoValue(typeArgs(typ), e)
			if err != nil {
				return nil, err
			}
			out[i] = ev
		}
		return out, nil
	case "Int8", "Int16", "Int32", "Int64":
		s, err := text()
		if err != nil {
			return nil, err
		}
		bits, _ := strconv.Atoi(base[3:])
		n, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			return nil, err
		}
		switch bits {
		case 8:
			return int8(n), nil
		case 16:
			return int16(n), nil
		case 32:
			return int32(n), nil
		}
		return n, nil
	case "UInt8", "UInt16", "UInt32", "UInt64":
		if b, ok := v.(bool); ok { // defensive: a bool printed for a UInt8
			if b {
				return uint8(1), nil
			}
			return uint8(0), nil
		}
		s, err := text()
		if err != nil {
			return nil, err
		}
		bits, _ := strconv.Atoi(base[4:])
		n, err := strconv.ParseUint(s, 10, bits)
		if err != nil {
			return nil, err
		}
		switch bits {
		case 8:
			return uint8(n), nil
		case 16:
			return uint16(n), nil
		case 32:
			return uint32(n), nil
		}
		return n, nil
	case "Int128", "Int256", "UInt128", "UInt256":
		s, err := text()
		if err != nil {
			return nil, err
		}
		n, ok := new(big.Int).SetString(s, 10)
		if !ok {
			return nil, fmt.Errorf("invalid integer %q", s)
		}
		return n, nil
	case "Float32", "Float64":
		s, err := text()
		if err != nil {
			return nil, err
		}
		bits := 64
		if base == "Float32" {
			bits = 32
		}
		f, err := strconv.ParseFloat(s, bits)
		if err != nil {
			return nil, err
		}
		if bits == 32 {
			return float32(f), nil
		}
		return f, nil
	case "Decimal", "Decimal32", "Decimal64", "Decimal128", "Decimal256":
		s, err := text()
		if err != nil {
			return nil, err
		}
		return decimal.NewFromString(s)
	case "Bool":
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("unexpected JSON value %v (%T) for a Bool", v, v)
		}
		return b, nil
	case "Date", "Date32":
		s, err := text()
		if err != nil {
			return nil, err
		}
		return time.ParseInLocation(time.DateOnly, s, time.UTC)
	case "DateTime", "DateTime64":
		s, err := text()
		if err != nil {
			return nil, err
		}
		loc := chdbServerTZ
		if m := chdbTZRe.FindStringSubmatch(typ); m != nil {
			if loc, err = time.LoadLocation(m[1]); err != nil {
				return nil, err
			}
		}
		// Parsing accepts a fractional second (DateTime64) even without one in the layout.
		return time.ParseInLocation(time.DateTime, s, loc)
	}
	return v, nil // String, FixedString, Enum, UUID, ...: as JSON gave it
}

var (
	chdbTimeType    = reflect.TypeOf(time.Time{})
	chdbDecimalType = reflect.TypeOf(decimal.Decimal{})
	chdbScannerType = reflect.TypeOf((*sql.Scanner)(nil)).Elem()
)

// chdbAssign stores v (from chdbGoValue) into dst, a settable value.
func chdbAssign(dst reflect.Value, v any) error {
	t := dst.Type()
	if t.Kind() == reflect.Interface && t.NumMethod() == 0 {
		if v == nil {
			dst.SetZero()
		} else {
			dst.Set(reflect.ValueOf(v))
		}
		return nil
	}
	if t.Kind() == reflect.Pointer {
		if v == nil {
			dst.SetZero()
			return nil
		}
		p := reflect.New(t.Elem())
		if err := chdbAssign(p.Elem(), v); err != nil {
			return err
		}
		dst.Set(p)
		return nil
	}
	if v == nil {
		return errors.New("NULL needs a destination that can hold nil (**T, *any or a sql.Scanner)")
	}
	rv := reflect.ValueOf(v)
	switch t {
	case chdbTimeType:
		if tv, ok := v.(time.Time); ok {
			dst.Set(reflect.ValueOf(tv))
			return nil
		}
	case chdbDecimalType:
		var d decimal.Decimal
		switch {
		case rv.Type() == chdbDecimalType:
			d = v.(decimal.Decimal)
		case rv.CanInt():
			d = decimal.NewFromInt(rv.Int())
		case rv.CanUint():
			d = decimal.NewFromBigInt(new(big.Int).SetUint64(rv.Uint()), 0)
		default:
			if b, ok := v.(*big.Int); ok {
				d = decimal.NewFromBigInt(b, 0)
				break
			}
			return fmt.Errorf("converting %T to decimal.Decimal is unsupported", v)
		}
		dst.Set(reflect.ValueOf(d))
		return nil
	}
	if reflect.PointerTo(t).Implements(chdbScannerType) {
		return dst.Addr().Interface().(sql.Scanner).Scan(v)
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		var n int64
		switch {
		case rv.CanInt():
			n = rv.Int()
		case rv.CanUint() && rv.Uint() <= math.MaxInt64:
			n = int64(rv.Uint())
		default:
			return fmt.Errorf("converting %T %v to %s is unsupported", v, v, t)
		}
		if dst.OverflowInt(n) {
			return fmt.Errorf("%v overflows %s", v, t)
		}
		dst.SetInt(n)
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		var n uint64
		switch {
		case rv.CanUint():
			n = rv.Uint()
		case rv.CanInt() && rv.Int() >= 0:
			n = uint64(rv.Int())
		case rv.Kind() == reflect.Bool:
			if rv.Bool() {
				n = 1
			}
		default:
			return fmt.Errorf("converting %T %v to %s is unsupported", v, v, t)
		}
		if dst.OverflowUint(n) {
			return fmt.Errorf("%v overflows %s", v, t)
		}
		dst.SetUint(n)
		return nil
	case reflect.Float32, reflect.Float64:
		switch {
		case rv.CanFloat():
			dst.SetFloat(rv.Float())
		case rv.CanInt():
			dst.SetFloat(float64(rv.Int()))
		case rv.CanUint():
			dst.SetFloat(float64(rv.Uint()))
		default:
			return fmt.Errorf("converting %T to %s is unsupported", v, t)
		}
		return nil
	case reflect.String:
		if rv.Kind() == reflect.String {
			dst.SetString(rv.String())
			return nil
		}
	case reflect.Bool:
		switch {
		case rv.Kind() == reflect.Bool:
			dst.SetBool(rv.Bool())
			return nil
		case rv.CanUint() && rv.Uint() <= 1:
			dst.SetBool(rv.Uint() == 1)
			return nil
		}
	case reflect.Slice:
		if rv.Kind() == reflect.String && t.Elem().Kind() == reflect.Uint8 {
			dst.SetBytes([]byte(rv.String()))
			return nil
		}
		if list, ok := v.([]any); ok {
			out := reflect.MakeSlice(t, len(list), len(list))
			for i, e := range list {
				if err := chdbAssign(out.Index(i), e); err != nil {
					return fmt.Errorf("element %d: %w", i, err)
				}
			}
			dst.Set(out)
			return nil
		}
	}
	return fmt.Errorf("converting %T to %s is unsupported", v, t)
}

// ---------------------------------------------------------------- batch

// insertRe matches what PrepareBatch accepts: INSERT INTO table [(columns)]
// [SETTINGS name = value, ...] [VALUES]; the settings are sent with the insert.
var insertRe = regexp.MustCompile(`(?is)^\s*INSERT\s+INTO\s+([^\s(]+)\s*(?:\(([^)]*)\))?\s*(?:SETTINGS\s+(.+?))?\s*(?:VALUES\s*)?;?\s*$`)

func (c *chdbConn) PrepareBatch(ctx context.Context, query string, _ ...driver.PrepareBatchOption) (driver.Batch, error) {
	m := insertRe.FindStringSubmatch(query)
	if m == nil {
		return nil, fmt.Errorf("invalid INSERT query: %s", query)
	}
	table := m[1]
	rows, err := c.Query(ctx, "DESCRIBE TABLE "+table)
	if err != nil {
		return nil, err
	}
	type desc struct{ typ, kind string }
	descs := map[string]desc{}
	var order []string
	for rows.Next() {
		vals := make([]any, len(rows.Columns()))
		for i := range vals {
			vals[i] = new(string)
		}
		if err := rows.Scan(vals...); err != nil {
			return nil, err
		}
		name := *vals[0].(*string)
		descs[name] = desc{typ: *vals[1].(*string), kind: *vals[2].(*string)}
		order = append(order, name)
	}
	var names []string
	if strings.TrimSpace(m[2]) != "" {
		for _, n := range strings.Split(m[2], ",") {
			names = append(names, strings.ReplaceAll(strings.Trim(strings.TrimSpace(n), `"`), "`", ""))
		}
	} else {
		for _, n := range order {
			if k := descs[n].kind; k != "MATERIALIZED" && k != "ALIAS" && k != "EPHEMERAL" {
				names = append(names, n)
			}
		}
	}
	b := &chdbBatch{conn: c, ctx: ctx, table: table, names: names, settings: strings.TrimSpace(m[3])}
	sc := &column.ServerContext{Timezone: chdbServerTZ}
	for _, n := range names {
		d, ok := descs[n]
		if !ok {
			return nil, fmt.Errorf("chdb: no column %s in table %s", n, table)
		}
		col, err := column.Type(d.typ).Column(n, sc)
		if err != nil {
			return nil, fmt.Errorf("chdb: column %s: %w", n, err)
		}
		b.cols = append(b.cols, col)
	}
	return b, nil
}

// chdbBatch buffers rows in clickhouse-go's own column types and inserts
// them as one INSERT ... FORMAT JSONEachRow statement.
type chdbBatch struct {
	conn *chdbConn
	// ctx is the PrepareBatch context: driver.Batch's Send and Flush take none,
	// and clickhouse-go's batch keeps it the same way.
	ctx   context.Context //nolint:containedctx // see above
	table string
	names []string
	// settings is the statement's SETTINGS clause without the keyword ("" if none).
	settings string
	cols     []column.Interface
	sent     bool
	err      error
}

func (b *chdbBatch) Append(v ...any) error {
	if b.sent {
		return clickhouse.ErrBatchAlreadySent
	}
	if b.err != nil {
		return b.err
	}
	if len(v) != len(b.cols) {
		return &proto.BlockError{Op: "Append", Err: fmt.Errorf("clickhouse: expected %d arguments, got %d", len(b.cols), len(v))}
	}
	for i, val := range v {
		if err := b.cols[i].AppendRow(val); err != nil {
			berr := &proto.BlockError{Op: "AppendRow", Err: err, ColumnName: b.cols[i].Name()}
			b.err = fmt.Errorf("%w: %w", clickhouse.ErrBatchInvalid, berr)
			return berr
		}
	}
	return nil
}

func (b *chdbBatch) AppendStruct(any) error {
	return errors.New("chdb: AppendStruct is not supported (use Append)")
}

func (b *chdbBatch) Column(i int) driver.BatchColumn { return chdbBatchColumn{b: b, i: i} }

func (b *chdbBatch) Flush() error {
	if b.sent {
		return clickhouse.ErrBatchAlreadySent
	}
	if b.err != nil {
		return b.err
	}
	return b.insert()
}

func (b *chdbBatch) Send() error {
	if b.sent {
		return clickhouse.ErrBatchAlreadySent
	}
	if b.err != nil {
		return b.err
	}
	err := b.insert()
	b.sent = true
	return err
}

func (b *chdbBatch) Abort() error {
	if b.sent {
		return clickhouse.ErrBatchAlreadySent
	}
	b.sent = true
	return nil
}

func (b *chdbBatch) Close() error {
	b.sent = true
	return nil
}

func (b *chdbBatch) IsSent() bool { return b.sent }

func (b *chdbBatch) Rows() int {
	if len(b.cols) == 0 {
		return 0
	}
	return b.cols[0].Rows()
}

func (b *chdbBatch) Columns() []column.Interface {
	return append([]column.Interface(nil), b.cols...)
}

// insert sends the buffered rows, if any, and empties the buffer.
func (b *chdbBatch) insert() error {
	n := b.Rows()
	for _, col := range b.cols {
		if col.Rows() != n {
			return fmt.Errorf("chdb: column %s has %d rows, column %s has %d", col.Name(), col.Rows(), b.cols[0].Name(), n)
		}
	}
	if n == 0 {
		return nil
	}
	var sb strings.Builder
	sb.WriteString("INSERT INTO ")
	sb.WriteString(b.table)
	sb.WriteString(" (")
	keys := make([]string, len(b.cols))
	dateOnly := make([]bool, len(b.cols))
	for i, col := range b.cols {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(quoteIdent(b.names[i]))
		k, _ := json.Marshal(b.names[i])
		keys[i] = string(k)
		dateOnly[i] = innermostIsDate(string(col.Type()))
	}
	sb.WriteString(")")
	if b.settings != "" {
		sb.WriteString(" SETTINGS ")
		sb.WriteString(b.settings)
	}
	sb.WriteString(" FORMAT JSONEachRow\n")
	for r := 0; r < n; r++ {
		sb.WriteByte('{')
		for i, col := range b.cols {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(keys[i])
			sb.WriteByte(':')
			if err := writeJSONValue(&sb, col.Row(r, false), dateOnly[i]); err != nil {
				return fmt.Errorf("chdb: column %s row %d: %w", col.Name(), r, err)
			}
		}
		sb.WriteString("}\n")
	}
	if _, err := b.conn.run(b.ctx, sb.String()); err != nil {
		return err
	}
	for _, col := range b.cols {
		col.Reset()
	}
	return nil
}

type chdbBatchColumn struct {
	b *chdbBatch
	i int
}

func (c chdbBatchColumn) col() (column.Interface, error) {
	if c.b.sent {
		return nil, clickhouse.ErrBatchAlreadySent
	}
	if c.i < 0 || c.i >= len(c.b.cols) {
		return nil, fmt.Errorf("chdb: batch has no column %d", c.i)
	}
	return c.b.cols[c.i], nil
}

func (c chdbBatchColumn) Append(v any) error {
	col, err := c.col()
	if err != nil {
		return err
	}
	_, err = col.Append(v)
	return err
}

func (c chdbBatchColumn) AppendRow(v any) error {
	col, err := c.col()
	if err != nil {
		return err
	}
	return col.AppendRow(v)
}

// innermostIsDate: the type holds Date or Date32 values (under Nullable,
// LowCardinality or Array), which JSONEachRow wants as "YYYY-MM-DD".
func innermostIsDate(typ string) bool {
	for {
		switch {
		case strings.HasPrefix(typ, "Nullable("), strings.HasPrefix(typ, "LowCardinality("), strings.HasPrefix(typ, "Array("):
			typ = typeArgs(typ)
		default:
			return typ == "Date" || typ == "Date32"
		}
	}
}

// writeJSONValue writes a column value (as clickhouse-go's column.Row gives
// it) as a JSONEachRow value: exact decimals as JSON numbers, times as epoch
// seconds (dates as "YYYY-MM-DD").
func writeJSONValue(sb *strings.Builder, v any, dateOnly bool) error {
	switch v := v.(type) {
	case nil:
		sb.WriteString("null")
		return nil
	case decimal.Decimal:
		sb.WriteString(v.String())
		return nil
	case *big.Int:
		sb.WriteString(v.String())
		return nil
	case time.Time:
		switch {
		case dateOnly:
			sb.WriteString(`"` + v.Format(time.DateOnly) + `"`)
		case v.Nanosecond() == 0:
			sb.WriteString(strconv.FormatInt(v.Unix(), 10))
		default:
			sb.WriteString(decimal.New(v.Unix(), 0).Add(decimal.New(int64(v.Nanosecond()), -9)).String())
		}
		return nil
	case string:
		s, _ := json.Marshal(v)
		sb.Write(s)
		return nil
	case []byte:
		s, _ := json.Marshal(string(v))
		sb.Write(s)
		return nil
	case bool:
		sb.WriteString(strconv.FormatBool(v))
		return nil
	case fmt.Stringer:
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
			sb.WriteString("null")
			return nil
		}
		s, _ := json.Marshal(v.String())
		sb.Write(s)
		return nil
	}
	rv := reflect.ValueOf(v)
	switch {
	case rv.CanInt():
		sb.WriteString(strconv.FormatInt(rv.Int(), 10))
	case rv.CanUint():
		sb.WriteString(strconv.FormatUint(rv.Uint(), 10))
	case rv.CanFloat():
		f := rv.Float()
		switch {
		case math.IsNaN(f):
			sb.WriteString(`"nan"`)
		case math.IsInf(f, 1):
			sb.WriteString(`"inf"`)
		case math.IsInf(f, -1):
			sb.WriteString(`"-inf"`)
		default:
			sb.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
		}
	case rv.Kind() == reflect.String:
		s, _ := json.Marshal(rv.String())
		sb.Write(s)
	case rv.Kind() == reflect.Pointer:
		if rv.IsNil() {
			sb.WriteString("null")
			return nil
		}
		return writeJSONValue(sb, rv.Elem().Interface(), dateOnly)
	case rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array:
		sb.WriteByte('[')
		for i := 0; i < rv.Len(); i++ {
			if i > 0 {
				sb.WriteByte(',')
			}
			if err := writeJSONValue(sb, rv.Index(i).Interface(), dateOnly); err != nil {
				return err
			}
		}
		sb.WriteByte(']')
	default:
		return fmt.Errorf("cannot write %T as JSON", v)
	}
	return nil
}
