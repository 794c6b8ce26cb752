// Package benchkit is what the benchmark programs share: a throwaway stack
// (two shards, a control database, a projection, a topic), servers run in
// process (the projection consumer too, built by consumersvc.New with an
// observer), and closed-loop load generation.
package benchkit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/resultsync/resultsync/pkg/delivery/consumer"
	"github.com/resultsync/resultsync/pkg/delivery/pulsarbus"
	"github.com/resultsync/resultsync/pkg/model/shard"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/service/consumersvc"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// Stack is two fresh shards, a control database, a fresh projection and a
// fresh topic, dropped by Close.
type Stack struct {
	Map     shard.Map
	DBs     []*sql.DB
	Control *infratest.MySQLDatabase
	CH      *infratest.ClickHouseDatabase
	Topic   string
	drops   []func()
}

// NewStack creates the stack; the shards' pools hold up to shardConns
// connections, the topic's name starts with topicPrefix.
func NewStack(ctx context.Context, topicPrefix string, shardConns int) (*Stack, error) {
	s := &Stack{Topic: pulsarbus.Topic("public", "default", topicPrefix+infratest.Suffix())}
	for i := range 2 {
		d, drop, err := infratest.CreateMySQLDatabase(ctx, "rs_bench", schema.Shard, shardConns)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.drops = append(s.drops, drop)
		s.DBs = append(s.DBs, d.DB)
		s.Map.Shards = append(s.Map.Shards, shard.Shard{ID: fmt.Sprintf("shard-%d", i), DSN: d.DSN})
	}
	var err error
	var drop func()
	if s.Control, drop, err = infratest.CreateMySQLDatabase(ctx, "rs_bench", schema.Control, 8); err != nil {
		s.Close()
		return nil, err
	}
	s.drops = append(s.drops, drop)
	if s.CH, drop, err = infratest.CreateClickHouseDatabase(ctx, "rs_bench", true); err != nil {
		s.Close()
		return nil, err
	}
	s.drops = append(s.drops, drop)
	return s, nil
}

// Close drops everything NewStack created.
func (s *Stack) Close() {
	for i := len(s.drops) - 1; i >= 0; i-- {
		s.drops[i]()
	}
}

// Args are the settings every server of the stack takes (loopback gRPC on
// a free port, no HTTP, the development tokens, the shard map), then extra.
func (s *Stack) Args(extra ...string) []string {
	var shards []string
	for _, sh := range s.Map.Shards {
		shards = append(shards, sh.ID+"="+sh.DSN)
	}
	return append([]string{"--grpc-addr=127.0.0.1:0", "--http-addr=", "--shutdown-grace=2s", "--log-level=warn",
		"--auth-tokens=" + auth.DevTokens, "--shards=" + strings.Join(shards, ",")}, extra...)
}

// Runner is what the service packages' New return.
type Runner interface {
	Run(ctx context.Context) error
	GRPCAddr() string
}

// Serve runs a server until the returned stop is called; stop returns the
// server's error.
func Serve(ctx context.Context, svc Runner) func() error {
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- svc.Run(sctx) }()
	return func() error {
		cancel()
		return <-done
	}
}

// Operator is a dial option that sends the development operator token with
// every call.
func Operator() grpc.DialOption {
	return grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		return invoker(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer dev-operator"), method, req, reply, cc, opts...)
	})
}

// StartConsumer runs the projection consumer of the stack's topic, built by
// consumersvc.New as services/consumer builds it (its defaults but for the
// batch wait), with applied observing every batch once ClickHouse
// acknowledged its insert (consumersvc.WithObserver). It returns once the
// consumer is subscribed (its "pulsar" health is SERVING); the returned stop
// ends it.
func StartConsumer(ctx context.Context, log *slog.Logger, st *Stack, batchWait time.Duration, applied func([]chstore.Row, time.Time)) (func(), error) {
	cfg, err := consumersvc.Load([]string{"--grpc-addr=127.0.0.1:0", "--http-addr=", "--shutdown-grace=2s", "--log-level=warn",
		"--auth-tokens=" + auth.DevTokens, "--pulsar-url=" + infratest.PulsarURL(), "--topic=" + st.Topic, "--dead-letter-topic=" + st.Topic + "-DLQ",
		"--clickhouse-addr=" + infratest.ClickHouseAddr(), "--clickhouse-database=" + st.CH.Name, "--batch-wait=" + batchWait.String()})
	if err != nil {
		return nil, err
	}
	svc, err := consumersvc.New(ctx, log, cfg, consumersvc.WithObserver(consumer.Hooks{Applied: applied}))
	if err != nil {
		return nil, err
	}
	stop := Serve(ctx, svc)
	stopped := func() {
		if err := stop(); err != nil {
			fmt.Fprintln(os.Stderr, "consumer:", err)
		}
	}
	if err := WaitServing(ctx, svc.GRPCAddr(), server.DependencyHealthName("pulsar"), time.Minute); err != nil {
		stopped()
		return nil, fmt.Errorf("consumer: %w", err)
	}
	return stopped, nil
}

