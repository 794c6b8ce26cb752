package serviceconfig_test

import (
	"encoding/json"
	"slices"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/resultsync/resultsync/clients/go/serviceconfig"
	_ "github.com/resultsync/resultsync/gen/fitness/v1" // registers the contracts' descriptors
)

// retried is the decision for every method of the contracts: true when the
// retry policy covers it (a read, or a write whose request_id is required),
// false when sending it again could act twice. A write whose request_id is
// optional is not retried: a service configuration cannot tell a call that
// set one from a call that did not (the application retries it, with its
// request_id, by the code and reason). A new
// method fails TestEveryMethodHasADecision until it is added here (and to
// service_config.json and docs/calling.md when retried).
var retried = map[string]bool{
	"fitness.v1.ResultService/RecordResult":  true, // request_id required
	"fitness.v1.ResultService/CorrectResult": true, // request_id required
	"fitness.v1.ResultService/DeleteResult":  true, // request_id required
	"fitness.v1.ResultService/GetResult":     true,
	"fitness.v1.ResultService/ListResults":   true,

	"fitness.v1.OutboxService/ListOutboxEvents":   true,
	"fitness.v1.OutboxService/GetOutboxStats":     true,
	"fitness.v1.OutboxService/ReplayParkedEvents": false, // request_id optional: without it, a second replay

	"fitness.v1.ProjectionService/GetProjectionStatus": true,
	"fitness.v1.ProjectionService/ListDeadLetters":     true,

	"fitness.v1.ReconcileService/StartReconciliationRun": false, // request_id optional: without it, a second run
	"fitness.v1.ReconcileService/GetReconciliationRun":   true,
	"fitness.v1.ReconcileService/ListReconciliationRuns": true,
	"fitness.v1.ReconcileService/WatchReconciliationRun": true, // until its first message
	"fitness.v1.ReconcileService/ListDiscrepancies":      true,
	"fitness.v1.ReconcileService/ListCampaigns":          true,

	"fitness.v1.RepairService/CreateRepair":    true,  // request_id required
	"fitness.v1.RepairService/PlanRepair":      true,  // a dry run
	"fitness.v1.RepairService/ApproveRepair":   false, // request_id optional: without it, a second approval
	"fitness.v1.RepairService/GetRepair":       true,
	"fitness.v1.RepairService/ListRepairs":     true,
	"fitness.v1.RepairService/ListRepairItems": true,
	"fitness.v1.RepairService/VerifyRepair":    false, // request_id optional: without it, another verification
	"fitness.v1.RepairService/WatchRepair":     true,
	"fitness.v1.RepairService/CancelRepair":    false, // request_id optional: without it, a second cancel
	"fitness.v1.RepairService/StartRebuild":    true,  // request_id required
	"fitness.v1.RepairService/ApproveRebuild":  false, // request_id optional
	"fitness.v1.RepairService/GetRebuild":      true,
	"fitness.v1.RepairService/ListRebuilds":    true,
	"fitness.v1.RepairService/WatchRebuild":    true,
	"fitness.v1.RepairService/CancelRebuild":   false, // request_id optional
}

type config struct {
	LoadBalancingConfig []map[string]json.RawMessage `json:"loadBalancingConfig"`
	MethodConfig        []struct {
		Name []struct {
			Service, Method string
		} `json:"name"`
		RetryPolicy *struct {
			MaxAttempts          int      `json:"maxAttempts"`
			RetryableStatusCodes []string `json:"retryableStatusCodes"`
		} `json:"retryPolicy"`
	} `json:"methodConfig"`
}

func parse(t *testing.T) config {
	t.Helper()
	var c config
	if err := json.Unmarshal([]byte(serviceconfig.JSON), &c); err != nil {
		t.Fatalf("service_config.json: %v", err)
	}
	return c
}

// contractMethods is every method of every service in package fitness.v1.
func contractMethods(t *testing.T) []string {
	t.Helper()
	var out []string
	protoregistry.GlobalFiles.RangeFilesByPackage("fitness.v1", func(f protoreflect.FileDescriptor) bool {
		for i := range f.Services().Len() {
			s := f.Services().Get(i)
			for j := range s.Methods().Len() {
				out = append(out, string(s.FullName())+"/"+string(s.Methods().Get(j).Name()))
			}
		}
		return true
	})
	if len(out) == 0 {
		t.Fatal("no fitness.v1 services registered")
	}
	slices.Sort(out)
	return out
}

// gRPC accepts the file as a default service configuration (NewClient
// parses it and fails on an invalid one, as the broken copy shows).
func TestGRPCParsesIt(t *testing.T) {
	conn, err := grpc.NewClient("dns:///results.example:7101", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(serviceconfig.JSON))
	if err != nil {
		t.Fatalf("gRPC refuses service_config.json: %v", err)
	}
	conn.Close()
	broken := `{"methodConfig":[{"name":[{"service":"fitness.v1.ResultService"}],"retryPolicy":{"maxAttempts":4}}]}`
	if conn, err := grpc.NewClient("dns:///results.example:7101", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(broken)); err == nil {
		conn.Close()
		t.Fatal("gRPC accepted a retry policy without backoff or codes: the parse check proves nothing")
	}
}

// Every method of the contracts has a decision, and the file retries
// exactly the methods decided so, each named once, on UNAVAILABLE only,
// balanced round robin.
func TestEveryMethodHasADecision(t *testing.T) {
	methods := contractMethods(t)
	var want []string
	for _, m := range methods {
		r, ok := retried[m]
		if !ok {
			t.Errorf("%s: no retry decision (add it to retried, and to service_config.json and docs/calling.md if safe to retry)", m)
		}
		if r {
			want = append(want, m)
		}
	}
	for m := range retried {
		if !slices.Contains(methods, m) {
			t.Errorf("%s: decided but not in the contracts", m)
		}
	}
	c := parse(t)
	var got []string
	for _, mc := range c.MethodConfig {
		if mc.RetryPolicy == nil {
			continue
		}
		if !slices.Equal(mc.RetryPolicy.RetryableStatusCodes, []string{"UNAVAILABLE"}) {
			t.Errorf("retryableStatusCodes %v: want [UNAVAILABLE] (ABORTED, RESOURCE_EXHAUSTED and DEADLINE_EXCEEDED are the application's, by reason)", mc.RetryPolicy.RetryableStatusCodes)
		}
		for _, n := range mc.Name {
			if n.Method == "" {
				t.Errorf("%s: a whole service is retried; name each method", n.Service)
			}
			got = append(got, n.Service+"/"+n.Method)
		}
	}
	slices.Sort(got)
	if len(slices.Compact(slices.Clone(got))) != len(got) {
		t.Errorf("a method is named twice: %v", got)
	}
	if !slices.Equal(got, want) {
		t.Errorf("retried methods:\n got %v\nwant %v", got, want)
	}
	if len(c.LoadBalancingConfig) != 1 || c.LoadBalancingConfig[0]["round_robin"] == nil {
		t.Errorf("loadBalancingConfig %v: want round_robin", c.LoadBalancingConfig)
	}
}
