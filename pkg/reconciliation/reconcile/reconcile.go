// Package reconcile compares the ClickHouse projection with the authoritative
// shard tables of a campaign and classifies every difference.
//
// The comparison is pushed down into both databases: each side returns, per
// bucket (data_id mod Buckets), the count of live records, the XOR of a
// (data_id, version, is_deleted) fingerprint, and the XOR of the stored
// content digests (see pkg/model/canonical; each database computes its own from the
// values it stores). Matching buckets are skipped; mismatching ones — and a
// sample of matching ones — are drilled into record by record, in chunks of
// buckets bounded by their row counts (ChunkRows), and each chunk's
// differences are handed on before the next chunk is read: memory and query
// size stay bounded whatever the number of differences (Stream,
// StreamBuckets). A stored run (Runner) drills into the differing buckets
// only after the grace period and once the projection reached the run's
// boundary, and counts a record whose newest version is still in flight
// (Flight) as delay, so ordinary lag is not reported as wrong data.
package reconcile

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Depth is how deep a comparison goes.
type Depth int

// Depths, from cheapest to most thorough.
const (
	DepthCounts   Depth = 1 // live counts per bucket
	DepthVersions Depth = 2 // + ids, versions and deletion state
	DepthContent  Depth = 3 // + canonical content digests
)

// Class classifies a discrepancy.
type Class int

// Classes (values match fitness.v1.DiscrepancyClass).
const (
	MissingInTarget        Class = 1
	StaleTargetVersion     Class = 2
	DeletionNotApplied     Class = 3
	ContentMismatch        Class = 4
	UnexpectedTargetRecord Class = 5
	TargetAheadOfSource    Class = 6
)

func (c Class) String() string {
	return [...]string{"NONE", "MISSING_IN_TARGET", "STALE_TARGET_VERSION", "DELETION_NOT_APPLIED",
		"CONTENT_MISMATCH", "UNEXPECTED_TARGET_RECORD", "TARGET_AHEAD_OF_SOURCE"}[c]
}

// Scope selects the records compared.
type Scope struct {
	DetectID  int64
	ProjectID int64 // 0 = any
	SchoolID  int64 // 0 = any
}

// Narrows reports whether the scope selects part of a campaign (a project
// or a school).
func (s Scope) Narrows() bool { return s.ProjectID != 0 || s.SchoolID != 0 }

// Campaign returns the scope of the whole campaign of s.
func (s Scope) Campaign() Scope { return Scope{DetectID: s.DetectID} }

// where returns the SQL predicate and arguments shared by both sides. The
// zero Scope (no campaign) selects every record: valid only for reads by id
// (Side.Records with ids), the identity lookups of a removal.
func (s Scope) where() (string, []any) {
	var conds []string
	var args []any
	if s.DetectID != 0 {
		conds = append(conds, "detect_id = ?")
		args = append(args, s.DetectID)
	}
	if s.ProjectID != 0 {
		conds = append(conds, "project_id = ?")
		args = append(args, s.ProjectID)
	}
	if s.SchoolID != 0 {
		conds = append(conds, "school_id = ?")
		args = append(args, s.SchoolID)
	}
	if len(conds) == 0 {
		return "1 = 1", nil
	}
	return strings.Join(conds, " AND "), args
}

// BucketSum summarises one bucket on one side.
type BucketSum struct {
	Live       int64  // records whose latest version is not deleted
	VersionXor uint64 // XOR of the version digests (canonical.VersionDigest of data_id, version, is_deleted) over all records
	DigestXor  uint64 // XOR of content digests over all records
}

// Record is one record's latest state on one side.
type Record struct {
	DataID    int64
	Version   int64
	Deleted   bool
	Digest    uint64
	Canonical string
	// DetectID and SchoolID say where the side holds the record (for
	// messages naming it; the comparison uses Digest).
	DetectID, SchoolID int64
}

// Side is one side of the comparison.
type Side interface {
	// Buckets returns the non-empty buckets of the scope.
	Buckets(ctx context.Context, s Scope, n int) (map[int]BucketSum, error)
	// Records returns the latest state of every record of the given buckets,
	// or of the given ids when ids is non-empty.
	Records(ctx context.Context, s Scope, n int, buckets []int, ids []int64) (map[int64]Record, error)
}

// Discrepancy is one classified difference.
type Discrepancy struct {
	Class          Class
	DataID         int64
	Source, Target *Record // nil when the side lacks the record
}

