package chstore

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/shopspring/decimal"

	"github.com/resultsync/resultsync/pkg/model/canonical"
)

// Row is one delivered version of a result, as stored in
// fitness_result_versions. RowVersion is computed by ClickHouse.
type Row struct {
	DetectID, DataID, UserID, ProjectID, SchoolID int64
	Grade                                         int16
	Version                                       int64
	Epoch                                         uint16
	Result                                        string // canonical decimal
	Unit                                          string
	IsDeleted                                     bool
	EventID, ShardID                              string
	SourceCommitMs, IngestMs                      int64
}

// Projection writes and reads the versioned projection.
type Projection struct {
	conn    driver.Conn
	cluster string // the ClickHouse cluster of a sharded projection; empty: one server
	// nodes opens connections to single nodes of the cluster (WithNodes).
	nodes *Options
	// settings is the durable SETTINGS clause of inserts (durable.go).
	settings *insertSettings
}

// NewProjection returns a Projection over conn (bound to the projection database).
func NewProjection(conn driver.Conn) *Projection {
	return &Projection{conn: conn, settings: &insertSettings{}}
}

// NewClusterProjection returns a Projection over conn, a connection to any
// node of the ClickHouse cluster named cluster (docs/cluster.md), or to one
// server when cluster is empty. Reads and inserts are the single server's
// (through the Distributed table of the same name); removals mutate the
// shards' local tables ON CLUSTER.
func NewClusterProjection(conn driver.Conn, cluster string) *Projection {
	return &Projection{conn: conn, cluster: cluster, settings: &insertSettings{}}
}

// WithNodes sets how p connects to one node of its cluster (o's database,
// credentials and timeouts; the address is each node's, from
// system.clusters), for the statements ClickHouse refuses ON CLUSTER: the
// rebuild's switch (AttachStaging). It returns p.
func (p *Projection) WithNodes(o Options) *Projection {
	p.nodes = &o
	return p
}

const insertVersions = `INSERT INTO fitness_result_versions
	(detect_id, data_id, user_id, project_id, school_id, grade, version, epoch, result, unit,
	 is_deleted, event_id, shard_id, source_commit_unix_ms, ingest_unix_ms)`

// Insert writes rows in one synchronous batch insert (async inserts pinned
// off where the server has them, see InsertSettings): when it returns nil,
// ClickHouse has stored every row. Inserting the same (data_id,
// version) again is harmless: current-state reads keep one row per record.
func (p *Projection) Insert(ctx context.Context, rows []Row) error {
	if len(rows) == 0 {
		return nil
	}
	b, err := p.prepareInsert(ctx, insertVersions)
	if err != nil {
		return fmt.Errorf("preparing insert of %d rows: %w", len(rows), err)
	}
	defer b.Abort() //nolint:errcheck // no-op after Send
	for _, r := range rows {
		dec, err := decimal.NewFromString(r.Result)
		if err != nil {
			return fmt.Errorf("row %s: result %q: %w", r.EventID, r.Result, err)
		}
		var del uint8
		if r.IsDeleted {
			del = 1
		}
		if err := b.Append(r.DetectID, r.DataID, r.UserID, r.ProjectID, r.SchoolID, r.Grade, r.Version, r.Epoch,
			dec, r.Unit, del, r.EventID, r.ShardID, r.SourceCommitMs, r.IngestMs); err != nil {
			return fmt.Errorf("row %s: %w", r.EventID, err)
		}
	}
	if err := b.Send(); err != nil {
		return fmt.Errorf("inserting %d rows: %w", len(rows), err)
	}
	return nil
}

// Current is the current state of one record.
type Current struct {
	DataID, Version, SchoolID, ProjectID int64
	Grade                                int16
	Result, Unit                         string
}

