// Package rpcfuzz calls every RPC of every server of the in-process platform
// (pkg/testkit/platformtest, plus the projection server) with random but well-typed
// requests, built by protoreflect from the service descriptors of
// gen/fitness/v1, as each role and without a token. No call may end INTERNAL or UNKNOWN, a refused call
// must leave the shard tables (fitness_result, outbox_event) as they were,
// and every server must still be SERVING at the end.
package rpcfuzz

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/service/consumersvc"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/platformtest"
	"github.com/resultsync/resultsync/pkg/testkit/servertest"
)

var (
	calls = flag.Int("rpcfuzz.calls", envInt("RS_RPCFUZZ_CALLS", 300), "number of random calls (env RS_RPCFUZZ_CALLS)")
	seed  = flag.Uint64("rpcfuzz.seed", uint64(envInt("RS_RPCFUZZ_SEED", 0)), "random seed; 0 picks one and logs it (env RS_RPCFUZZ_SEED)")
)

func envInt(key string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(key)); err == nil {
		return n
	}
	return def
}

// tokens are the callers: no token, an unknown one, and each role.
var tokens = []string{"", "not-a-configured-token", "tok-viewer", "tok-operator", "tok-admin-alice", "tok-admin-bob"}

// target is one RPC of one server.
type target struct {
	conn   *grpc.ClientConn
	method protoreflect.MethodDescriptor
}

func (tg target) fullName() string {
	return "/" + string(tg.method.Parent().FullName()) + "/" + string(tg.method.Name())
}

func TestRPCFuzz(t *testing.T) {
	p := platformtest.New(t)
	// Real records, so that reads, corrections and reconciliations of
	// plausible ids reach the stores.
	for i := int64(0); i < 4; i++ {
		p.Record(10001, 900001+i, 8, "2.21")
	}
	// The projection server (platformtest runs the consumer without its gRPC
	// service): its own subscription of the platform's topic, writing the
	// same rows (a harmless duplicate).
	projectionAddr := platformtest.Serve(t, "consumer", func(ctx context.Context) (servertest.Runner, error) {
		cfg, err := consumersvc.Load([]string{"--grpc-addr=127.0.0.1:0", "--http-addr=", "--shutdown-grace=2s",
			"--auth-tokens=" + platformtest.Tokens, "--pulsar-url=" + infratest.PulsarURL(), "--topic=" + p.Topic,
			"--subscription=rpcfuzz", "--dead-letter-topic=" + p.Topic + "-DLQ", "--clickhouse-addr=" + infratest.ClickHouseAddr(),
			"--clickhouse-database=" + p.CH.Name})
		if err != nil {
			return nil, err
		}
		return consumersvc.New(ctx, p.Log, cfg)
	})
	servers := []struct {
		addr string
		svc  protoreflect.ServiceDescriptor
	}{
		{p.ResultsAddr, fitnessv1.File_fitness_v1_result_proto.Services().ByName("ResultService")},
		{p.RelayAddr, fitnessv1.File_fitness_v1_outbox_proto.Services().ByName("OutboxService")},
		{p.ReconcileAddr, fitnessv1.File_fitness_v1_reconcile_proto.Services().ByName("ReconcileService")},
		{p.RepairAddr, fitnessv1.File_fitness_v1_repair_proto.Services().ByName("RepairService")},
		{projectionAddr, fitnessv1.File_fitness_v1_projection_proto.Services().ByName("ProjectionService")},
	}
	var targets []target
	var conns []*grpc.ClientConn
	for _, s := range servers {
		conn := p.Dial(s.addr)
		conns = append(conns, conn)
		for i := range s.svc.Methods().Len() {
			targets = append(targets, target{conn: conn, method: s.svc.Methods().Get(i)})
		}
	}
	s := *seed
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("%d calls over %d RPCs, seed %d (rerun with RS_RPCFUZZ_SEED=%d)", *calls, len(targets), s, s)
	g := &gen{r: rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))}
	codesSeen := map[string]map[codes.Code]int{}
	check := func(i int, tg target, tok string, req *dynamicpb.Message) {
		before := counts(t, p)
		code, err := call(tg, tok, req)
		if codesSeen[tg.fullName()] == nil {
			codesSeen[tg.fullName()] = map[codes.Code]int{}
		}
		codesSeen[tg.fullName()][code]++
		js, _ := protojson.Marshal(req)
		if code == codes.Internal || code == codes.Unknown {
			t.Errorf("call %d %s as %q: %v\nrequest %s", i, tg.fullName(), tok, err, js)
		}
		if code != codes.OK {
			if after := counts(t, p); after != before {
				t.Errorf("call %d %s as %q refused (%v) but the shard tables changed %v -> %v\nrequest %s", i, tg.fullName(), tok, err, before, after, js)
			}
		}
	}
	waitServing(t, conns)
	for i, rc := range regressions {
		tg, ok := byName(targets, rc.method)
		req := dynamicpb.NewMessage(tg.method.Input())
		if !ok || protojson.Unmarshal([]byte(rc.json), req) != nil {
			t.Fatalf("regression %d: %s %s", i, rc.method, rc.json)
		}
		check(-1-i, tg, rc.token, req)
	}
	for i := range *calls {
		tg := targets[i%len(targets)] // every RPC in turn, the request and the caller at random
		tok := tokens[g.r.IntN(len(tokens))]
		if g.r.IntN(2) == 0 { // half the calls as an admin: past authorization, into validation and the stores
			tok = tokens[4+g.r.IntN(2)]
		}
		req := dynamicpb.NewMessage(tg.method.Input())
		g.fill(req, 0)
		check(i, tg, tok, req)
		if (i+1)%100 == 0 {
			serving(t, conns)
		}
	}
	serving(t, conns)
	for _, tg := range targets {
		t.Logf("%-55s %v", tg.fullName(), codesSeen[tg.fullName()])
	}
}