// WaitServing waits until the server at addr reports service SERVING on its
// gRPC health service, at most timeout.
func WaitServing(ctx context.Context, addr, service string, timeout time.Duration) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s of %s not SERVING within %s (last: %v): %w", service, addr, timeout, resp.GetStatus(), errors.Join(ctx.Err(), err))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Drive runs op(c, i) for i = 0, 1, ... in n goroutines (client c) until
// stop is closed; an error stops every client. The returned wait waits for
// them and returns the first error.
func Drive(n int, op func(c, i int) error, stop <-chan struct{}) (wait func() error) {
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	quit := make(chan struct{})
	for c := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-quit:
					return
				default:
				}
				if err := op(c, i); err != nil {
					once.Do(func() { firstErr = err; close(quit) })
					return
				}
			}
		}()
	}
	return func() error {
		wg.Wait()
		return firstErr
	}
}

// Measure runs op in n clients for warm+d and returns the successful ops
// per second during d. Any error stops the run.
func Measure(n int, d, warm time.Duration, op func(c, i int) error) (float64, error) {
	var count atomic.Int64
	var measuring atomic.Bool
	stop := make(chan struct{})
	wait := Drive(n, func(c, i int) error {
		if err := op(c, i); err != nil {
			return err
		}
		if measuring.Load() {
			count.Add(1)
		}
		return nil
	}, stop)
	time.Sleep(warm)
	measuring.Store(true)
	start := time.Now()
	time.Sleep(d)
	measuring.Store(false)
	elapsed := time.Since(start)
	close(stop)
	if err := wait(); err != nil {
		return 0, err
	}
	return float64(count.Load()) / elapsed.Seconds(), nil
}

// RawTransaction is the write path's ceiling: the bare transaction of a
// correction, UPDATE of the result row and INSERT of a 120-byte outbox row
// (status NEW), on a direct connection, call i of a client on record id.
func RawTransaction(ctx context.Context, db *sql.DB, id int64, i int) error {
	now := time.Now().UTC()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE fitness_result SET result = ?, version = version + 1, update_time = ? WHERE data_id = ?",
		fmt.Sprintf("2.%02d", i%100), now, id); err != nil {
		_ = tx.Rollback()
		return err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO outbox_event (event_id, data_id, version, payload, due_time, create_time) VALUES (?, ?, ?, ?, ?, ?)",
		fmt.Sprintf("raw-%d-%d", id, i), id, i, make([]byte, 120), now, now); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// RawBatch is the write path's strongest ceiling: a correction's statements
// in ONE round trip, as CorrectResult sends them (START TRANSACTION; UPDATE
// of the result row; the INSERT of a 120-byte outbox row when withOutbox;
// the INSERT of its request_log row; COMMIT), on a pool opened as the
// service opens its own (resultstore.PoolOptions: READ COMMITTED sessions,
// multi-statement batches), call i of a client on record id. Without the
// outbox insert it measures what the outbox costs; with it, what the
// service adds.
func RawBatch(ctx context.Context, db *sql.DB, id int64, i int, withOutbox bool) error {
	now := time.Now().UTC()
	stmts := []string{"START TRANSACTION",
		"UPDATE fitness_result SET result = ?, version = version + 1, update_time = ? WHERE data_id = ?"}
	args := []any{fmt.Sprintf("2.%02d", i%100), now, id}
	if withOutbox {
		stmts = append(stmts, "INSERT INTO outbox_event (event_id, data_id, version, payload, due_time, create_time) VALUES (?, ?, ?, ?, ?, ?)")
		args = append(args, fmt.Sprintf("raw-%d-%d", id, i), id, i, make([]byte, 120), now, now)
	}
	stmts = append(stmts, "INSERT INTO request_log (request_id, method, request_hash, data_id, version, response, create_time) VALUES (?, ?, ?, ?, ?, ?, ?)", "COMMIT")
	args = append(args, fmt.Sprintf("raw-%d-%d", id, i), "correct", strings.Repeat("0", 64), id, i, make([]byte, 40), now)
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, strings.Join(stmts, ";\n"), args...); err != nil {
		// A statement failed before COMMIT: the transaction is still open
		// on this connection.
		_, _ = conn.ExecContext(ctx, "ROLLBACK")
		return err
	}
	return nil
}
