package pulsarbus

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
)

// levelFloor drops records below min before they reach h, and prints the
// client's URL attributes as URLs (the client logs url.URL values, which a
// JSON handler would otherwise spell out field by field on every reconnect).
type levelFloor struct {
	h   slog.Handler
	min slog.Level
}

func (l levelFloor) Enabled(ctx context.Context, lv slog.Level) bool {
	return lv >= l.min && l.h.Enabled(ctx, lv)
}

func (l levelFloor) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(plain(a))
		return true
	})
	return l.h.Handle(ctx, out)
}

func (l levelFloor) WithAttrs(as []slog.Attr) slog.Handler {
	p := make([]slog.Attr, len(as))
	for i, a := range as {
		p[i] = plain(a)
	}
	return levelFloor{h: l.h.WithAttrs(p), min: l.min}
}

func (l levelFloor) WithGroup(n string) slog.Handler {
	return levelFloor{h: l.h.WithGroup(n), min: l.min}
}

// plain turns URL values into their string form.
func plain(a slog.Attr) slog.Attr {
	if a.Value.Kind() != slog.KindAny {
		return a
	}
	switch v := a.Value.Any().(type) {
	case url.URL:
		return slog.String(a.Key, v.String())
	case *url.URL:
		if v != nil {
			return slog.String(a.Key, v.String())
		}
	case fmt.Stringer:
		if _, isErr := v.(error); !isErr {
			return slog.String(a.Key, v.String())
		}
	}
	return a
}
