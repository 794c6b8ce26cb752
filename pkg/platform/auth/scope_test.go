package auth_test

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/resultsync/resultsync/pkg/platform/auth"
)

// TestSchoolChecks: a caller of schools 7 and 9 acts for them only, never
// for every school; a platform-wide caller for any; no caller for none.
func TestSchoolChecks(t *testing.T) {
	scoped := auth.WithPrincipal(context.Background(), auth.Principal{Subject: "anna", Role: auth.RoleAdmin, Schools: []int64{7, 9}})
	platform := auth.WithPrincipal(context.Background(), auth.Principal{Subject: "ops", Role: auth.RoleViewer, Platform: true})
	none := context.Background()
	tests := []struct {
		name string
		err  error
		want codes.Code
	}{
		{"own school", auth.CheckSchool(scoped, 7), codes.OK},
		{"second own school", auth.CheckScope(scoped, 9, "x"), codes.OK},
		{"another school", auth.CheckSchool(scoped, 8), codes.PermissionDenied},
		{"another school's scope", auth.CheckScope(scoped, 8, "x"), codes.PermissionDenied},
		{"every school", auth.CheckScope(scoped, 0, "x"), codes.PermissionDenied},
		{"platform-only", auth.CheckPlatform(scoped, "x"), codes.PermissionDenied},
		{"platform-wide, any school", auth.CheckSchool(platform, 8), codes.OK},
		{"platform-wide, every school", auth.CheckScope(platform, 0, "x"), codes.OK},
		{"platform-wide, platform-only", auth.CheckPlatform(platform, "x"), codes.OK},
		{"no caller, a school", auth.CheckSchool(none, 7), codes.PermissionDenied},
		{"no caller, platform-only", auth.CheckPlatform(none, "x"), codes.PermissionDenied},
	}
	for _, tc := range tests {
		if got := status.Code(tc.err); got != tc.want {
			t.Errorf("%s: %v (%v), want %v", tc.name, got, tc.err, tc.want)
		}
	}
}
