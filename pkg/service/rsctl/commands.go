package rsctl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
)

// commands is every command, in the order the usage lists them.
func commands() []command {
	return []command{
		resultsRecord(), resultsCorrect(), resultsDelete(), resultsGet(), resultsList(),
		reconcileStart(), runsList(), runsGet(), runsWatch(), discrepanciesList(),
		repairPlan(), repairCreate(), repairApprove(), repairGet(), repairList(), repairItems(), repairWatch(), repairVerify(), repairCancel(),
		outboxStats(), outboxReplay(), projectionStatus(),
	}
}

func resultsRecord() command {
	var req fitnessv1.RecordResultRequest
	var grade int
	return command{
		path: "results record", summary: "record a new result (RecordResult)",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&req.RequestId, "request-id", "", "idempotency key: the same id returns the first answer (default: a fresh one, printed)")
			fs.Int64Var(&req.DataId, "data-id", 0, "the record's id")
			fs.Int64Var(&req.DetectId, "detect-id", 0, "campaign id")
			fs.Int64Var(&req.UserId, "user-id", 0, "student id")
			fs.Int64Var(&req.ProjectId, "project-id", 0, "test item id")
			fs.Int64Var(&req.SchoolId, "school", 0, "school id")
			fs.IntVar(&grade, "grade", 0, "grade")
			fs.StringVar(&req.Result, "result", "", "the measured value, a decimal (\"2.21\")")
			fs.StringVar(&req.Unit, "unit", "", "unit of the value (\"m\")")
		},
		run: func(ctx context.Context, e *env, _ []string) error {
			req.Grade = int32(grade) //nolint:gosec // the server validates the range
			req.RequestId = requestID(e, req.RequestId, "record")
			resp, err := call(ctx, e, (*env).results, func(ctx context.Context, c fitnessv1.ResultServiceClient) (*fitnessv1.RecordResultResponse, error) {
				return c.RecordResult(ctx, &req)
			})
			if err != nil {
				return err
			}
			return e.print(resp, func(t *tableWriter) {
				resultRows(t, resp.GetResult())
				t.line("event %s", resp.GetEventId())
			})
		},
	}
}

func resultsCorrect() command {
	var req fitnessv1.CorrectResultRequest
	return command{
		path: "results correct", summary: "correct a result at the version read (CorrectResult; a stale version exits 5)",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&req.RequestId, "request-id", "", "idempotency key (default: a fresh one, printed)")
			fs.Int64Var(&req.SchoolId, "school", 0, "school id")
			fs.Int64Var(&req.DataId, "data-id", 0, "the record's id")
			fs.Int64Var(&req.ExpectedVersion, "expected-version", 0, "the version read (optimistic concurrency)")
			fs.StringVar(&req.Result, "result", "", "the corrected value")
			fs.StringVar(&req.Unit, "unit", "", "unit of the value")
			fs.StringVar(&req.Reason, "reason", "", "why (audited)")
		},
		run: func(ctx context.Context, e *env, _ []string) error {
			req.RequestId = requestID(e, req.RequestId, "correct")
			resp, err := call(ctx, e, (*env).results, func(ctx context.Context, c fitnessv1.ResultServiceClient) (*fitnessv1.CorrectResultResponse, error) {
				return c.CorrectResult(ctx, &req)
			})
			if err != nil {
				return err
			}
			return e.print(resp, func(t *tableWriter) {
				resultRows(t, resp.GetResult())
				t.line("event %s", resp.GetEventId())
			})
		},
	}
}

