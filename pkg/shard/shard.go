// Package shard holds the shard map: which MySQL database owns which school's
// results. Routing uses a stable key (school_id); every environment runs at
// least two shards.
package shard

import (
	"errors"
	"fmt"
	"strings"
)

// Shard is one authoritative MySQL database with its own outbox.
type Shard struct {
	ID  string // stable name, e.g. "shard-0"; carried in events
	DSN string // go-sql-driver DSN
}

// Map is the ordered list of shards. A school is owned by
// Shards[school_id mod len(Shards)]: the order and the count are part of the
// data layout and change only with a data migration.
type Map struct {
	Shards []Shard
}

// Parse reads "id=dsn,id=dsn,..." (entries may also be separated by ';' or
// newlines). IDs must be unique and non-empty.
func Parse(s string) (Map, error) {
	var m Map
	seen := map[string]bool{}
	for _, ent := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == '\n' }) {
		ent = strings.TrimSpace(ent)
		if ent == "" {
			continue
		}
		id, dsn, ok := strings.Cut(ent, "=")
		id, dsn = strings.TrimSpace(id), strings.TrimSpace(dsn)
		if !ok || id == "" || dsn == "" {
			return Map{}, fmt.Errorf("shard map entry %q: want id=dsn", redactEntry(ent))
		}
		if seen[id] {
			return Map{}, fmt.Errorf("shard map: duplicate shard id %q", id)
		}
		seen[id] = true
		m.Shards = append(m.Shards, Shard{ID: id, DSN: dsn})
	}
	if len(m.Shards) == 0 {
		return Map{}, errors.New("shard map is empty")
	}
	return m, nil
}

// Route returns the index of the shard owning schoolID.
func (m Map) Route(schoolID int64) int {
	n := int64(len(m.Shards))
	i := schoolID % n
	if i < 0 {
		i += n
	}
	return int(i)
}

// IDs lists the shard ids in map order.
func (m Map) IDs() []string {
	ids := make([]string, len(m.Shards))
	for i, s := range m.Shards {
		ids[i] = s.ID
	}
	return ids
}

func redactEntry(e string) string {
	id, _, _ := strings.Cut(e, "=")
	return id + "=<dsn>"
}
