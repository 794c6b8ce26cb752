package auth_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/resultsync/resultsync/pkg/platform/auth"
)

// fixedText is the fixed text of ParseTokens' errors.
const fixedText = "auth token entry: want token=subject:role auth token of : at least 8 characters " +
	"unknown role \"\" (want viewer, operator or admin) duplicate token no auth tokens configured school want a positive number"

// FuzzParseTokens: the token parser never panics; an accepted spec
// authenticates each of its tokens (at least 8 characters) with the role it
// names, and an error never shows a token.
func FuzzParseTokens(f *testing.F) {
	for _, s := range []string{auth.DevTokens, "", "short=s:viewer", "abcdefgh=alice:admin;abcdefgh=bob:viewer", "abcdefgh=alice:root",
		"abcdefgh=:viewer", "abcdefgh=alice", "=alice:viewer", " abcdefgh = alice : Admin \n", "abcdefgh=a:b:viewer", "s3cr3t-token-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		a, err := auth.ParseTokens(spec)
		ents := strings.FieldsFunc(spec, func(r rune) bool { return r == ',' || r == ';' || r == '\n' })
		if err != nil {
			if a != nil {
				t.Fatalf("ParseTokens(%q) returned an authenticator with error %v", spec, err)
			}
			for _, e := range ents {
				tok, _, _ := strings.Cut(e, "=")
				tok = strings.TrimSpace(tok)
				// Not evidence: a token also written elsewhere in the spec
				// (a subject, a role), part of the messages' fixed text, or
				// one that quoting another field could spell (\x00...).
				if len(tok) >= 8 && strings.Count(spec, tok) == 1 && !strings.Contains(fixedText, tok) &&
					strings.ContainsAny(tok, "ghijklmnopqrstvwyzGHIJKLMNOPQRSTVWYZ") && strings.Contains(err.Error(), tok) {
					t.Fatalf("ParseTokens(%q) error %q shows the token %q", spec, err, tok)
				}
			}
			return
		}
		for _, e := range ents {
			e = strings.TrimSpace(e)
			tok, rest, _ := strings.Cut(e, "=")
			subj, role, _ := strings.Cut(rest, ":")
			role, _, _ = strings.Cut(role, "@") // the schools of a scoped entry
			tok, subj = strings.TrimSpace(tok), strings.TrimSpace(subj)
			want, err := auth.ParseRole(role)
			if err != nil || len(tok) < 8 || subj == "" {
				t.Fatalf("ParseTokens(%q) accepted entry %q", spec, e)
			}
			p, code := call(a, "/fitness.v1.RepairService/GetRepair", "Bearer "+tok)
			if code != codes.OK || p.Role != want || p.Subject != subj {
				t.Fatalf("token of entry %q authenticates as %+v (%v); want %s:%s", e, p, code, subj, want)
			}
		}
	})
}

// FuzzAuthorize: whatever authorization metadata a caller sends, it is
// authenticated only by a configured token and authorized only up to that
// token's role; the answer is OK, UNAUTHENTICATED or PERMISSION_DENIED.
func FuzzAuthorize(f *testing.F) {
	for _, h := range []string{"Bearer dev-viewer", "Bearer dev-operator", "Bearer dev-admin", "", "Bearer ", "bearer dev-admin",
		"Bearer  dev-admin ", "Bearer dev-admin\x00", "Basic ZGV2LWFkbWlu", "Bearer dev-admi", "Bearer dev-adminx"} {
		f.Add(h, "/fitness.v1.RepairService/ApproveRepair")
		f.Add(h, "/fitness.v1.ResultService/GetResult")
	}
	f.Add("Bearer dev-viewer", "/fitness.v1.Unknown/Method")
	f.Add("", "/grpc.health.v1.Health/Check")
	a, err := auth.ParseTokens(auth.DevTokens)
	if err != nil {
		f.Fatal(err)
	}
	roles := map[string]auth.Role{"dev-viewer": auth.RoleViewer, "dev-operator": auth.RoleOperator, "dev-admin": auth.RoleAdmin}
	policy := auth.Policy{}
	for _, p := range []auth.Policy{auth.ResultPolicy, auth.OutboxPolicy, auth.ProjectionPolicy, auth.ReconcilePolicy, auth.RepairPolicy} {
		for m, r := range p {
			policy[m] = r
		}
	}
	f.Fuzz(func(t *testing.T, header, method string) {
		p, code := callPolicy(a, policy, method, header)
		if strings.HasPrefix(method, "/grpc.health.v1.") || strings.HasPrefix(method, "/grpc.reflection.") {
			if code != codes.OK {
				t.Fatalf("open method %q refused: %v", method, code)
			}
			return
		}
		need, known := policy[method]
		tok, bearer := strings.CutPrefix(header, "Bearer ")
		role, valid := roles[strings.TrimSpace(tok)]
		switch code {
		case codes.OK:
			if !known || !bearer || !valid || role < need || p.Role != role {
				t.Fatalf("%q with %q authorized as %+v (policy %v, known %t)", method, header, p, need, known)
			}
		case codes.Unauthenticated:
			if bearer && valid {
				t.Fatalf("%q with a valid token %q unauthenticated", method, header)
			}
		case codes.PermissionDenied:
			if known && bearer && valid && role >= need {
				t.Fatalf("%q with %q denied", method, header)
			}
		default:
			t.Fatalf("%q with %q: %v; want OK, UNAUTHENTICATED or PERMISSION_DENIED", method, header, code)
		}
	})
}

func call(a *auth.Authenticator, method, header string) (auth.Principal, codes.Code) {
	return callPolicy(a, auth.RepairPolicy, method, header)
}

// callPolicy runs the unary interceptor for method with one authorization
// header and returns the principal the handler saw.
func callPolicy(a *auth.Authenticator, policy auth.Policy, method, header string) (auth.Principal, codes.Code) {
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", header))
	var p auth.Principal
	_, err := a.Unary(policy)(ctx, nil, &grpc.UnaryServerInfo{FullMethod: method}, func(ctx context.Context, _ any) (any, error) {
		p, _ = auth.FromContext(ctx)
		return nil, nil
	})
	return p, status.Code(err)
}