func resultsDelete() command {
	var req fitnessv1.DeleteResultRequest
	return command{
		path: "results delete", summary: "delete a result at the version read (DeleteResult: a tombstone version)",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&req.RequestId, "request-id", "", "idempotency key (default: a fresh one, printed)")
			fs.Int64Var(&req.SchoolId, "school", 0, "school id")
			fs.Int64Var(&req.DataId, "data-id", 0, "the record's id")
			fs.Int64Var(&req.ExpectedVersion, "expected-version", 0, "the version read (optimistic concurrency)")
			fs.StringVar(&req.Reason, "reason", "", "why (audited)")
		},
		run: func(ctx context.Context, e *env, _ []string) error {
			req.RequestId = requestID(e, req.RequestId, "delete")
			resp, err := call(ctx, e, (*env).results, func(ctx context.Context, c fitnessv1.ResultServiceClient) (*fitnessv1.DeleteResultResponse, error) {
				return c.DeleteResult(ctx, &req)
			})
			if err != nil {
				return err
			}
			return e.print(resp, func(t *tableWriter) {
				resultRows(t, resp.GetResult())
				t.line("event %s", resp.GetEventId())
			})
		},
	}
}

func resultsGet() command {
	var req fitnessv1.GetResultRequest
	return command{
		path: "results get", summary: "read one result (GetResult)",
		flags: func(fs *flag.FlagSet) {
			fs.Int64Var(&req.SchoolId, "school", 0, "school id")
			fs.Int64Var(&req.DataId, "data-id", 0, "the record's id")
		},
		run: func(ctx context.Context, e *env, _ []string) error {
			resp, err := call(ctx, e, (*env).results, func(ctx context.Context, c fitnessv1.ResultServiceClient) (*fitnessv1.GetResultResponse, error) {
				return c.GetResult(ctx, &req)
			})
			if err != nil {
				return err
			}
			return e.print(resp, func(t *tableWriter) { resultRows(t, resp.GetResult()) })
		},
	}
}

// call runs one unary call on the client of e that client returns, with
// the token and --timeout.
func call[C, R any](ctx context.Context, e *env, client func(*env) (C, error), do func(context.Context, C) (R, error)) (R, error) {
	c, err := client(e)
	if err != nil {
		var zero R
		return zero, err
	}
	cctx, cancel := e.unary(ctx)
	defer cancel()
	return do(cctx, c)
}

// pageFlags are a list's --page-size and --page-token; the next page's
// token is a note on stderr (and in the JSON output).
func pageFlags(fs *flag.FlagSet, size *int, token *string) {
	fs.IntVar(size, "page-size", 0, "results per page (0: the server's default)")
	fs.StringVar(token, "page-token", "", "the next_page_token of the previous page")
}

func nextPage(e *env, token string) {
	if token != "" {
		e.notef("more: --page-token %s", token)
	}
}

func resultsList() command {
	var req fitnessv1.ListResultsRequest
	var size int
	return command{
		path: "results list", summary: "list results of a campaign, school or project (ListResults)",
		flags: func(fs *flag.FlagSet) {
			fs.Int64Var(&req.DetectId, "detect-id", 0, "campaign id")
			fs.Int64Var(&req.SchoolId, "school", 0, "school id")
			fs.Int64Var(&req.ProjectId, "project-id", 0, "test item id")
			fs.BoolVar(&req.ShowDeleted, "show-deleted", false, "include deleted results")
			pageFlags(fs, &size, &req.PageToken)
		},
		run: func(ctx context.Context, e *env, _ []string) error {
			req.PageSize = int32(size) //nolint:gosec // the server validates the range
			resp, err := call(ctx, e, (*env).results, func(ctx context.Context, c fitnessv1.ResultServiceClient) (*fitnessv1.ListResultsResponse, error) {
				return c.ListResults(ctx, &req)
			})
			if err != nil {
				return err
			}
			nextPage(e, resp.GetNextPageToken())
			return e.print(resp, func(t *tableWriter) { resultRows(t, resp.GetResults()...) })
		},
	}
}

