// Package shard holds the shard map: which MySQL database owns which result.
//
// A result is owned by the shard its data_id routes to (Map.Owner): a fixed
// 64-bit mix of the data_id, modulo the number of shards. Routing by data_id,
// not by school, is what makes data_id unique across the whole platform: every
// record of one data_id, whichever school it names, lands on one shard, whose
// primary key refuses the second. The mixing function, the order of the shards
// and their count are part of the data layout: changing any of them moves
// records between shards and needs a data migration. Every environment runs at
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

// Map is the ordered list of shards. A result is owned by
// Shards[Owner(data_id)]: the order and the count are part of the data layout
// and change only with a data migration.
type Map struct {
	Shards []Shard
}

// Parse reads "id=dsn,id=dsn,..." (entries may also be separated by ';' or
// newlines). IDs must be unique and valid (ValidID). An error names an entry
// by its position and, once valid, its id; never by its DSN, which may hold
// a password (nor by a malformed id, which may be a DSN written without one).
func Parse(s string) (Map, error) {
	var m Map
	seen := map[string]bool{}
	n := 0
	for _, ent := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == '\n' }) {
		ent = strings.TrimSpace(ent)
		if ent == "" {
			continue
		}
		n++
		id, dsn, ok := strings.Cut(ent, "=")
		id, dsn = strings.TrimSpace(id), strings.TrimSpace(dsn)
		switch {
		case !ok || id == "":
			return Map{}, fmt.Errorf("shard map entry %d: want id=dsn", n)
		case !ValidID(id):
			return Map{}, fmt.Errorf("shard map entry %d: the id must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", n)
		case dsn == "":
			return Map{}, fmt.Errorf("shard map entry %d (%s): want id=dsn", n, id)
		case seen[id]:
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

// ValidID reports whether id can name a shard: 1-64 ASCII letters, digits,
// '.', '_' or '-', starting with a letter or digit. Shard ids are carried in
// events, page tokens, metric labels and logs, so they hold nothing else.
func ValidID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case i > 0 && (r == '.' || r == '_' || r == '-'):
		default:
			return false
		}
	}
	return true
}

// Owner returns the index in Shards of the shard that owns the result
// dataID: mix64(uint64(dataID)) mod len(Shards). It is part of the data
// layout (pinned by the vectors in shard_test.go) and never depends on
// anything but the data_id and the shard count, so every command, retry and
// read of one data_id reaches the same shard. The map must not be empty
// (Parse guarantees it).
//
// The mix matters: plain data_id mod N would follow any regularity of the
// ids (ids allocated in steps, or one reconciliation bucket, data_id % 1024,
// which would all land on one shard).
func (m Map) Owner(dataID int64) int {
	return int(mix64(uint64(dataID)) % uint64(len(m.Shards)))
}

// mix64 is the splitmix64 finalizer (Stafford's "Mix13"): a fixed bijection
// of 64-bit integers whose every output bit depends on every input bit. It
// is part of the data layout: never change it.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// IDs lists the shard ids in map order.
func (m Map) IDs() []string {
	ids := make([]string, len(m.Shards))
	for i, s := range m.Shards {
		ids[i] = s.ID
	}
	return ids
}