// regressions are requests that found a bug, replayed before the random
// calls (negative call numbers in failures).
var regressions = []struct{ method, token, json string }{
	{"/fitness.v1.ReconcileService/StartReconciliationRun", "tok-operator",
		`{"scope":{"detectId":"10001"},"depth":"RECONCILE_DEPTH_CONTENT","sampleRate":"NaN"}`},
	{"/fitness.v1.ResultService/ListResults", "tok-viewer", `{"detectId":"10001","pageToken":"djE6MTAwMDE6MDowOmZhbHNlOi01"}`},
	{"/fitness.v1.OutboxService/ListOutboxEvents", "tok-viewer", `{"shardId":"shard-1","pageToken":"c2hhcmQtMXwwfC0x"}`},
}

func byName(targets []target, name string) (target, bool) {
	for _, tg := range targets {
		if tg.fullName() == name {
			return tg, true
		}
	}
	return target{}, false
}

// call makes one call as tok ("" for none); a server-streaming RPC is read
// until it ends or its short deadline passes.
func call(tg target, tok string, req *dynamicpb.Message) (codes.Code, error) {
	timeout := 10 * time.Second
	if tg.method.IsStreamingServer() {
		timeout = 300 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if tok != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
	}
	if !tg.method.IsStreamingServer() {
		err := tg.conn.Invoke(ctx, tg.fullName(), req, dynamicpb.NewMessage(tg.method.Output()))
		return status.Code(err), err
	}
	st, err := tg.conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, tg.fullName())
	if err != nil {
		return status.Code(err), err
	}
	if err := st.SendMsg(req); err != nil && !errors.Is(err, io.EOF) {
		return status.Code(err), err
	}
	if err := st.CloseSend(); err != nil {
		return status.Code(err), err
	}
	for {
		if err := st.RecvMsg(dynamicpb.NewMessage(tg.method.Output())); err != nil {
			if errors.Is(err, io.EOF) {
				return codes.OK, nil
			}
			if status.Code(err) == codes.DeadlineExceeded {
				return codes.OK, nil // still watching when the deadline came: the stream worked
			}
			return status.Code(err), err
		}
	}
}

// tableCounts are the row counts of the shard tables, shard by shard.
type tableCounts [2][2]int64

func counts(t *testing.T, p *platformtest.Platform) tableCounts {
	t.Helper()
	var c tableCounts
	for i, db := range p.ShardDBs[:2] {
		for j, table := range []string{"fitness_result", "outbox_event"} {
			if err := db.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM "+table).Scan(&c[i][j]); err != nil {
				t.Fatalf("counting %s: %v", table, err)
			}
		}
	}
	return c
}

