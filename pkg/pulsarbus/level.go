package pulsarbus

import (
	"context"
	"log/slog"
)

// levelFloor drops records below min before they reach h.
type levelFloor struct {
	h   slog.Handler
	min slog.Level
}

func (l levelFloor) Enabled(ctx context.Context, lv slog.Level) bool {
	return lv >= l.min && l.h.Enabled(ctx, lv)
}

func (l levelFloor) Handle(ctx context.Context, r slog.Record) error { return l.h.Handle(ctx, r) }

func (l levelFloor) WithAttrs(a []slog.Attr) slog.Handler {
	return levelFloor{h: l.h.WithAttrs(a), min: l.min}
}

func (l levelFloor) WithGroup(n string) slog.Handler {
	return levelFloor{h: l.h.WithGroup(n), min: l.min}
}