func reconcileStart() command {
	var (
		req                 fitnessv1.StartReconciliationRunRequest
		sc                  fitnessv1.ReconcileScope
		depth               string
		wait, failOnDiscrep bool
	)
	return command{
		path: "reconcile start", summary: "start a reconciliation run (StartReconciliationRun); --wait follows it to its end",
		flags: func(fs *flag.FlagSet) {
			fs.Int64Var(&sc.DetectId, "detect-id", 0, "campaign id (0: every campaign)")
			fs.Int64Var(&sc.ProjectId, "project-id", 0, "test item id")
			fs.Int64Var(&sc.SchoolId, "school", 0, "school id")
			fs.StringVar(&depth, "depth", "content", "counts, versions or content")
			fs.Float64Var(&req.SampleRate, "sample-rate", 0, "fraction of buckets compared (0: all)")
			fs.BoolVar(&wait, "wait", false, "follow the run (progress on stderr) until it ends; exit 7 when it fails")
			fs.BoolVar(&failOnDiscrep, "fail-on-discrepancies", false, "with --wait: exit 8 when the run finds discrepancies")
			fs.StringVar(&req.RequestId, "request-id", "", "idempotency key: the same id returns the same run (default: a fresh one, printed)")
		},
		run: func(ctx context.Context, e *env, _ []string) error {
			d, err := enumFlag("depth", depth, "RECONCILE_DEPTH_", fitnessv1.ReconcileDepth_value)
			if err != nil {
				return err
			}
			if failOnDiscrep && !wait {
				return usagef("--fail-on-discrepancies needs --wait")
			}
			req.Depth, req.Scope = fitnessv1.ReconcileDepth(d), &sc
			req.RequestId = requestID(e, req.RequestId, "run")
			resp, err := call(ctx, e, (*env).reconcile, func(ctx context.Context, c fitnessv1.ReconcileServiceClient) (*fitnessv1.StartReconciliationRunResponse, error) {
				return c.StartReconciliationRun(ctx, &req)
			})
			if err != nil {
				return err
			}
			if !wait {
				return e.print(resp, func(t *tableWriter) { runRows(t, resp.GetRun()) })
			}
			e.notef("run %s started", resp.GetRun().GetRunId())
			return waitRun(ctx, e, resp.GetRun().GetRunId(), failOnDiscrep)
		},
	}
}

// waitRun follows a run to its end, printing progress on stderr and the
// final run on stdout.
func waitRun(ctx context.Context, e *env, id string, failOnDiscrep bool) error {
	c, err := e.reconcile()
	if err != nil {
		return err
	}
	var last *fitnessv1.WatchReconciliationRunResponse
	err = follow(ctx, e, func(ctx context.Context) (grpc.ServerStreamingClient[fitnessv1.WatchReconciliationRunResponse], error) {
		return c.WatchReconciliationRun(ctx, &fitnessv1.WatchReconciliationRunRequest{RunId: id})
	}, func(m *fitnessv1.WatchReconciliationRunResponse) bool {
		last = m
		e.notef("%s", runProgress(m.GetRun()))
		return runEnded(m.GetRun().GetState())
	})
	if err != nil {
		return err
	}
	r := last.GetRun()
	if err := e.print(last, func(t *tableWriter) { runRows(t, r) }); err != nil {
		return err
	}
	switch {
	case r.GetState() != fitnessv1.RunState_RUN_STATE_SUCCEEDED:
		return exitError{ExitWaitFailed, fmt.Sprintf("run %s ended %s: %s", id, enum(r.GetState(), "RUN_STATE_"), dash(r.GetErrorMessage()+r.GetMessage()))}
	case failOnDiscrep && r.GetDiscrepancyCount() > 0:
		return exitError{ExitDiscrepancies, fmt.Sprintf("run %s found %d discrepancies (rsctl discrepancies list %s)", id, r.GetDiscrepancyCount(), id)}
	}
	return nil
}

func runEnded(s fitnessv1.RunState) bool {
	return s == fitnessv1.RunState_RUN_STATE_SUCCEEDED || s == fitnessv1.RunState_RUN_STATE_FAILED ||
		s == fitnessv1.RunState_RUN_STATE_BOUNDARY_NOT_REACHED
}

