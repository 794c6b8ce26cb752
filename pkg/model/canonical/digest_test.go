package canonical_test

import (
	"encoding/json"
	"flag"
	"os"
	"strconv"
	"testing"

	"github.com/resultsync/resultsync/pkg/model/canonical"
)

// update rewrites testdata/digest_vectors.json from the records it holds:
// the strings and digests Go computes (go test ./pkg/model/canonical -run
// TestDigestVectors -update). Every engine must then reproduce them
// (pkg/storage/schema TestDigestVectorsIn*, TestVersionDigestVectorsIn*).
var update = flag.Bool("update", false, "rewrite testdata/digest_vectors.json with the values Go computes")

func TestDigestVectors(t *testing.T) {
	vs, err := canonical.Vectors()
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) < 8 {
		t.Fatalf("only %d vectors", len(vs))
	}
	if *update {
		for i := range vs {
			r := vs[i].Record
			if vs[i].Canonical, err = canonical.String(r); err != nil {
				t.Fatal(err)
			}
			d, _ := canonical.Digest(r)
			vs[i].Digest = strconv.FormatUint(d, 10)
			vs[i].VersionCanonical = canonical.VersionString(r)
			vs[i].VersionDigest = strconv.FormatUint(canonical.VersionDigest(r), 10)
		}
		b, err := json.MarshalIndent(vs, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("testdata/digest_vectors.json", append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("rewrote testdata/digest_vectors.json; run again without -update")
		return
	}
	for _, v := range vs {
		t.Run(v.Name, func(t *testing.T) {
			s, err := canonical.String(v.Record)
			if err != nil || s != v.Canonical {
				t.Errorf("String = %q, %v; want %q", s, err, v.Canonical)
			}
			d, err := canonical.Digest(v.Record)
			if err != nil || d != v.DigestValue() {
				t.Errorf("Digest = %d, %v; want %s", d, err, v.Digest)
			}
			if vs := canonical.VersionString(v.Record); vs != v.VersionCanonical {
				t.Errorf("VersionString = %q; want %q", vs, v.VersionCanonical)
			}
			if vd := canonical.VersionDigest(v.Record); vd != v.VersionDigestValue() || v.VersionDigest == "" {
				t.Errorf("VersionDigest = %d; want %s", vd, v.VersionDigest)
			}
		})
	}
}

func TestTrailingZerosDoNotChangeTheDigest(t *testing.T) {
	a := canonical.Record{DataID: 1, Version: 2, DetectID: 3, UserID: 4, ProjectID: 3, SchoolID: 7, Grade: 5, Result: "2.31", Unit: "m"}
	b := a
	b.Result = "2.310"
	da, _ := canonical.Digest(a)
	db, _ := canonical.Digest(b)
	if da != db {
		t.Errorf("2.31 and 2.310 digest differently: %d vs %d", da, db)
	}
}

// Every field of the record is compared: a record differing from a in any
// one field, each in turn, digests differently; the version digest changes
// exactly with data_id, version and deletion state.
func TestEveryFieldChangesTheDigest(t *testing.T) {
	a := canonical.Record{DataID: 900001, Version: 2, DetectID: 10001, UserID: 4, ProjectID: 3, SchoolID: 7, Grade: 5, Result: "2.31", Unit: "m"}
	fields := []struct {
		name        string
		change      func(r *canonical.Record)
		versionPart bool
	}{
		{"data_id", func(r *canonical.Record) { r.DataID++ }, true},
		{"version", func(r *canonical.Record) { r.Version++ }, true},
		{"is_deleted", func(r *canonical.Record) { r.IsDeleted = true }, true},
		{"detect_id", func(r *canonical.Record) { r.DetectID++ }, false},
		{"user_id", func(r *canonical.Record) { r.UserID++ }, false},
		{"project_id", func(r *canonical.Record) { r.ProjectID++ }, false},
		{"school_id", func(r *canonical.Record) { r.SchoolID++ }, false},
		{"grade", func(r *canonical.Record) { r.Grade++ }, false},
		{"result", func(r *canonical.Record) { r.Result = "2.311" }, false},
		{"unit", func(r *canonical.Record) { r.Unit = "cm" }, false},
	}
	da, err := canonical.Digest(a)
	if err != nil {
		t.Fatal(err)
	}
	va := canonical.VersionDigest(a)
	for _, f := range fields {
		b := a
		f.change(&b)
		if db, err := canonical.Digest(b); err != nil || db == da {
			t.Errorf("a different %s gives the same digest (%d, %v)", f.name, db, err)
		}
		if vb := canonical.VersionDigest(b); (vb != va) != f.versionPart {
			t.Errorf("a different %s: version digest changed = %t, want %t", f.name, vb != va, f.versionPart)
		}
	}
}

// The fingerprint that the version digest replaced, (data_id << 20) ^
// (version << 1) ^ is_deleted, cancels for two records of one bucket with
// the same version gap; the version digest does not, for any k = 1..8
// records and any gaps.
func TestVersionDigestsDoNotCancel(t *testing.T) {
	old := func(id, v int64) uint64 { return uint64(id)<<20 ^ uint64(v)<<1 }
	if old(1, 2)^old(1025, 2) != old(1, 1)^old(1025, 1) {
		t.Fatal("the old fingerprint was expected to cancel here")
	}
	for k := 1; k <= 8; k++ {
		for _, gap := range []string{"equal", "unequal"} {
			var src, dst uint64
			for i := range int64(k) {
				g := int64(1)
				if gap == "unequal" {
					g = 1 + i
				}
				r := canonical.Record{DataID: 1 + 1024*i, Version: 1}
				dst ^= canonical.VersionDigest(r)
				r.Version += g
				src ^= canonical.VersionDigest(r)
			}
			if src == dst {
				t.Errorf("k=%d, %s gaps: the bucket's version digests match", k, gap)
			}
		}
	}
}
