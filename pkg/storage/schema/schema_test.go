package schema_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/resultsync/resultsync/pkg/storage/schema"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   []string
	}{
		{"empty", "", nil},
		{"comments only", "-- a\n\n-- b\n", nil},
		{"two statements", "CREATE TABLE a (x INT);\n-- c\nCREATE TABLE b (\n  y INT\n);\n", []string{"CREATE TABLE a (x INT)", "CREATE TABLE b (\ny INT\n)"}},
		{"no trailing semicolon", "SELECT 1", []string{"SELECT 1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, schema.Split(tc.script)); diff != "" {
				t.Errorf("Split (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadEveryKind(t *testing.T) {
	for _, k := range []schema.Kind{schema.Shard, schema.Control, schema.ClickHouse} {
		t.Run(string(k), func(t *testing.T) {
			migs, err := schema.Load(k)
			if err != nil {
				t.Fatal(err)
			}
			if len(migs) == 0 {
				t.Fatal("no migrations")
			}
			for i, m := range migs {
				if m.Version != i+1 {
					t.Errorf("migration %d has version %d; versions must be 1..N without gaps", i, m.Version)
				}
				if len(m.Statements) == 0 {
					t.Errorf("migration %04d_%s has no statements", m.Version, m.Name)
				}
			}
		})
	}
}