// follow reads a watch stream, handing every message to handle until it
// reports the end. A stream that ends early (the server's maximum watch
// duration, a restart: UNAVAILABLE or a clean end) is opened again, which
// sends the current state first; five failed attempts in a row give up.
func follow[T any](ctx context.Context, e *env, open func(context.Context) (grpc.ServerStreamingClient[T], error), handle func(*T) bool) error {
	ctx, cancel := context.WithCancel(e.withToken(ctx))
	defer cancel()
	failures := 0
	for {
		stream, err := open(ctx)
		for err == nil {
			var m *T
			if m, err = stream.Recv(); err == nil {
				failures = 0
				if handle(m) {
					return nil
				}
			}
		}
		if !errors.Is(err, io.EOF) && status.Code(err) != codes.Unavailable {
			return err
		}
		if failures++; failures >= 5 {
			return fmt.Errorf("watching: the stream ended %d times in a row: %w", failures, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func runsList() command {
	var req fitnessv1.ListReconciliationRunsRequest
	var size int
	return command{
		path: "runs list", summary: "list reconciliation runs, newest first (ListReconciliationRuns)",
		flags: func(fs *flag.FlagSet) {
			fs.Int64Var(&req.DetectId, "detect-id", 0, "only this campaign's runs")
			pageFlags(fs, &size, &req.PageToken)
		},
		run: func(ctx context.Context, e *env, _ []string) error {
			req.PageSize = int32(size) //nolint:gosec // the server validates the range
			resp, err := call(ctx, e, (*env).reconcile, func(ctx context.Context, c fitnessv1.ReconcileServiceClient) (*fitnessv1.ListReconciliationRunsResponse, error) {
				return c.ListReconciliationRuns(ctx, &req)
			})
			if err != nil {
				return err
			}
			nextPage(e, resp.GetNextPageToken())
			return e.print(resp, func(t *tableWriter) { runRows(t, resp.GetRuns()...) })
		},
	}
}

func runsGet() command {
	return command{
		path: "runs get", args: "RUN_ID", nargs: 1, summary: "one reconciliation run (GetReconciliationRun)",
		run: func(ctx context.Context, e *env, pos []string) error {
			resp, err := call(ctx, e, (*env).reconcile, func(ctx context.Context, c fitnessv1.ReconcileServiceClient) (*fitnessv1.GetReconciliationRunResponse, error) {
				return c.GetReconciliationRun(ctx, &fitnessv1.GetReconciliationRunRequest{RunId: pos[0]})
			})
			if err != nil {
				return err
			}
			return e.print(resp, func(t *tableWriter) {
				runRows(t, resp.GetRun())
				for _, s := range resp.GetRun().GetShards() {
					t.line("shard %s: boundary %s, applied %s, behind %v, in flight %d", s.GetShardId(), ts(s.GetBoundaryTime()),
						ts(s.GetAppliedTime()), s.GetBehind(), s.GetInFlightCount())
				}
			})
		},
	}
}

func runsWatch() command {
	var failOnDiscrep bool
	return command{
		path: "runs watch", args: "RUN_ID", nargs: 1, summary: "follow a run until it ends (WatchReconciliationRun), as reconcile start --wait",
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&failOnDiscrep, "fail-on-discrepancies", false, "exit 8 when the run finds discrepancies")
		},
		run: func(ctx context.Context, e *env, pos []string) error {
			return waitRun(ctx, e, pos[0], failOnDiscrep)
		},
	}
}

func discrepanciesList() command {
	var req fitnessv1.ListDiscrepanciesRequest
	var size int
	var class string
	return command{
		path: "discrepancies list", args: "RUN_ID", nargs: 1, summary: "what a run found (ListDiscrepancies)",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&class, "class", "", "only this class (missing-in-target, stale-target-version, ...)")
			fs.BoolVar(&req.UnresolvedOnly, "unresolved-only", false, "only discrepancies no later run or verified repair resolved")
			pageFlags(fs, &size, &req.PageToken)
		},
		run: func(ctx context.Context, e *env, pos []string) error {
			cl, err := enumFlag("class", class, "DISCREPANCY_CLASS_", fitnessv1.DiscrepancyClass_value)
			if err != nil {
				return err
			}
			req.RunId, req.Class, req.PageSize = pos[0], fitnessv1.DiscrepancyClass(cl), int32(size) //nolint:gosec // the server validates the range
			resp, err := call(ctx, e, (*env).reconcile, func(ctx context.Context, c fitnessv1.ReconcileServiceClient) (*fitnessv1.ListDiscrepanciesResponse, error) {
				return c.ListDiscrepancies(ctx, &req)
			})
			if err != nil {
				return err
			}
			nextPage(e, resp.GetNextPageToken())
			return e.print(resp, func(t *tableWriter) { discrepancyRows(t, resp.GetDiscrepancies()...) })
		},
	}
}

