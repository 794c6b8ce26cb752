// Command writepath measures the write path on the local MySQL (or MariaDB, RS_MYSQL_ENGINE), in one run:
//
//   - raw:       the bare database transaction UPDATE result + INSERT outbox row
//     (the ceiling), over direct connections;
//   - no-outbox: CorrectResult over gRPC with the outbox row left out;
//   - outbox:    CorrectResult over gRPC as shipped (row lock, version check,
//     campaign revision, idempotency record, outbox row, all in one transaction);
//
// each at 1 and 16 concurrent clients, each client correcting its own results
// over two shards. It prints commits/s and the ratios the targets are stated in.
//
//	go run ./bench/writepath -duration 5s
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/resultsync/resultsync/bench/internal/benchkit"
	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/model/shard"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/service/resultssvc"
	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/write/resultapi"
	"github.com/resultsync/resultsync/pkg/write/resultstore"
)

const recordsPerClient = 8

func main() {
	duration := flag.Duration("duration", 5*time.Second, "measuring time per phase")
	warmup := flag.Duration("warmup", time.Second, "unmeasured time before each phase")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "writepath:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "writepath:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(context.Background(), *duration, *warmup); err != nil {
		fmt.Fprintln(os.Stderr, "writepath:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

type env struct {
	m     shard.Map
	dbs   []*sql.DB
	drops []func()
}

func setup(ctx context.Context) (*env, error) {
	e := &env{}
	for i := range 2 {
		d, drop, err := infratest.CreateMySQLDatabase(ctx, "rs_bench", schema.Shard, 64)
		if err != nil {
			e.close()
			return nil, err
		}
		e.drops = append(e.drops, drop)
		e.dbs = append(e.dbs, d.DB)
		e.m.Shards = append(e.m.Shards, shard.Shard{ID: fmt.Sprintf("shard-%d", i), DSN: d.DSN})
	}
	return e, nil
}

func (e *env) close() {
	for _, drop := range e.drops {
		drop()
	}
}

// client c owns records dataID(c, 0..recordsPerClient-1) of school c+2;
// each record lives on the shard its data_id routes to (shard.Map.Owner).
func dataID(phase, c, k int) int64 { return int64(1_000_000*phase + 1000*c + k) }

func run(ctx context.Context, d, warm time.Duration) error {
	e, err := setup(ctx)
	if err != nil {
		return err
	}
	defer e.close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	clientsList := []int{1, 16}
	withOutbox, stopWith, err := startService(ctx, log, e.m, false)
	if err != nil {
		return err
	}
	defer stopWith()
	noOutbox, stopWithout, err := startService(ctx, log, e.m, true)
	if err != nil {
		return err
	}
	defer stopWithout()

	phase := 0
	raw := func(n int) (float64, error) {
		phase++
		p := phase
		for c := range n {
			if err := seed(ctx, e, p, c); err != nil {
				return 0, err
			}
		}
		return benchkit.Measure(n, d, warm, func(c, i int) error {
			id := dataID(p, c, i%recordsPerClient)
			return benchkit.RawTransaction(ctx, e.dbs[e.m.Owner(id)], id, i)
		})
	}
	// The same shards opened as the service opens them (READ COMMITTED,
	// multi-statement batches), for the one-round-trip ceilings.
	batchDBs := make([]*sql.DB, len(e.m.Shards))
	for i, sh := range e.m.Shards {
		db, err := mysqldb.Open(ctx, sh.DSN, resultstore.PoolOptions(64))
		if err != nil {
			return fmt.Errorf("opening %s for the batch ceiling: %w", sh.ID, err)
		}
		defer db.Close()
		batchDBs[i] = db
	}
	rawBatch := func(withOutbox bool) func(n int) (float64, error) {
		return func(n int) (float64, error) {
			phase++
			p := phase
			for c := range n {
				if err := seed(ctx, e, p, c); err != nil {
					return 0, err
				}
			}
			return benchkit.Measure(n, d, warm, func(c, i int) error {
				id := dataID(p, c, i%recordsPerClient)
				return benchkit.RawBatch(ctx, batchDBs[e.m.Owner(id)], id, i, withOutbox)
			})
		}
	}
	correct := func(client []fitnessv1.ResultServiceClient) func(n int) (float64, error) {
		return func(n int) (float64, error) {
			phase++
			p := phase
			versions := make([][]int64, n)
			for c := range n {
				if err := seed(ctx, e, p, c); err != nil {
					return 0, err
				}
				versions[c] = make([]int64, recordsPerClient)
				for k := range versions[c] {
					versions[c][k] = 1
				}
			}
			return benchkit.Measure(n, d, warm, func(c, i int) error {
				k := i % recordsPerClient
				_, err := client[c%len(client)].CorrectResult(ctx, &fitnessv1.CorrectResultRequest{
					RequestId: fmt.Sprintf("b%d-%d-%d", p, c, i), SchoolId: int64(c + 2), DataId: dataID(p, c, k),
					ExpectedVersion: versions[c][k], Result: fmt.Sprintf("2.%02d", i%100), Unit: "m",
				})
				if err == nil {
					versions[c][k]++
				}
				return err
			})
		}
	}
	kinds := []struct {
		name string
		run  func(n int) (float64, error)
	}{
		{"raw 4 round trips", raw},
		{"raw batch, no outbox", rawBatch(false)},
		{"raw batch, outbox", rawBatch(true)},
		{"CorrectResult, no outbox", correct(noOutbox)},
		{"CorrectResult, outbox", correct(withOutbox)},
	}
	// Every configuration is measured twice, in the order A B C ... then
	// ... C B A, and the two runs averaged, so that a drift of the database
	// over the run (growing tables, purge, merges) does not favour one.
	rates := map[string]float64{}
	var order []int
	for i := range kinds {
		order = append(order, i)
	}
	for i := range kinds {
		order = append(order, len(kinds)-1-i)
	}
	for _, ki := range order {
		k := kinds[ki]
		for _, n := range clientsList {
			rate, err := k.run(n)
			if err != nil {
				return fmt.Errorf("%s, %d clients: %w", k.name, n, err)
			}
			rates[fmt.Sprintf("%s/%d", k.name, n)] += rate / 2
		}
	}

	fmt.Printf("\nwrite path on %s (2 shards, %s per run, each configuration run twice in ABC-CBA order and averaged, %d cores)\n", infratest.MySQLEngine(), d, numCPU())
	fmt.Printf("%-28s %8s %14s\n", "phase", "clients", "commits/s")
	for _, k := range kinds {
		for _, n := range clientsList {
			fmt.Printf("%-28s %8d %14.0f\n", k.name, n, rates[fmt.Sprintf("%s/%d", k.name, n)])
		}
	}
	for _, n := range clientsList {
		with, without := rates[fmt.Sprintf("CorrectResult, outbox/%d", n)], rates[fmt.Sprintf("CorrectResult, no outbox/%d", n)]
		fmt.Printf("outbox cost at %2d clients: %5.1f%% of throughput (target <= 25%%)\n", n, 100*(1-with/without))
	}
	for _, n := range clientsList {
		a, b := rates[fmt.Sprintf("raw batch, no outbox/%d", n)], rates[fmt.Sprintf("raw batch, outbox/%d", n)]
		fmt.Printf("the outbox insert's own cost at %2d clients (raw batches): %5.1f%% of throughput\n", n, 100*(1-b/a))
	}
	// Judged against the strongest ceiling doing the same work: the same
	// single-round-trip batch at READ COMMITTED, outbox insert included.
	four16, batch16, with16 := rates["raw 4 round trips/16"], rates["raw batch, outbox/16"], rates["CorrectResult, outbox/16"]
	fmt.Printf("CorrectResult at 16 clients = %5.1f%% of the one-round-trip batch (target >= 60%%), %5.1f%% of the 4-round-trip transaction (reference)\n",
		100*with16/batch16, 100*with16/four16)
	benchkit.Summary("writepath", "CorrectResult, 16 clients", fmt.Sprintf("%.0f/s", with16), fmt.Sprintf("%.0f/s raw batch", batch16),
		fmt.Sprintf("%.1f%%", 100*with16/batch16), ">= 60%", benchkit.Verdict(with16 >= 0.6*batch16))
	benchkit.Summary("writepath", "CorrectResult vs 4-round-trip txn (reference), 16 clients", fmt.Sprintf("%.0f/s", with16), fmt.Sprintf("%.0f/s", four16),
		fmt.Sprintf("%.1f%%", 100*with16/four16), "-", "-")
	return nil
}

func seed(ctx context.Context, e *env, phase, c int) error {
	for k := range recordsPerClient {
		db := e.dbs[e.m.Owner(dataID(phase, c, k))]
		if _, err := db.ExecContext(ctx, `INSERT INTO fitness_result
			(data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted, create_time, update_time)
			VALUES (?, 10001, ?, 3, ?, 5, 2.21, 'm', 1, 0, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`, dataID(phase, c, k), c, c+2); err != nil {
			return fmt.Errorf("seeding: %w", err)
		}
	}
	return nil
}

// startService runs the results server on a loopback port, built through
// resultssvc exactly as services/results builds it (Load, New, Run), or,
// with skipOutbox, assembled here the same way (the server bootstrap of the
// loaded configuration, its authentication, the ResultService) over stores
// that leave out the outbox row (resultstore.Options.SkipOutbox: a
// measurement only, never offered by the server). The clients send the
// development operator token, as the server authenticates every call.
func startService(ctx context.Context, log *slog.Logger, m shard.Map, skipOutbox bool) ([]fitnessv1.ResultServiceClient, func(), error) {
	var shards []string
	for _, s := range m.Shards {
		shards = append(shards, s.ID+"="+s.DSN)
	}
	cfg, err := resultssvc.Load([]string{"--grpc-addr=127.0.0.1:0", "--http-addr=", "--shutdown-grace=1s", "--log-level=error",
		"--auth-tokens=" + auth.DevTokens, "--shards=" + strings.Join(shards, ","), "--max-conns-per-shard=64"})
	if err != nil {
		return nil, nil, err
	}
	var svc benchkit.Runner
	if skipOutbox {
		svc, err = newNoOutboxServer(ctx, log, m, cfg)
	} else {
		svc, err = resultssvc.New(ctx, log, cfg)
	}
	if err != nil {
		return nil, nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- svc.Run(sctx) }()
	stop := func(conns []*grpc.ClientConn) {
		for _, c := range conns {
			c.Close()
		}
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "write-path server:", err)
		}
	}
	operator := grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		return invoker(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer dev-operator"), method, req, reply, cc, opts...)
	})
	// One connection per client, as independent platform services would have.
	var conns []*grpc.ClientConn
	var clients []fitnessv1.ResultServiceClient
	for range 16 {
		conn, err := grpc.NewClient(svc.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()), operator)
		if err != nil {
			stop(conns)
			return nil, nil, err
		}
		conns = append(conns, conn)
		clients = append(clients, fitnessv1.NewResultServiceClient(conn))
	}
	return clients, func() { stop(conns) }, nil
}