// waitServing waits (up to 30 s) until every server answers SERVING: the
// projection server is NOT_SERVING until its subscription exists.
func waitServing(t *testing.T, conns []*grpc.ClientConn) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, conn := range conns {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
			cancel()
			if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("server %s not SERVING before the calls: %v, %v", conn.Target(), resp.GetStatus(), err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// serving fails unless every server answers health SERVING.
func serving(t *testing.T, conns []*grpc.ClientConn) {
	t.Helper()
	for _, conn := range conns {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("server %s: health %v, %v", conn.Target(), resp.GetStatus(), err)
		}
	}
}

// gen makes random field values: mostly plausible ones (so that requests
// get past validation into the stores), and edge values of every type.
type gen struct{ r *rand.Rand }

func (g *gen) fill(m protoreflect.Message, depth int) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if g.r.IntN(4) == 0 || (fd.ContainingOneof() != nil && m.WhichOneof(fd.ContainingOneof()) != nil) {
			continue // left unset
		}
		switch {
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for range g.r.IntN(3) {
				mp.Set(g.scalar(fd.MapKey()).MapKey(), g.value(m, fd.MapValue(), mp.NewValue, depth))
			}
		case fd.IsList():
			l := m.Mutable(fd).List()
			n := g.r.IntN(4)
			if g.r.IntN(20) == 0 {
				n = 50
			}
			for range n {
				l.Append(g.value(m, fd, l.NewElement, depth))
			}
		default:
			m.Set(fd, g.value(m, fd, func() protoreflect.Value { return m.NewField(fd) }, depth))
		}
	}
}

func (g *gen) value(_ protoreflect.Message, fd protoreflect.FieldDescriptor, newMsg func() protoreflect.Value, depth int) protoreflect.Value {
	if fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind {
		v := newMsg()
		if depth < 3 {
			g.fill(v.Message(), depth+1)
		}
		return v
	}
	return g.scalar(fd)
}

var (
	plausibleInts = []int64{1, 2, 3, 5, 8, 12, 10001, 900001, 900002, 900003}
	edgeInts      = []int64{0, -1, 13, 65535, 65536, 1 << 31, math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64, 1 << 48}
	plausibleStrs = []string{"2.31", "2.310", "m", "meters", "cm", "shard-0", "shard-1", "fuzz reason", "r-1", "run-1", "10001", "INC-7"}
	edgeStrs      = []string{"", " ", "NaN", "-0", "1e3", "999999999999", "'; DROP TABLE fitness_result; --", "%", "_", "\x00", "|",
		"\u00e9\u00e8", "\U0001F600", "shard-0|5|1", strings.Repeat("x", 65), strings.Repeat("y", 600), strings.Repeat("z", 70000)}
)

func (g *gen) scalar(fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(g.r.IntN(2) == 0)
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		if g.r.IntN(5) == 0 {
			return protoreflect.ValueOfEnum(protoreflect.EnumNumber([]int32{-1, 99, math.MaxInt32}[g.r.IntN(3)]))
		}
		return protoreflect.ValueOfEnum(vals.Get(g.r.IntN(vals.Len())).Number())
	case protoreflect.StringKind:
		switch g.r.IntN(4) {
		case 0:
			return protoreflect.ValueOfString(edgeStrs[g.r.IntN(len(edgeStrs))])
		case 1:
			return protoreflect.ValueOfString(fmt.Sprintf("fz-%x", g.r.Uint32()))
		default:
			return protoreflect.ValueOfString(plausibleStrs[g.r.IntN(len(plausibleStrs))])
		}
	case protoreflect.BytesKind:
		b := make([]byte, g.r.IntN(16))
		for i := range b {
			b[i] = byte(g.r.Uint32())
		}
		return protoreflect.ValueOfBytes(b)
	case protoreflect.DoubleKind, protoreflect.FloatKind:
		fs := []float64{0, 0.5, 1, -1, 1.0000001, math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64, math.SmallestNonzeroFloat64, g.r.Float64()}
		f := fs[g.r.IntN(len(fs))]
		if fd.Kind() == protoreflect.FloatKind {
			return protoreflect.ValueOfFloat32(float32(f))
		}
		return protoreflect.ValueOfFloat64(f)
	}
	var n int64
	switch g.r.IntN(3) {
	case 0:
		n = edgeInts[g.r.IntN(len(edgeInts))]
	case 1:
		n = int64(g.r.Uint64())
	default:
		n = plausibleInts[g.r.IntN(len(plausibleInts))]
	}
	switch fd.Kind() {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(n))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(n))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(n))
	default:
		return protoreflect.ValueOfInt64(n)
	}
}