func repairPlan() command {
	var req fitnessv1.PlanRepairRequest
	var ids stringList
	var epoch, maxItems int
	return command{
		path: "repair plan", args: "RUN_ID", nargs: 1, summary: "what a repair of a run's discrepancies would do, changing nothing (PlanRepair)",
		flags: func(fs *flag.FlagSet) {
			fs.Var(&ids, "discrepancy", "only this discrepancy id (repeatable; default: all of the run's unresolved ones)")
			fs.IntVar(&epoch, "rebuild-epoch", 0, "the epoch a rebuild would write (must exceed the epoch floor)")
			fs.IntVar(&maxItems, "max-items", 0, "items listed at most (0: the server's default)")
		},
		run: func(ctx context.Context, e *env, pos []string) error {
			req.RunId, req.DiscrepancyIds = pos[0], ids
			req.RebuildEpoch, req.MaxItems = int32(epoch), int32(maxItems) //nolint:gosec // the server validates the range
			resp, err := call(ctx, e, (*env).repair, func(ctx context.Context, c fitnessv1.RepairServiceClient) (*fitnessv1.PlanRepairResponse, error) {
				return c.PlanRepair(ctx, &req)
			})
			if err != nil {
				return err
			}
			return e.print(resp, func(t *tableWriter) {
				t.row("ACTION", "ITEMS", "NEEDS_APPROVAL")
				for _, a := range resp.GetActions() {
					t.row(enum(a.GetAction(), "REPAIR_ACTION_"), a.GetItems(), a.GetRequiresApproval())
				}
				t.line("\nscope %s, %d item(s), %d skipped, epoch floor %d (a rebuild's epoch: %d or more)\n",
					scope(resp.GetScope()), resp.GetItemsTotal(), resp.GetSkipped(), resp.GetEpochFloor(), resp.GetEpochFloor()+1)
				itemRows(t, resp.GetItems()...)
				if resp.GetItemsTruncated() {
					t.line("(items truncated: --max-items)")
				}
			})
		},
	}
}

func repairCreate() command {
	var req fitnessv1.CreateRepairRequest
	var ids stringList
	var epoch int
	return command{
		path: "repair create", args: "RUN_ID", nargs: 1, summary: "create the repairs of a run's discrepancies, one per action (CreateRepair)",
		flags: func(fs *flag.FlagSet) {
			fs.Var(&ids, "discrepancy", "only this discrepancy id (repeatable; default: all of the run's unresolved ones)")
			fs.StringVar(&req.Reason, "reason", "", "why (audited; required)")
			fs.StringVar(&req.RequestId, "request-id", "", "idempotency key (default: a fresh one, printed)")
			fs.IntVar(&epoch, "rebuild-epoch", 0, "the epoch of a rebuild, above the plan's epoch floor (needed when the plan holds a rebuild)")
		},
		run: func(ctx context.Context, e *env, pos []string) error {
			req.RunId, req.DiscrepancyIds, req.RebuildEpoch = pos[0], ids, int32(epoch) //nolint:gosec // the server validates the range
			req.RequestId = requestID(e, req.RequestId, "repair")
			resp, err := call(ctx, e, (*env).repair, func(ctx context.Context, c fitnessv1.RepairServiceClient) (*fitnessv1.CreateRepairResponse, error) {
				return c.CreateRepair(ctx, &req)
			})
			if err != nil {
				return err
			}
			return e.print(resp, func(t *tableWriter) { repairRows(t, resp.GetRepairs()...) })
		},
	}
}

