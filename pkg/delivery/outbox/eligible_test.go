package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/outboxtest"
)

// Eligible answers what a claim would find, for every status: a NEW row,
// a FAILED row whose retry time has come, a PROCESSING row whose lease
// expired; not a row not due yet, a live lease, a SENT or PARKED row, and
// it agrees with ClaimBatch each time.
func TestEligibleAgreesWithClaim(t *testing.T) {
	ctx := context.Background()
	db := infratest.NewMySQLDatabase(t, schema.Shard)
	repo := outbox.NewRepo("shard-0", db.DB)
	check := func(step string, want bool) {
		t.Helper()
		got, err := repo.Eligible(ctx)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if got != want {
			t.Errorf("%s: Eligible = %v, want %v", step, got, want)
		}
	}
	set := func(status string, due time.Duration) {
		t.Helper()
		if _, err := db.DB.ExecContext(ctx, "UPDATE outbox_event SET status = ?, claim_token = IF(? = 'PROCESSING', 'tok', NULL), due_time = ?",
			status, status, time.Now().UTC().Add(due)); err != nil {
			t.Fatal(err)
		}
	}

	check("empty outbox", false)
	if _, err := outboxtest.Fill(ctx, db.DB, "shard-0", 900000, 1); err != nil {
		t.Fatal(err)
	}
	check("a NEW row", true)
	set("NEW", time.Hour)
	check("a NEW row due in an hour", false)
	set("FAILED", time.Hour)
	check("a FAILED row retried in an hour", false)
	set("FAILED", -time.Second)
	check("a FAILED row due", true)
	set("PROCESSING", time.Hour)
	check("a PROCESSING row under a live lease", false)
	set("PROCESSING", -time.Second)
	check("a PROCESSING row whose lease expired", true)
	c, err := repo.ClaimBatch(ctx, outbox.ClaimSpec{Limit: 10, Lease: time.Minute})
	if err != nil || len(c.Rows) != 1 {
		t.Fatalf("claiming the expired row: %d rows, %v", len(c.Rows), err)
	}
	check("the row claimed again (a live lease)", false)
	if _, err := repo.MarkSent(ctx, c.Token, []int64{c.Rows[0].ID}); err != nil {
		t.Fatal(err)
	}
	check("the row SENT", false)
	set("PARKED", -time.Second)
	check("a PARKED row", false)
	if c, err := repo.ClaimBatch(ctx, outbox.ClaimSpec{Limit: 10, Lease: time.Minute}); err != nil || len(c.Rows)+len(c.Parked) != 0 {
		t.Errorf("a claim where Eligible found nothing: %d rows, %d parked, %v", len(c.Rows), len(c.Parked), err)
	}
}
