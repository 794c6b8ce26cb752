package stores_test

import (
	"strings"
	"testing"

	"github.com/resultsync/resultsync/pkg/service/stores"
)

// Every missing or malformed setting is named, and no DSN text (secret)
// appears in the error.
func TestSettingsErrors(t *testing.T) {
	const secret = "hunter2"
	for _, tc := range []struct {
		name string
		s    stores.Settings
		want []string // substrings of the error; none: valid
	}{
		{"valid", stores.Settings{Shards: "a=u:p@tcp(h:1)/a,b=u:p@tcp(h:1)/b", ControlDSN: "u:p@tcp(h:1)/c", CHAddr: "h:9000", CHDatabase: "d"}, nil},
		{"missing", stores.Settings{CHDatabase: "d"}, []string{"shards is required", "control-dsn is required", "clickhouse-addr is required"}},
		{"malformed", stores.Settings{Shards: "a=u:" + secret + "@tcp(h:1)/a", ControlDSN: "u:" + secret + "@tcp(h:1", CHAddr: "nohost", CHDatabase: ""},
			[]string{"two shards", "control-dsn is not a valid DSN", `clickhouse-addr "nohost"`, "clickhouse-database must not be empty"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.Check(stores.All, false)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("= %v, want valid", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q shows a secret", err)
			}
		})
	}
}

// Check looks only at the stores a server uses, and a loaded configuration
// (whose loader named the missing settings) is not told twice.
func TestCheckNeed(t *testing.T) {
	bad := stores.Settings{Shards: "a=u:p@tcp(h:1)/a", ControlDSN: "u:p@tcp(h:1", CHAddr: "nohost"}
	for _, tc := range []struct {
		name   string
		s      stores.Settings
		need   stores.Need
		loaded bool
		want   []string // substrings of the error, in any order; none: valid
	}{
		{"shards only", bad, stores.Shards, false, []string{"two shards"}},
		{"control only", bad, stores.Control, false, []string{"control-dsn is not a valid DSN"}},
		{"ClickHouse only", bad, stores.ClickHouse, false, []string{`clickhouse-addr "nohost"`, "clickhouse-database must not be empty"}},
		{"ClickHouse skipped", bad, stores.ClickHouseSkipped, false, nil},
		{"a malformed shard DSN", stores.Settings{Shards: "a=u:p@h/a,b=u:p@tcp(h:1)/b"}, stores.Shards, false, []string{"shard a:"}},
		{"missing, built in code", stores.Settings{}, stores.Shards | stores.Control, false, []string{"shards is required", "control-dsn is required"}},
		{"missing, loaded", stores.Settings{}, stores.Shards | stores.Control, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.Check(tc.need, tc.loaded)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("= %v, want valid", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
			if n := strings.Count(err.Error(), "\n") + 1; n != len(tc.want) {
				t.Errorf("error %q has %d lines, want %d", err, n, len(tc.want))
			}
		})
	}
}
