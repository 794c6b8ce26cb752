// Package schema holds the versioned schema migrations of resultsync — the
// shard databases, the control database and the ClickHouse projection — and
// applies them idempotently.
//
// Migrations are embedded SQL files named NNNN_name.sql, applied in version
// order; statements are separated by a ';' at the end of a line. Applied
// versions are recorded with a checksum in a schema_migrations table of each
// database: a migration that changed after it was applied is an error, never
// silently re-run.
package schema

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

//go:embed shard/*.sql control/*.sql clickhouse/*.sql clickhouse_cluster/*.sql
var files embed.FS

// Kind names a family of databases sharing one schema.
type Kind string

// The schema families.
const (
	Shard      Kind = "shard"      // every MySQL shard
	Control    Kind = "control"    // the MySQL control database
	ClickHouse Kind = "clickhouse" // the ClickHouse projection database
	// ClickHouseCluster is the projection database on a ClickHouse cluster
	// (replicated, sharded; docs/cluster.md), applied by ApplyClickHouseCluster.
	ClickHouseCluster Kind = "clickhouse_cluster"
)

// Migration is one versioned schema change.
type Migration struct {
	Version    int
	Name       string
	Checksum   string
	Statements []string
}

// Load returns the migrations of kind, in version order.
func Load(kind Kind) ([]Migration, error) {
	entries, err := fs.ReadDir(files, string(kind))
	if err != nil {
		return nil, fmt.Errorf("reading %s migrations: %w", kind, err)
	}
	var out []Migration
	seen := map[int]string{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".sql") {
			continue
		}
		num, rest, ok := strings.Cut(strings.TrimSuffix(name, ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s/%s: name must be NNNN_name.sql", kind, name)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s share version %d", prev, name, v)
		}
		seen[v] = name
		body, err := files.ReadFile(path.Join(string(kind), name))
		if err != nil {
			return nil, fmt.Errorf("reading migration %s: %w", name, err)
		}
		sum := sha256.Sum256(body)
		out = append(out, Migration{Version: v, Name: rest, Checksum: hex.EncodeToString(sum[:]), Statements: Split(string(body))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// Split cuts a SQL script into statements at ';' ending a line, dropping
// '--' comment lines and blank statements.
func Split(script string) []string {
	var stmts []string
	var cur strings.Builder
	for _, line := range strings.Split(script, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		if strings.HasSuffix(t, ";") {
			cur.WriteString(strings.TrimSuffix(t, ";"))
			if s := strings.TrimSpace(cur.String()); s != "" {
				stmts = append(stmts, s)
			}
			cur.Reset()
			continue
		}
		cur.WriteString(t)
		cur.WriteString("\n")
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		stmts = append(stmts, s)
	}
	return stmts
}