// repairByID is a command taking a repair id, an optional reason and a
// request id (idempotency key: given with --request-id, else a fresh one,
// printed; what names it).
func repairByID(path, what, summary string, reason bool,
	do func(ctx context.Context, c fitnessv1.RepairServiceClient, id, reason, requestID string) (*fitnessv1.Repair, proto.Message, error)) command {
	var why, requestIDFlag string
	return command{
		path: path, args: "REPAIR_ID", nargs: 1, summary: summary,
		flags: func(fs *flag.FlagSet) {
			if reason {
				fs.StringVar(&why, "reason", "", "why (audited)")
			}
			fs.StringVar(&requestIDFlag, "request-id", "", "idempotency key: the same id returns the first answer (default: a fresh one, printed)")
		},
		run: func(ctx context.Context, e *env, pos []string) error {
			var r *fitnessv1.Repair
			rid := requestID(e, requestIDFlag, what)
			resp, err := call(ctx, e, (*env).repair, func(ctx context.Context, c fitnessv1.RepairServiceClient) (proto.Message, error) {
				var resp proto.Message
				var err error
				r, resp, err = do(ctx, c, pos[0], why, rid)
				return resp, err
			})
			if err != nil {
				return err
			}
			return e.print(resp, func(t *tableWriter) { repairRows(t, r) })
		},
	}
}

func repairApprove() command {
	return repairByID("repair approve", "approve", "approve a repair that awaits it (ApproveRepair; an admin other than its requester)", true,
		func(ctx context.Context, c fitnessv1.RepairServiceClient, id, reason, requestID string) (*fitnessv1.Repair, proto.Message, error) {
			resp, err := c.ApproveRepair(ctx, &fitnessv1.ApproveRepairRequest{RepairId: id, Reason: reason, RequestId: requestID})
			return resp.GetRepair(), resp, err
		})
}

func repairVerify() command {
	return repairByID("repair verify", "verify", "verify a repair again: compare exactly its keys (VerifyRepair)", true,
		func(ctx context.Context, c fitnessv1.RepairServiceClient, id, reason, requestID string) (*fitnessv1.Repair, proto.Message, error) {
			resp, err := c.VerifyRepair(ctx, &fitnessv1.VerifyRepairRequest{RepairId: id, Reason: reason, RequestId: requestID})
			return resp.GetRepair(), resp, err
		})
}

func repairCancel() command {
	return repairByID("repair cancel", "cancel", "cancel a repair that has not finished (CancelRepair)", true,
		func(ctx context.Context, c fitnessv1.RepairServiceClient, id, reason, requestID string) (*fitnessv1.Repair, proto.Message, error) {
			resp, err := c.CancelRepair(ctx, &fitnessv1.CancelRepairRequest{RepairId: id, Reason: reason, RequestId: requestID})
			return resp.GetRepair(), resp, err
		})
}

func repairGet() command {
	return command{
		path: "repair get", args: "REPAIR_ID", nargs: 1, summary: "one repair and its state transitions (GetRepair)",
		run: func(ctx context.Context, e *env, pos []string) error {
			resp, err := call(ctx, e, (*env).repair, func(ctx context.Context, c fitnessv1.RepairServiceClient) (*fitnessv1.GetRepairResponse, error) {
				return c.GetRepair(ctx, &fitnessv1.GetRepairRequest{RepairId: pos[0]})
			})
			if err != nil {
				return err
			}
			return e.print(resp, func(t *tableWriter) {
				repairRows(t, resp.GetRepair())
				t.line("")
				t.row("FROM", "TO", "ACTOR", "AT", "NOTE")
				for _, s := range resp.GetTransitions() {
					t.row(enum(s.GetFromState(), "REPAIR_STATE_"), enum(s.GetToState(), "REPAIR_STATE_"), dash(s.GetActor()),
						ts(s.GetCreateTime()), dash(s.GetNote()))
				}
			})
		},
	}
}

