package shard

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParse: the shard map parser never panics; an accepted map has at least
// one shard, unique valid ids and non-empty DSNs without separators, and
// Owner stays in range; an error never shows a DSN (which may hold a
// password) nor an entry that has no valid id.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"shard-0=u:p@tcp(h:1)/a,shard-1=u:p@tcp(h:1)/b", " a = x ; b=y\nc=z ", " , ", "a=", "=dsn", "a=x,a=y",
		"u:hunter2@tcp(h:1)/db", "u:hunter2@tcp(h:1)/db?parseTime=true", "shard 0=u:hunter2@tcp(h)/db", "s\u00e9=u:hunter2@x",
		"a=b=c", "-a=x", strings.Repeat("a", 65) + "=x", "a=x,b=u:hunter2@tcp(h:1)/db,a=z"} {
		f.Add(s, int64(900001))
	}
	f.Fuzz(func(t *testing.T, spec string, dataID int64) {
		m, err := Parse(spec)
		if err != nil {
			if len(m.Shards) != 0 {
				t.Fatalf("Parse(%q) returned shards with error %v", spec, err)
			}
			checkHidden(t, spec, err.Error())
			return
		}
		if len(m.Shards) == 0 {
			t.Fatalf("Parse(%q) accepted an empty map", spec)
		}
		seen := map[string]bool{}
		for _, s := range m.Shards {
			if !ValidID(s.ID) || seen[s.ID] {
				t.Fatalf("Parse(%q): id %q invalid or duplicate", spec, s.ID)
			}
			seen[s.ID] = true
			if s.DSN == "" || s.DSN != strings.TrimSpace(s.DSN) || strings.ContainsAny(s.DSN, ",;\n") {
				t.Fatalf("Parse(%q): DSN %q of %s", spec, s.DSN, s.ID)
			}
		}
		if o := m.Owner(dataID); o < 0 || o >= len(m.Shards) {
			t.Fatalf("Owner(%d) = %d over %d shards", dataID, o, len(m.Shards))
		}
		if again, err := Parse(strings.Join(entries(m), ",")); err != nil || strings.Join(again.IDs(), ",") != strings.Join(m.IDs(), ",") {
			t.Fatalf("the map %v written back does not parse to itself: %v", m.IDs(), err)
		}
	})
}

func entries(m Map) []string {
	out := make([]string, len(m.Shards))
	for i, s := range m.Shards {
		out[i] = s.ID + "=" + s.DSN
	}
	return out
}

// checkHidden fails when msg shows what an entry carries besides a valid id:
// its DSN, or the whole entry when it has no valid id. Values also found in
// a valid id of the spec or in the messages' fixed text are not evidence.
func checkHidden(t *testing.T, spec, msg string) {
	t.Helper()
	const fixed = "shard map entry : want id=dsn the id must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit " +
		"shard map: duplicate shard id shard map is empty"
	var ids []string
	ents := strings.FieldsFunc(spec, func(r rune) bool { return r == ',' || r == ';' || r == '\n' })
	for _, e := range ents {
		if id, _, ok := strings.Cut(e, "="); ok && ValidID(strings.TrimSpace(id)) {
			ids = append(ids, strings.TrimSpace(id))
		}
	}
	// The ids the error may name, as it names them, masked first: an id
	// followed by the format's ")" is not another entry's text shown.
	for _, id := range ids {
		msg = strings.ReplaceAll(msg, "("+id+")", "(ID)")
		msg = strings.ReplaceAll(msg, strconv.Quote(id), "ID")
	}
	for _, e := range ents {
		e = strings.TrimSpace(e)
		id, secret, ok := strings.Cut(e, "=")
		if !ok || !ValidID(strings.TrimSpace(id)) {
			secret = e
		}
		secret = strings.TrimSpace(secret)
		if len(secret) < 4 || strings.Contains(fixed, secret) || strings.Contains(strings.Join(ids, " "), secret) {
			continue
		}
		if strings.Contains(msg, secret) {
			t.Fatalf("Parse(%q) error %q shows %q", spec, msg, secret)
		}
	}
}
