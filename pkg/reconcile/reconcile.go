// Package reconcile compares the ClickHouse projection with the authoritative
// shard tables of a campaign and classifies every difference.
//
// The comparison is pushed down into both databases: each side returns, per
// bucket (data_id mod Buckets), the count of live records, the XOR of a
// (data_id, version, is_deleted) fingerprint, and the XOR of the stored
// content digests (see pkg/canonical; each database computes its own from the
// values it stores). Matching buckets are skipped; mismatching ones — and a
// sample of matching ones — are drilled into record by record. Candidates are
// re-checked after a grace period, so ordinary lag is not reported.
package reconcile

import (
	"context"
	"fmt"
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

// where returns the SQL predicate and arguments shared by both sides.
func (s Scope) where() (string, []any) {
	conds := []string{"detect_id = ?"}
	args := []any{s.DetectID}
	if s.ProjectID != 0 {
		conds = append(conds, "project_id = ?")
		args = append(args, s.ProjectID)
	}
	if s.SchoolID != 0 {
		conds = append(conds, "school_id = ?")
		args = append(args, s.SchoolID)
	}
	return strings.Join(conds, " AND "), args
}

// BucketSum summarises one bucket on one side.
type BucketSum struct {
	Live       int64  // records whose latest version is not deleted
	VersionXor uint64 // XOR of (data_id << 20) ^ (version << 1) ^ is_deleted over all records
	DigestXor  uint64 // XOR of content digests over all records
}

// Record is one record's latest state on one side.
type Record struct {
	DataID    int64
	Version   int64
	Deleted   bool
	Digest    uint64
	Canonical string
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
		if src.Deleted {
			return DeletionNotApplied, true
		}
		return ContentMismatch, depth >= DepthContent
	case depth >= DepthContent && src.Digest != dst.Digest:
		return ContentMismatch, true
	}
	return 0, false
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

// Compare runs one pass over the scope: bucket summaries from both sides,
// drill-down into differing buckets and into a sample of matching ones
// (sample picks them), and per-record classification.
func Compare(ctx context.Context, src, dst Side, s Scope, depth Depth, nBuckets int, sample func(bucket int) bool, progress func(Progress)) (Result, error) {
	if depth < DepthCounts || depth > DepthContent {
		return Result{}, fmt.Errorf("invalid depth %d", depth)
	}
	// Both sides are read concurrently: they are different servers.
	var sb, db map[int]BucketSum
	var serr, derr error
	both(func() { sb, serr = src.Buckets(ctx, s, nBuckets) }, func() { db, derr = dst.Buckets(ctx, s, nBuckets) })
	if serr != nil {
		return Result{}, fmt.Errorf("source buckets: %w", serr)
	}
	if derr != nil {
		return Result{}, fmt.Errorf("target buckets: %w", derr)
	}
	var p Progress
	p.BucketsTotal = int64(nBuckets)
	var drill []int
	for b := range nBuckets {
		x, y := sb[b], db[b]
		p.RowsCompared += x.Live + y.Live
		if bucketsDiffer(x, y, depth) || (sample != nil && (x != BucketSum{} || y != BucketSum{}) && sample(b)) {
			drill = append(drill, b)
		}
	}
	var res Result
	for i := 0; i < len(drill); i += 64 {
		chunk := drill[i:min(i+64, len(drill))]
		var sr, tr map[int64]Record
		var serr, terr error
		both(func() { sr, serr = src.Records(ctx, s, nBuckets, chunk, nil) }, func() { tr, terr = dst.Records(ctx, s, nBuckets, chunk, nil) })
		if serr != nil {
			return Result{}, fmt.Errorf("source records: %w", serr)
		}
		if terr != nil {
			return Result{}, fmt.Errorf("target records: %w", terr)
		}
		res.Discrepancies = append(res.Discrepancies, compareRecords(sr, tr, depth)...)
		p.Candidates = int64(len(res.Discrepancies))
		if progress != nil {
			progress(Progress{BucketsDone: int64(i + len(chunk)), BucketsTotal: p.BucketsTotal, RowsCompared: p.RowsCompared, Candidates: p.Candidates})
		}
	}
	p.BucketsDone = p.BucketsTotal
	res.Progress = p
	if progress != nil {
		progress(p)
	}
	return res, nil
}

// Recheck re-reads the candidates on both sides and keeps those that still
// disagree (with their current classification).
func Recheck(ctx context.Context, src, dst Side, s Scope, depth Depth, cands []Discrepancy) ([]Discrepancy, error) {
	if len(cands) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(cands))
	for i, c := range cands {
		ids[i] = c.DataID
	}
	var sr, tr map[int64]Record
	var serr, terr error
	both(func() { sr, serr = src.Records(ctx, s, 0, nil, ids) }, func() { tr, terr = dst.Records(ctx, s, 0, nil, ids) })
	if serr != nil {
		return nil, fmt.Errorf("re-checking source: %w", serr)
	}
	if terr != nil {
		return nil, fmt.Errorf("re-checking target: %w", terr)
	}
	return compareRecords(sr, tr, depth), nil
}

// both runs a and b concurrently and waits for them.
func both(a, b func()) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); a() }()
	b()
	wg.Wait()
}
