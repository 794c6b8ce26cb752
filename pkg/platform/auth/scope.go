package auth

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// CheckSchool returns nil when the caller of ctx acts for school, and a
// PERMISSION_DENIED status otherwise (also without an authenticated caller:
// fail closed).
func CheckSchool(ctx context.Context, school int64) error {
	p, ok := FromContext(ctx)
	if !ok {
		return status.Error(codes.PermissionDenied, "no authenticated caller")
	}
	if !p.ActsFor(school) {
		return status.Errorf(codes.PermissionDenied, "%s does not act for school %d", p.Subject, school)
	}
	return nil
}

// CheckPlatform returns nil when the caller of ctx is platform-wide, and a
// PERMISSION_DENIED status naming what otherwise (what spans schools: a
// whole campaign, every school, the outbox, the projection).
func CheckPlatform(ctx context.Context, what string) error {
	p, ok := FromContext(ctx)
	if !ok {
		return status.Error(codes.PermissionDenied, "no authenticated caller")
	}
	if !p.Platform {
		return status.Errorf(codes.PermissionDenied, "%s spans schools: %s is not platform-wide", what, p.Subject)
	}
	return nil
}

// CheckScope checks a request scoped to school, where 0 means every school
// (platform-wide callers only).
func CheckScope(ctx context.Context, school int64, what string) error {
	if school == 0 {
		return CheckPlatform(ctx, fmt.Sprintf("%s of every school", what))
	}
	return CheckSchool(ctx, school)
}

// Subject is the subject of the caller of ctx ("" when none), for audit.
func Subject(ctx context.Context) string {
	p, _ := FromContext(ctx)
	return p.Subject
}