// Classify compares one record's two sides at depth; ok is false when they
// agree (for the current-state contract).
func Classify(src, dst *Record, depth Depth) (Class, bool) {
	switch {
	case src == nil && dst == nil:
		return 0, false
	case src == nil:
		if dst.Deleted {
			return 0, false // a tombstone of a record the source never had: nothing visible
		}
		return UnexpectedTargetRecord, true
	case dst == nil:
		if src.Deleted {
			return 0, false // deleted before it ever reached the projection: consistent
		}
		return MissingInTarget, true
	case dst.Version > src.Version:
		return TargetAheadOfSource, true
	case dst.Version < src.Version:
		if src.Deleted && !dst.Deleted {
			return DeletionNotApplied, true
		}
		if src.Deleted && dst.Deleted {
			return 0, false
		}
		return StaleTargetVersion, true
	case src.Deleted != dst.Deleted:
		// Equal versions, different deletion state: visible at every depth
		// (the live counts differ too).
		if src.Deleted {
			return DeletionNotApplied, true
		}
		return ContentMismatch, true
	case depth >= DepthContent && src.Digest != dst.Digest:
		return ContentMismatch, true
	}
	return 0, false
}

// settleIdentity keeps a scope from deciding identity: a record a scoped
// comparison (s narrows the campaign) found on one side only, MISSING_IN_TARGET
// or UNEXPECTED_TARGET_RECORD, is looked up by id on the other side within the
// whole campaign. Found there, it is classified against what that side holds,
// at CONTENT depth whatever the run's depth: inside the scope on one side and
// outside it on the other at the same version, its project or school differ,
// which is wrong content (CONTENT_MISMATCH, repaired by a rebuild), never a
// missing or unexpected record (a replay or a removal). A difference of version
// or deletion state is classified as usual (STALE_TARGET_VERSION, ...).
//
// Identity is (campaign, data_id): the campaign is part of the projection's
// sort key and never changes for a record. Removal goes further and refuses
// what the source holds in any campaign (pkg/recovery/repair).
func settleIdentity(ctx context.Context, src, dst Side, s Scope, ds []Discrepancy) ([]Discrepancy, error) {
	if !s.Narrows() {
		return ds, nil
	}
	var missing, unexpected []int64
	for _, d := range ds {
		switch d.Class {
		case MissingInTarget:
			missing = append(missing, d.DataID)
		case UnexpectedTargetRecord:
			unexpected = append(unexpected, d.DataID)
		}
	}
	if len(missing)+len(unexpected) == 0 {
		return ds, nil
	}
	var sr, tr map[int64]Record
	var serr, terr error
	both(func() {
		if len(unexpected) > 0 {
			sr, serr = src.Records(ctx, s.Campaign(), 0, nil, unexpected)
		}
	}, func() {
		if len(missing) > 0 {
			tr, terr = dst.Records(ctx, s.Campaign(), 0, nil, missing)
		}
	})
	if serr != nil {
		return nil, fmt.Errorf("source records outside the scope: %w", serr)
	}
	if terr != nil {
		return nil, fmt.Errorf("target records outside the scope: %w", terr)
	}
	out := make([]Discrepancy, 0, len(ds))
	for _, d := range ds {
		found := false
		if r, ok := tr[d.DataID]; ok && d.Class == MissingInTarget {
			d.Target, found = &r, true
		}
		if r, ok := sr[d.DataID]; ok && d.Class == UnexpectedTargetRecord {
			d.Source, found = &r, true
		}
		if found {
			c, bad := Classify(d.Source, d.Target, DepthContent)
			if !bad {
				continue
			}
			d.Class = c
		}
		out = append(out, d)
	}
	return out, nil
}

// compareRecords classifies every id present on either side.
func compareRecords(src, dst map[int64]Record, depth Depth) []Discrepancy {
	ids := map[int64]bool{}
	for id := range src {
		ids[id] = true
	}
	for id := range dst {
		ids[id] = true
	}
	var out []Discrepancy
	for id := range ids {
		var s, d *Record
		if r, ok := src[id]; ok {
			s = &r
		}
		if r, ok := dst[id]; ok {
			d = &r
		}
		if c, bad := Classify(s, d, depth); bad {
			out = append(out, Discrepancy{Class: c, DataID: id, Source: s, Target: d})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].DataID < out[j].DataID })
	return out
}