// CurrentState returns the live records of a campaign (latest version,
// tombstones excluded) ordered by data_id, results as canonical decimals
// ("2.31": the same on every ClickHouse version, whatever its printing).
func (p *Projection) CurrentState(ctx context.Context, detectID int64) ([]Current, error) {
	rows, err := p.conn.Query(ctx, `SELECT data_id, version, school_id, project_id, grade, toString(result), unit
		FROM fitness_result_current WHERE detect_id = ? ORDER BY data_id`, detectID)
	if err != nil {
		return nil, fmt.Errorf("reading current state of campaign %d: %w", detectID, err)
	}
	defer rows.Close()
	var out []Current
	for rows.Next() {
		var c Current
		if err := rows.Scan(&c.DataID, &c.Version, &c.SchoolID, &c.ProjectID, &c.Grade, &c.Result, &c.Unit); err != nil {
			return nil, fmt.Errorf("reading current state of campaign %d: %w", detectID, err)
		}
		if c.Result, err = canonical.Decimal(c.Result); err != nil {
			return nil, fmt.Errorf("reading current state of campaign %d, record %d: %w", detectID, c.DataID, err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// ProjectReport is one line of the campaign report.
type ProjectReport struct {
	ProjectID      int64
	Unit           string
	Results        uint64
	Mean, Min, Max string
}

// CampaignReport returns count, mean, min and max per test item of a
// campaign, as canonical decimals.
func (p *Projection) CampaignReport(ctx context.Context, detectID int64) ([]ProjectReport, error) {
	rows, err := p.conn.Query(ctx, `SELECT project_id, unit, results, toString(mean_result), toString(min_result), toString(max_result)
		FROM report_campaign_project WHERE detect_id = ? ORDER BY project_id, unit`, detectID)
	if err != nil {
		return nil, fmt.Errorf("reading report of campaign %d: %w", detectID, err)
	}
	defer rows.Close()
	var out []ProjectReport
	for rows.Next() {
		var r ProjectReport
		if err := rows.Scan(&r.ProjectID, &r.Unit, &r.Results, &r.Mean, &r.Min, &r.Max); err != nil {
			return nil, fmt.Errorf("reading report of campaign %d: %w", detectID, err)
		}
		for _, v := range []*string{&r.Mean, &r.Min, &r.Max} {
			if *v, err = canonical.Decimal(*v); err != nil {
				return nil, fmt.Errorf("reading report of campaign %d, project %d: %w", detectID, r.ProjectID, err)
			}
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// DeadLetter is an event the consumer could never write.
type DeadLetter struct {
	Time      time.Time
	MessageID string
	EventID   string
	Reason    string
	Payload   []byte
}

// InsertDeadLetter records a dead letter.
func (p *Projection) InsertDeadLetter(ctx context.Context, d DeadLetter) error {
	b, err := p.prepareInsert(ctx, "INSERT INTO dead_letters (dead_unix_ms, message_id, event_id, reason, payload)")
	if err != nil {
		return fmt.Errorf("recording dead letter: %w", err)
	}
	defer b.Abort() //nolint:errcheck // no-op after Send
	if err := b.Append(d.Time.UnixMilli(), d.MessageID, d.EventID, d.Reason, string(d.Payload)); err != nil {
		return fmt.Errorf("recording dead letter: %w", err)
	}
	if err := b.Send(); err != nil {
		return fmt.Errorf("recording dead letter: %w", err)
	}
	return nil
}

// DeadLetters lists dead letters, newest first, older than beforeMs when > 0.
func (p *Projection) DeadLetters(ctx context.Context, beforeMs int64, limit int) ([]DeadLetter, error) {
	q := "SELECT dead_unix_ms, message_id, event_id, reason FROM dead_letters"
	var args []any
	if beforeMs > 0 {
		q += " WHERE dead_unix_ms < ?"
		args = append(args, beforeMs)
	}
	q += fmt.Sprintf(" ORDER BY dead_unix_ms DESC LIMIT %d", limit)
	rows, err := p.conn.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("listing dead letters: %w", err)
	}
	defer rows.Close()
	var out []DeadLetter
	for rows.Next() {
		var d DeadLetter
		var ms int64
		if err := rows.Scan(&ms, &d.MessageID, &d.EventID, &d.Reason); err != nil {
			return nil, fmt.Errorf("listing dead letters: %w", err)
		}
		d.Time = time.UnixMilli(ms).UTC()
		out = append(out, d)
	}
	return out, rows.Err()
}
