package chdb_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/go-cmp/cmp"
	"github.com/shopspring/decimal"

	"github.com/resultsync/resultsync/pkg/testkit/chdb"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// newTestChDB opens a chdb connection on a fresh database, closed when the test
// ends; a missing chdb installation fails or skips the test (see
// infratest.Unavailable).
func newTestChDB(t testing.TB) driver.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	conn, err := chdb.Open(ctx, "rs_test_"+infratest.Suffix())
	if errors.Is(err, chdb.ErrUnavailable) {
		infratest.Unavailable(t, "chdb", "chdb.log", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("chdb subprocess ready in %v", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := conn.Close(); err != nil {
			t.Error(err)
		}
	})
	return conn
}

func mustDec(t testing.TB, s string) decimal.Decimal {
	t.Helper()
	d, err := decimal.NewFromString(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestChDBBind: `?` arguments become the literals clickhouse-go v2.51 binds
// (bind.go), and only outside quotes and comments.
func TestChDBBind(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		query string
		args  []any
		want  string
	}{
		{"ints", "? ? ? ? ? ?", []any{int8(-1), int16(2), int32(-3), int64(4), 5, uint64(math.MaxUint64)}, "-1 2 -3 4 5 18446744073709551615"},
		{"unsigned", "? ? ? ?", []any{uint8(1), uint16(2), uint32(3), uint(4)}, "1 2 3 4"},
		{"float", "?, ?", []any{1.0, 2.5}, "cast(1, 'Float64'), cast(2.5, 'Float64')"},
		{"string escapes", "x = ?", []any{`it's \ back`}, `x = 'it\'s \\ back'`},
		{"bool", "? ?", []any{true, false}, "1 0"},
		{"decimal is a quoted string", "r = ?", []any{decimal.RequireFromString("2.310")}, "r = '2.31'"},
		{"utc time", "t = ?", []any{at}, "t = toDateTime('2026-01-02 03:04:05')"},
		{"zoned time", "t = ?", []any{at.In(time.FixedZone("X", 3600))}, "t = toDateTime('2026-01-02 04:04:05', 'X')"},
		{"slices", "a IN ? AND b IN ?", []any{[]int64{1, 2}, []string{"a", "b'"}}, `a IN [1, 2] AND b IN ['a', 'b\'']`},
		{"decimal slice", "?", []any{[]decimal.Decimal{decimal.RequireFromString("1.5")}}, "['1.5']"},
		{"nil and pointer", "? ?", []any{nil, new(int64)}, "NULL 0"},
		{"group set", "(a, b) IN (?)", []any{clickhouse.GroupSet{Value: []any{1, "x"}}}, "(a, b) IN ((1, 'x'))"},
		{"protected", "'?' `?` \"?\" -- ?\n/* ? /* ? */ ? */ ? # ?", []any{1}, "'?' `?` \"?\" -- ?\n/* ? /* ? */ ? */ 1 # ?"},
		{"escaped", `a = \? AND b = ?`, []any{2}, "a = ? AND b = 2"},
		{"quote in string", `'it''s ?' = ?`, []any{"x"}, `'it''s ?' = 'x'`},
		{"no args", "a = ?", nil, "a = ?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := chdb.Bind(tc.query, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Bind(%q) = %q, want %q", tc.query, got, tc.want)
			}
		})
	}
	if _, err := chdb.Bind("a = ? AND b = ?", 1); err == nil {
		t.Error("a missing argument was not an error")
	}
}

