package pulsarbus

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"testing"
)

// The client's records below warn are dropped, and its URL attributes print
// as URLs, not as url.URL's fields.
func TestLevelFloor(t *testing.T) {
	var buf bytes.Buffer
	h := levelFloor{h: slog.NewJSONHandler(&buf, nil), min: slog.LevelWarn}
	u, _ := url.Parse("pulsar://127.0.0.1:9")
	log := slog.New(h).With("remote_addr", *u)
	log.Info("connected")
	log.Warn("Failed to connect to broker.", "broker", u, "error", errors.New("connection refused"))
	if !h.Enabled(context.Background(), slog.LevelWarn) || h.Enabled(context.Background(), slog.LevelInfo) {
		t.Error("Enabled does not follow the floor")
	}
	out := buf.String()
	if strings.Contains(out, "connected") {
		t.Errorf("an info record passed the warn floor: %s", out)
	}
	for _, want := range []string{`"remote_addr":"pulsar://127.0.0.1:9"`, `"broker":"pulsar://127.0.0.1:9"`, `"error":"connection refused"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log %s lacks %s", out, want)
		}
	}
}