// noOutboxServer is the results server of the no-outbox phase.
type noOutboxServer struct {
	srv         *server.Server
	closeStores func()
}

// newNoOutboxServer assembles the results server as resultssvc.New does,
// over stores that skip the outbox row.
func newNoOutboxServer(ctx context.Context, log *slog.Logger, m shard.Map, cfg resultssvc.Config) (*noOutboxServer, error) {
	stores, closeStores, err := resultapi.OpenStores(ctx, log, m, cfg.MaxConnsPerShard, resultstore.Options{SkipOutbox: true})
	if err != nil {
		return nil, err
	}
	srv, err := server.New(log, cfg.Server, server.WithAuth(auth.ResultPolicy))
	if err != nil {
		closeStores()
		return nil, err
	}
	fitnessv1.RegisterResultServiceServer(srv.GRPC(), resultapi.NewService(m, stores))
	if err := srv.Listen(); err != nil {
		closeStores()
		return nil, err
	}
	return &noOutboxServer{srv: srv, closeStores: closeStores}, nil
}

func (s *noOutboxServer) GRPCAddr() string { return s.srv.GRPCAddr() }

func (s *noOutboxServer) Run(ctx context.Context) error {
	defer s.closeStores()
	return s.srv.Run(ctx, nil, nil)
}