// bucketsDiffer reports whether two bucket summaries disagree at depth.
func bucketsDiffer(a, b BucketSum, depth Depth) bool {
	if a.Live != b.Live {
		return true
	}
	if depth >= DepthVersions && a.VersionXor != b.VersionXor {
		return true
	}
	return depth >= DepthContent && a.DigestXor != b.DigestXor
}

// Progress reports a comparison's advance.
type Progress struct {
	BucketsDone, BucketsTotal int64
	RowsCompared              int64
	Candidates                int64
}

// Result is the outcome of one comparison pass.
type Result struct {
	Discrepancies []Discrepancy
	Progress      Progress
}

// ChunkRows bounds the records (both sides together) one drill-down step
// reads: consecutive buckets are grouped until their live counts reach it
// (a bucket larger than it is read alone), at most 64 buckets per step.
const ChunkRows = 40_000

// IDChunk bounds the ids of one statement that reads records by id (well
// below ClickHouse's 256 KiB max_query_size and MySQL's placeholder limit).
const IDChunk = 4_000

// BucketLoad is a bucket and its records on both sides (live counts from
// the bucket summaries), used to size drill-down steps.
type BucketLoad struct {
	Bucket int
	Rows   int64
}

// chunks groups buckets into drill-down steps of at most ChunkRows rows and
// 64 buckets.
func chunks(loads []BucketLoad) [][]int {
	var out [][]int
	var cur []int
	var rows int64
	for _, l := range loads {
		if len(cur) > 0 && (rows+l.Rows > ChunkRows || len(cur) == 64) {
			out = append(out, cur)
			cur, rows = nil, 0
		}
		cur = append(cur, l.Bucket)
		rows += l.Rows
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// Emit receives the discrepancies of one drill-down step, sorted by data_id.
// An error stops the comparison and is returned by it.
type Emit func([]Discrepancy) error

// Compare runs one pass over the scope and returns every discrepancy (see
// Stream; it holds them all, so use Stream when there may be many).
func Compare(ctx context.Context, src, dst Side, s Scope, depth Depth, nBuckets int, sample func(bucket int) bool, progress func(Progress)) (Result, error) {
	var res Result
	p, _, err := Stream(ctx, src, dst, s, depth, nBuckets, sample, progress, func(ds []Discrepancy) error {
		res.Discrepancies = append(res.Discrepancies, ds...)
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	res.Progress = p
	return res, nil
}

// Stream runs one pass over the scope: bucket summaries from both sides
// (Summarize), drill-down into differing buckets and into a sample of
// matching ones, step by step (at most ChunkRows records per step), and
// per-record classification; each step's discrepancies go to emit before
// the next step is read. It returns the progress and the buckets that held
// discrepancies (with their sizes, for StreamBuckets).
func Stream(ctx context.Context, src, dst Side, s Scope, depth Depth, nBuckets int, sample func(bucket int) bool, progress func(Progress), emit Emit) (Progress, []BucketLoad, error) {
	p, drill, err := Summarize(ctx, src, dst, s, depth, nBuckets, sample)
	if err != nil {
		return Progress{}, nil, err
	}
	rows := map[int]int64{}
	for _, l := range drill {
		rows[l.Bucket] = l.Rows
	}
	var bad []BucketLoad
	done := p.BucketsDone
	err = drillInto(ctx, src, dst, s, depth, nBuckets, drill, func(chunk []int, ds []Discrepancy) error {
		seen := map[int]bool{}
		for _, d := range ds {
			if b := int(d.DataID % int64(nBuckets)); !seen[b] {
				seen[b] = true
				bad = append(bad, BucketLoad{Bucket: b, Rows: rows[b]})
			}
		}
		p.Candidates += int64(len(ds))
		done += int64(len(chunk))
		if len(ds) > 0 {
			if err := emit(ds); err != nil {
				return err
			}
		}
		if progress != nil {
			progress(Progress{BucketsDone: done, BucketsTotal: p.BucketsTotal, RowsCompared: p.RowsCompared, Candidates: p.Candidates})
		}
		return nil
	})
	if err != nil {
		return Progress{}, nil, err
	}
	sort.Slice(bad, func(i, j int) bool { return bad[i].Bucket < bad[j].Bucket })
	p.BucketsDone = p.BucketsTotal
	if progress != nil {
		progress(p)
	}
	return p, bad, nil
}

// Summarize compares the bucket summaries of both sides and returns the
// buckets to drill into: those that differ at depth, and those sample
// picks among the matching non-empty ones. The progress counts the
// matching buckets as done and every live record of both sides as
// compared.
func Summarize(ctx context.Context, src, dst Side, s Scope, depth Depth, nBuckets int, sample func(bucket int) bool) (Progress, []BucketLoad, error) {
	if depth < DepthCounts || depth > DepthContent {
		return Progress{}, nil, fmt.Errorf("invalid depth %d", depth)
	}
	// Both sides are read concurrently: they are different servers.
	var sb, db map[int]BucketSum
	var serr, derr error
	both(func() { sb, serr = src.Buckets(ctx, s, nBuckets) }, func() { db, derr = dst.Buckets(ctx, s, nBuckets) })
	if serr != nil {
		return Progress{}, nil, fmt.Errorf("source buckets: %w", serr)
	}
	if derr != nil {
		return Progress{}, nil, fmt.Errorf("target buckets: %w", derr)
	}
	p := Progress{BucketsTotal: int64(nBuckets)}
	var drill []BucketLoad
	for b := range nBuckets {
		x, y := sb[b], db[b]
		p.RowsCompared += x.Live + y.Live
		if bucketsDiffer(x, y, depth) || (sample != nil && (x != BucketSum{} || y != BucketSum{}) && sample(b)) {
			drill = append(drill, BucketLoad{Bucket: b, Rows: x.Live + y.Live})
		}
	}
	p.BucketsDone = int64(nBuckets - len(drill))
	return p, drill, nil
}

// StreamBuckets re-reads the given buckets (from Stream) on both sides,
// step by step, and hands each step's discrepancies to emit: the re-check
// of a pass whose candidates may be too many to hold. step, when set, is
// called after each step with the buckets done.
func StreamBuckets(ctx context.Context, src, dst Side, s Scope, depth Depth, nBuckets int, buckets []BucketLoad, emit Emit, step func(done int)) error {
	done := 0
	return drillInto(ctx, src, dst, s, depth, nBuckets, buckets, func(chunk []int, ds []Discrepancy) error {
		done += len(chunk)
		if len(ds) > 0 {
			if err := emit(ds); err != nil {
				return err
			}
		}
		if step != nil {
			step(done)
		}
		return nil
	})
}

// drillInto reads the buckets record by record in steps of at most
// ChunkRows rows and classifies each step.
func drillInto(ctx context.Context, src, dst Side, s Scope, depth Depth, nBuckets int, buckets []BucketLoad, each func(chunk []int, ds []Discrepancy) error) error {
	for _, chunk := range chunks(buckets) {
		var sr, tr map[int64]Record
		var serr, terr error
		both(func() { sr, serr = src.Records(ctx, s, nBuckets, chunk, nil) }, func() { tr, terr = dst.Records(ctx, s, nBuckets, chunk, nil) })
		if serr != nil {
			return fmt.Errorf("source records: %w", serr)
		}
		if terr != nil {
			return fmt.Errorf("target records: %w", terr)
		}
		ds, err := settleIdentity(ctx, src, dst, s, compareRecords(sr, tr, depth))
		if err != nil {
			return err
		}
		if err := each(chunk, ds); err != nil {
			return err
		}
	}
	return nil
}

// Recheck re-reads the candidates on both sides and keeps those that still
// disagree (with their current classification). The ids are read in sorted
// steps of IDChunk, so any number of candidates fits the databases' limits.
func Recheck(ctx context.Context, src, dst Side, s Scope, depth Depth, cands []Discrepancy) ([]Discrepancy, error) {
	if len(cands) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(cands))
	for i, c := range cands {
		ids[i] = c.DataID
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var out []Discrepancy
	for i := 0; i < len(ids); i += IDChunk {
		chunk := ids[i:min(i+IDChunk, len(ids))]
		var sr, tr map[int64]Record
		var serr, terr error
		both(func() { sr, serr = src.Records(ctx, s, 0, nil, chunk) }, func() { tr, terr = dst.Records(ctx, s, 0, nil, chunk) })
		if serr != nil {
			return nil, fmt.Errorf("re-checking source: %w", serr)
		}
		if terr != nil {
			return nil, fmt.Errorf("re-checking target: %w", terr)
		}
		ds, err := settleIdentity(ctx, src, dst, s, compareRecords(sr, tr, depth))
		if err != nil {
			return nil, fmt.Errorf("re-checking: %w", err)
		}
		out = append(out, ds...)
	}
	return out, nil
}

// both runs a and b concurrently and waits for them.
func both(a, b func()) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); a() }()
	b()
	wg.Wait()
}