func repairList() command {
	var req fitnessv1.ListRepairsRequest
	var size int
	var state string
	return command{
		path: "repair list", summary: "list repairs (ListRepairs)",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&req.RunId, "run", "", "only the repairs of this run")
			fs.StringVar(&state, "state", "", "only repairs in this state (awaiting-approval, executing, awaiting-verification, verified, failed, cancelled)")
			pageFlags(fs, &size, &req.PageToken)
		},
		run: func(ctx context.Context, e *env, _ []string) error {
			st, err := enumFlag("state", state, "REPAIR_STATE_", fitnessv1.RepairState_value)
			if err != nil {
				return err
			}
			req.State, req.PageSize = fitnessv1.RepairState(st), int32(size) //nolint:gosec // the server validates the range
			resp, err := call(ctx, e, (*env).repair, func(ctx context.Context, c fitnessv1.RepairServiceClient) (*fitnessv1.ListRepairsResponse, error) {
				return c.ListRepairs(ctx, &req)
			})
			if err != nil {
				return err
			}
			nextPage(e, resp.GetNextPageToken())
			return e.print(resp, func(t *tableWriter) { repairRows(t, resp.GetRepairs()...) })
		},
	}
}

func repairItems() command {
	var req fitnessv1.ListRepairItemsRequest
	var size int
	return command{
		path: "repair items", args: "REPAIR_ID", nargs: 1, summary: "a repair's items: what it does to each record, and the origins of what it removes (ListRepairItems)",
		flags: func(fs *flag.FlagSet) { pageFlags(fs, &size, &req.PageToken) },
		run: func(ctx context.Context, e *env, pos []string) error {
			req.RepairId, req.PageSize = pos[0], int32(size) //nolint:gosec // the server validates the range
			resp, err := call(ctx, e, (*env).repair, func(ctx context.Context, c fitnessv1.RepairServiceClient) (*fitnessv1.ListRepairItemsResponse, error) {
				return c.ListRepairItems(ctx, &req)
			})
			if err != nil {
				return err
			}
			nextPage(e, resp.GetNextPageToken())
			return e.print(resp, func(t *tableWriter) {
				itemRows(t, resp.GetItems()...)
				for _, i := range resp.GetItems() {
					for _, o := range i.GetOrigins() {
						t.line("origin of data_id %d: v%d epoch %d event %s shard %s ingested %s", i.GetDataId(), o.GetVersion(), o.GetEpoch(),
							dash(o.GetEventId()), dash(o.GetShardId()), ts(o.GetIngestTime()))
					}
				}
			})
		},
	}
}

func repairWatch() command {
	return command{
		path: "repair watch", args: "REPAIR_ID", nargs: 1,
		summary: "follow a repair until it ends (WatchRepair; progress on stderr); exit 7 when it fails or is cancelled",
		run: func(ctx context.Context, e *env, pos []string) error {
			c, err := e.repair()
			if err != nil {
				return err
			}
			var last *fitnessv1.WatchRepairResponse
			err = follow(ctx, e, func(ctx context.Context) (grpc.ServerStreamingClient[fitnessv1.WatchRepairResponse], error) {
				return c.WatchRepair(ctx, &fitnessv1.WatchRepairRequest{RepairId: pos[0]})
			}, func(m *fitnessv1.WatchRepairResponse) bool {
				last = m
				e.notef("%s", repairProgress(m.GetRepair()))
				return repairEnded(m.GetRepair().GetState())
			})
			if err != nil {
				return err
			}
			r := last.GetRepair()
			if err := e.print(last, func(t *tableWriter) { repairRows(t, r) }); err != nil {
				return err
			}
			if r.GetState() != fitnessv1.RepairState_REPAIR_STATE_VERIFIED {
				return exitError{ExitWaitFailed, fmt.Sprintf("repair %s ended %s: %s", pos[0], enum(r.GetState(), "REPAIR_STATE_"), dash(r.GetMessage()))}
			}
			return nil
		},
	}
}

func repairEnded(s fitnessv1.RepairState) bool {
	return s == fitnessv1.RepairState_REPAIR_STATE_VERIFIED || s == fitnessv1.RepairState_REPAIR_STATE_FAILED ||
		s == fitnessv1.RepairState_REPAIR_STATE_CANCELLED
}