// TestChDBConn runs the chdb connection end to end: a batch insert, bound
// queries, scanning into every supported type, errors and cancellation.
func TestChDBConn(t *testing.T) {
	conn := newTestChDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var version string
	if err := conn.QueryRow(ctx, "SELECT version()").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(version, "26.") {
		t.Errorf("chdb version = %q, want 26.x", version)
	}
	sv, err := conn.ServerVersion()
	if err != nil || sv.Version.Major != 26 {
		t.Errorf("ServerVersion = %+v, %v; want major 26", sv, err)
	}
	if err := conn.Ping(ctx); err != nil {
		t.Fatal(err)
	}

	if err := conn.Exec(ctx, `CREATE TABLE t (
		id Int64, flag UInt8, amount Decimal(12, 3), name String, at DateTime, score Float64, ok Bool,
		doubled Int64 MATERIALIZED id * 2
	) ENGINE = MergeTree ORDER BY id`); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	tricky := `it's a \ back`
	type row struct {
		ID     int64
		Flag   uint8
		Amount string
		Name   string
	}
	rows := []row{{1, 0, "2.310", "plain"}, {2, 1, "0", tricky}, {3, 1, "-999999999.999", "ünïcode\n\t\"q\""}}
	b, err := conn.PrepareBatch(ctx, "INSERT INTO t (id, flag, amount, name, at, score, ok)")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := b.Append(r.ID, r.Flag, mustDec(t, r.Amount), r.Name, at, 0.25, r.Flag == 1); err != nil {
			t.Fatal(err)
		}
	}
	if b.Rows() != 3 || len(b.Columns()) != 7 {
		t.Errorf("batch has %d rows, %d columns; want 3, 7", b.Rows(), len(b.Columns()))
	}
	if err := b.Send(); err != nil {
		t.Fatal(err)
	}
	if !b.IsSent() || !errors.Is(b.Append(int64(9), uint8(0), decimal.Zero, "", at, 0.0, false), clickhouse.ErrBatchAlreadySent) {
		t.Error("a sent batch accepted another row")
	}

	// Append rejects what clickhouse-go's native columns reject.
	b, err = conn.PrepareBatch(ctx, "INSERT INTO t (id, flag)")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Append(int64(1), "one"); err == nil {
		t.Error("appending a string to a UInt8 column was not an error")
	}
	if err := b.Append(int64(1), uint8(1)); !errors.Is(err, clickhouse.ErrBatchInvalid) {
		t.Errorf("after a bad Append, Append = %v, want ErrBatchInvalid", err)
	}
	if err := b.Abort(); err != nil {
		t.Error(err)
	}

	// Bound arguments: a string with a quote and a backslash, a slice, a decimal.
	var id int64
	if err := conn.QueryRow(ctx, "SELECT id FROM t WHERE name = ?", tricky).Scan(&id); err != nil || id != 2 {
		t.Errorf("by name: id = %d, %v; want 2", id, err)
	}
	var n uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM t WHERE id IN ? AND name != '?'", []int64{1, 3, 5}).Scan(&n); err != nil || n != 2 {
		t.Errorf("IN slice: count = %d, %v; want 2", n, err)
	}
	if err := conn.QueryRow(ctx, "SELECT id FROM t WHERE amount = ? AND at = ? AND ok = ?", mustDec(t, "2.31"), at, false).Scan(&id); err != nil || id != 1 {
		t.Errorf("by decimal, time, bool: id = %d, %v; want 1", id, err)
	}
	var doubled int64
	if err := conn.QueryRow(ctx, "SELECT doubled FROM t WHERE id = ?", 3).Scan(&doubled); err != nil || doubled != 6 {
		t.Errorf("MATERIALIZED column = %d, %v; want 6", doubled, err)
	}

	type got struct {
		ID     int64
		Flag   uint8
		Amount decimal.Decimal
		Name   string
		At     time.Time
		Score  float64
		OK     bool
	}
	q, err := conn.Query(ctx, "SELECT id, flag, amount, name, at, score, ok FROM t ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"id", "flag", "amount", "name", "at", "score", "ok"}, q.Columns()); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}
	if ct := q.ColumnTypes(); ct[2].DatabaseTypeName() != "Decimal(12, 3)" {
		t.Errorf("amount type = %s", ct[2].DatabaseTypeName())
	}
	var all []got
	for q.Next() {
		var g got
		if err := q.Scan(&g.ID, &g.Flag, &g.Amount, &g.Name, &g.At, &g.Score, &g.OK); err != nil {
			t.Fatal(err)
		}
		all = append(all, g)
	}
	if err := q.Err(); err != nil {
		t.Fatal(err)
	}
	q.Close()
	want := []got{
		{1, 0, mustDec(t, "2.31"), "plain", at, 0.25, false},
		{2, 1, decimal.Zero, tricky, at, 0.25, true},
		{3, 1, mustDec(t, "-999999999.999"), "ünïcode\n\t\"q\"", at, 0.25, true},
	}
	if diff := cmp.Diff(want, all, cmp.Comparer(func(a, b decimal.Decimal) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}

	// Every supported destination, with 64-bit integers both quoted (the
	// session's setting) and unquoted.
	for _, quote := range []int{1, 0} {
		t.Run(fmt.Sprintf("quote_64bit=%d", quote), func(t *testing.T) {
			var (
				i    int
				i8   int8
				i16  int16
				i32  int32
				i64  int64
				u8   uint8
				u16  uint16
				u32  uint32
				u64  uint64
				f64  float64
				s    string
				bl   bool
				tm   time.Time
				dec  decimal.Decimal
				anyI any
				anyD any
				anyN any
				ptr  *int64
			)
			err := conn.QueryRow(ctx, fmt.Sprintf(`SELECT toInt64(-7), toInt8(-8), toInt16(-16), toInt32(-32), toInt64(-9223372036854775808),
				toUInt8(255), toUInt16(65535), toUInt32(4294967295), toUInt64(18446744073709551615), toFloat64(0.1),
				'str', true, toDateTime('2026-03-04 05:06:07'), toDecimal128('123456789012345678.123', 3),
				toInt64(42), toDecimal64('1.500', 3), CAST(NULL AS Nullable(Int64)), toNullable(toInt64(5))
				SETTINGS output_format_json_quote_64bit_integers = %d`, quote)).
				Scan(&i, &i8, &i16, &i32, &i64, &u8, &u16, &u32, &u64, &f64, &s, &bl, &tm, &dec, &anyI, &anyD, &anyN, &ptr)
			if err != nil {
				t.Fatal(err)
			}
			if i != -7 || i8 != -8 || i16 != -16 || i32 != -32 || i64 != math.MinInt64 {
				t.Errorf("signed: %d %d %d %d %d", i, i8, i16, i32, i64)
			}
			if u8 != 255 || u16 != 65535 || u32 != math.MaxUint32 || u64 != math.MaxUint64 {
				t.Errorf("unsigned: %d %d %d %d", u8, u16, u32, u64)
			}
			if f64 != 0.1 || s != "str" || !bl || !tm.Equal(at) {
				t.Errorf("float, string, bool, time: %v %q %v %v", f64, s, bl, tm)
			}
			if dec.String() != "123456789012345678.123" {
				t.Errorf("Decimal128 = %s, want exact 123456789012345678.123", dec)
			}
			if anyI != int64(42) {
				t.Errorf("*any of Int64 = %#v, want int64(42)", anyI)
			}
			if d, ok := anyD.(decimal.Decimal); !ok || !d.Equal(mustDec(t, "1.5")) {
				t.Errorf("*any of Decimal = %#v, want decimal 1.5", anyD)
			}
			if anyN != nil || ptr == nil || *ptr != 5 {
				t.Errorf("NULL into *any = %#v, Nullable into **int64 = %v", anyN, ptr)
			}
		})
	}

	var small int8
	if err := conn.QueryRow(ctx, "SELECT toInt64(300)").Scan(&small); err == nil {
		t.Error("300 scanned into an int8 without an error")
	}
	if err := conn.QueryRow(ctx, "SELECT 1 WHERE 0").Scan(&small); !errors.Is(err, sql.ErrNoRows) {
		t.Errorf("empty result: %v, want sql.ErrNoRows", err)
	}

	// A bad statement is an error (the server's exception), not a hang, and
	// the connection stays usable.
	bad, cancelBad := context.WithTimeout(ctx, 10*time.Second)
	defer cancelBad()
	err = conn.Exec(bad, "SELEC 1")
	var ex *clickhouse.Exception
	if !errors.As(err, &ex) || ex.Code != 62 {
		t.Errorf("bad statement: %v, want a code 62 exception", err)
	}
	if err := conn.QueryRow(bad, "SELECT nonexistent FROM t").Scan(&id); err == nil {
		t.Error("unknown column was not an error")
	}

	// Cancellation stops waiting; the late reply is discarded.
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort()
	start := time.Now()
	if err := conn.Exec(short, "SELECT sleep(1.5)"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("slow query under a 200ms deadline: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("cancellation took %v", d)
	}
	if err := conn.QueryRow(ctx, "SELECT toInt64(77)").Scan(&id); err != nil || id != 77 {
		t.Errorf("after a cancelled query: %d, %v; want 77", id, err)
	}

	// Concurrent callers each get their own answer.
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var v int64
			if err := conn.QueryRow(ctx, "SELECT toInt64(?)", g).Scan(&v); err != nil || v != int64(g) {
				errs <- fmt.Errorf("goroutine %d got %d, %w", g, v, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestChDBStrictScan: with RS_CHDB_STRICT_SCAN set, Scan rejects what
// clickhouse-go's native columns reject (Int64 into *int), accepts the rest.
func TestChDBStrictScan(t *testing.T) {
	t.Setenv("RS_CHDB_STRICT_SCAN", "1")
	conn := newTestChDB(t)
	ctx := context.Background()
	var i int
	if err := conn.QueryRow(ctx, "SELECT toInt64(1)").Scan(&i); err == nil {
		t.Error("strict: Int64 into *int was accepted")
	}
	var i64 int64
	var u8 uint8
	var d decimal.Decimal
	var p *int64
	if err := conn.QueryRow(ctx, "SELECT toInt64(1), toUInt8(2), toDecimal32('1.5', 3), CAST(NULL AS Nullable(Int64))").Scan(&i64, &u8, &d, &p); err != nil {
		t.Errorf("strict: native types rejected: %v", err)
	}
}

// TestChDBClosedProcess: after Close, calls fail at once.
func TestChDBClosedProcess(t *testing.T) {
	conn := newTestChDB(t)
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := conn.Ping(ctx); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Ping after Close = %v, want an immediate error", err)
	}
}

// BenchmarkChDBQuery measures one round trip (SELECT 1).
func BenchmarkChDBQuery(b *testing.B) {
	conn := newTestChDB(b)
	ctx := context.Background()
	for b.Loop() {
		if err := conn.Exec(ctx, "SELECT 1"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChDBInsert10k measures a 10,000-row batch into a projection-shaped table.
func BenchmarkChDBInsert10k(b *testing.B) {
	conn := newTestChDB(b)
	ctx := context.Background()
	if err := conn.Exec(ctx, `CREATE TABLE v (detect_id Int64, data_id Int64, version Int64, epoch UInt16,
		result Decimal(12, 3), unit String, is_deleted UInt8, event_id String) ENGINE = MergeTree ORDER BY (detect_id, data_id)`); err != nil {
		b.Fatal(err)
	}
	res := decimal.RequireFromString("12.345")
	for b.Loop() {
		batch, err := conn.PrepareBatch(ctx, "INSERT INTO v (detect_id, data_id, version, epoch, result, unit, is_deleted, event_id)")
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < 10000; i++ {
			if err := batch.Append(int64(1), int64(i), int64(1), uint16(0), res, "m", uint8(0), "evt-00000000"); err != nil {
				b.Fatal(err)
			}
		}
		if err := batch.Send(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChDBRead10k measures reading and scanning 10,000 rows.
func BenchmarkChDBRead10k(b *testing.B) {
	conn := newTestChDB(b)
	ctx := context.Background()
	if err := conn.Exec(ctx, `CREATE TABLE v ENGINE = MergeTree ORDER BY data_id AS
		SELECT toInt64(number) AS data_id, toDecimal64(number / 1000, 3) AS result, 'm' AS unit FROM numbers(10000)`); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		rows, err := conn.Query(ctx, "SELECT data_id, result, unit FROM v ORDER BY data_id")
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var id int64
			var r decimal.Decimal
			var u string
			if err := rows.Scan(&id, &r, &u); err != nil {
				b.Fatal(err)
			}
			n++
		}
		rows.Close()
		if n != 10000 {
			b.Fatalf("read %d rows", n)
		}
	}
}
