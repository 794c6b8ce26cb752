package canonical_test

import (
	"testing"

	"github.com/resultsync/resultsync/pkg/canonical"
)

func TestDigestVectors(t *testing.T) {
	vs, err := canonical.Vectors()
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) < 8 {
		t.Fatalf("only %d vectors", len(vs))
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
		})
	}
}

func TestTrailingZerosDoNotChangeTheDigest(t *testing.T) {
	a := canonical.Record{DataID: 1, Version: 2, DetectID: 3, ProjectID: 3, SchoolID: 7, Grade: 5, Result: "2.31", Unit: "m"}
	b := a
	b.Result = "2.310"
	da, _ := canonical.Digest(a)
	db, _ := canonical.Digest(b)
	if da != db {
		t.Errorf("2.31 and 2.310 digest differently: %d vs %d", da, db)
	}
	c := a
	c.SchoolID = 8
	if dc, _ := canonical.Digest(c); dc == da {
		t.Error("a different school gives the same digest")
	}
}