func outboxStats() command {
	var req fitnessv1.GetOutboxStatsRequest
	return command{
		path: "outbox stats", summary: "every shard's outbox: backlog, parked events, oldest unsent age (GetOutboxStats)",
		flags: func(fs *flag.FlagSet) { fs.StringVar(&req.ShardId, "shard", "", "only this shard") },
		run: func(ctx context.Context, e *env, _ []string) error {
			resp, err := call(ctx, e, (*env).outbox, func(ctx context.Context, c fitnessv1.OutboxServiceClient) (*fitnessv1.GetOutboxStatsResponse, error) {
				return c.GetOutboxStats(ctx, &req)
			})
			if err != nil {
				return err
			}
			return e.print(resp, func(t *tableWriter) {
				t.row("SHARD", "NEW", "PROCESSING", "FAILED", "PARKED", "SENT", "EXPIRED_CLAIMS", "OLDEST_UNSENT_AGE")
				for _, s := range resp.GetShards() {
					t.row(s.GetShardId(), s.GetNewCount(), s.GetProcessingCount(), s.GetFailedCount(), s.GetParkedCount(), s.GetSentCount(),
						s.GetExpiredClaims(), dur(s.GetOldestUnsentAge()))
				}
			})
		},
	}
}

func outboxReplay() command {
	var req fitnessv1.ReplayParkedEventsRequest
	var ids int64List
	var limit int
	return command{
		path: "outbox replay", summary: "send parked events of a shard again (ReplayParkedEvents; audited)",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&req.ShardId, "shard", "", "the shard (required)")
			fs.Var(&ids, "id", "only this outbox row id (repeatable)")
			fs.Int64Var(&req.DataId, "data-id", 0, "only the parked events of this record")
			fs.IntVar(&limit, "limit", 0, "at most this many events (0: the server's default)")
			fs.StringVar(&req.Reason, "reason", "", "why (audited; required)")
			fs.StringVar(&req.RequestId, "request-id", "", "idempotency key: the same id replays nothing twice (default: a fresh one, printed)")
		},
		run: func(ctx context.Context, e *env, _ []string) error {
			req.Ids, req.Limit = ids, int32(limit) //nolint:gosec // the server validates the range
			req.RequestId = requestID(e, req.RequestId, "replay")
			resp, err := call(ctx, e, (*env).outbox, func(ctx context.Context, c fitnessv1.OutboxServiceClient) (*fitnessv1.ReplayParkedEventsResponse, error) {
				return c.ReplayParkedEvents(ctx, &req)
			})
			if err != nil {
				return err
			}
			return e.print(resp, func(t *tableWriter) {
				t.row("REPLAYED", "AUDIT_ID")
				t.row(resp.GetReplayedCount(), dash(resp.GetAuditId()))
			})
		},
	}
}

func projectionStatus() command {
	return command{
		path: "projection status", summary: "the projection's lag per shard, applied and dead-lettered events (GetProjectionStatus)",
		run: func(ctx context.Context, e *env, _ []string) error {
			resp, err := call(ctx, e, (*env).projection, func(ctx context.Context, c fitnessv1.ProjectionServiceClient) (*fitnessv1.GetProjectionStatusResponse, error) {
				return c.GetProjectionStatus(ctx, &fitnessv1.GetProjectionStatusRequest{})
			})
			if err != nil {
				return err
			}
			return e.print(resp, func(t *tableWriter) {
				t.row("SHARD", "NEWEST_APPLIED_COMMIT", "LAG", "INGEST_DELAY")
				for _, s := range resp.GetShards() {
					t.row(s.GetShardId(), ts(s.GetNewestAppliedCommitTime()), dur(s.GetLag()), dur(s.GetIngestDelay()))
				}
				t.line("\napplied events %d, dead-lettered %d", resp.GetAppliedEvents(), resp.GetDeadLetteredEvents())
			})
		},
	}
}
