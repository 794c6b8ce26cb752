// Package auth authenticates gRPC callers by bearer token and authorizes each
// RPC by role and school. Roles are ordered: viewer < operator < admin; reads
// need viewer, writes and replays operator, rebuilds, approvals and removals
// admin. Health and reflection are open. A method without a policy is denied.
//
// A bearer token is a signed JWT (Verifier: keys from a file, algorithms
// pinned, exp, nbf, aud and iss checked) naming the caller (sub), its role
// and the schools it acts for, or platform-wide; or, in the local profile
// only, an entry of a static list (ParseTokens). The caller is in the
// context of the RPC (FromContext); the services check every school an RPC
// names or touches with CheckSchool, and cross-school administration with
// CheckPlatform.
package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Role is a caller's privilege level.
type Role int

// Roles, in increasing privilege.
const (
	RoleNone Role = iota
	RoleViewer
	RoleOperator
	RoleAdmin
)

func (r Role) String() string {
	switch r {
	case RoleViewer:
		return "viewer"
	case RoleOperator:
		return "operator"
	case RoleAdmin:
		return "admin"
	default:
		return "none"
	}
}

// ParseRole reads "viewer", "operator" or "admin".
func ParseRole(s string) (Role, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "viewer":
		return RoleViewer, nil
	case "operator":
		return RoleOperator, nil
	case "admin":
		return RoleAdmin, nil
	}
	return RoleNone, fmt.Errorf("unknown role %q (want viewer, operator or admin)", s)
}

// Principal is an authenticated caller: who (the token's subject), with
// which role, for which schools. A platform-wide caller acts for every
// school, and alone may act on what spans schools (a campaign, the outbox,
// the projection).
type Principal struct {
	Subject  string
	Role     Role
	Schools  []int64 // the schools the caller acts for
	Platform bool    // acts for every school
}

// ActsFor reports whether p may act for school.
func (p Principal) ActsFor(school int64) bool {
	return p.Platform || slices.Contains(p.Schools, school)
}

// DevTokens are the documented development tokens of the local stack:
// "dev-viewer", "dev-operator" and "dev-admin", each carrying the role of its
// name, platform-wide. They are accepted only in the local profile.
const DevTokens = "dev-viewer=dev-viewer:viewer,dev-operator=dev-operator:operator,dev-admin=dev-admin:admin"

// Authenticator maps bearer tokens to principals: signed JWTs through a
// Verifier, and (local profile only) a static list.
type Authenticator struct {
	tokens map[string]Principal
	jwt    *Verifier
}

// ParseTokens reads the static list "token=subject:role,..." (entries may
// also be separated by ';' or newlines; space around a token, subject or
// role is ignored). An entry is platform-wide, or acts for the schools
// after '@': "token=subject:role@7|8". Tokens must be unique and at least 8
// characters; an error never shows one.
func ParseTokens(spec string) (*Authenticator, error) {
	a := &Authenticator{tokens: map[string]Principal{}}
	for _, ent := range strings.FieldsFunc(spec, func(r rune) bool { return r == ',' || r == ';' || r == '\n' }) {
		ent = strings.TrimSpace(ent)
		tok, rest, ok := strings.Cut(ent, "=")
		subj, role, ok2 := strings.Cut(rest, ":")
		// A caller's token is read trimmed (authorize), so is the configured one.
		tok, subj = strings.TrimSpace(tok), strings.TrimSpace(subj)
		if !ok || !ok2 || tok == "" || subj == "" {
			return nil, errors.New("auth token entry: want token=subject:role")
		}
		if len(tok) < 8 {
			return nil, fmt.Errorf("auth token of %s: at least 8 characters", subj)
		}
		role, schools, scoped := strings.Cut(role, "@")
		r, err := ParseRole(role)
		if err != nil {
			return nil, fmt.Errorf("auth token of %s: %w", subj, err)
		}
		if _, dup := a.tokens[tok]; dup {
			return nil, fmt.Errorf("auth token of %s: duplicate token", subj)
		}
		p := Principal{Subject: subj, Role: r, Platform: !scoped}
		if scoped {
			for _, f := range strings.Split(schools, "|") {
				n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
				if err != nil || n <= 0 {
					return nil, fmt.Errorf("auth token of %s: school %q: want a positive number", subj, f)
				}
				p.Schools = append(p.Schools, n)
			}
		}
		a.tokens[tok] = p
	}
	if len(a.tokens) == 0 {
		return nil, errors.New("no auth tokens configured")
	}
	return a, nil
}

// JWT returns an Authenticator of signed tokens verified by v.
func JWT(v *Verifier) *Authenticator { return &Authenticator{jwt: v} }

// WithJWT makes a accept the signed tokens v verifies too.
func (a *Authenticator) WithJWT(v *Verifier) *Authenticator {
	a.jwt = v
	return a
}

// looksLikeJWT: three base64url segments separated by dots.
func looksLikeJWT(tok string) bool { return strings.Count(tok, ".") == 2 }

// Policy maps full method names ("/fitness.v1.ResultService/GetResult") to
// the role they require.
type Policy map[string]Role

type ctxKey struct{}

// FromContext returns the caller of an authorized RPC.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(ctxKey{}).(Principal)
	return p, ok
}

// WithPrincipal returns ctx carrying p (for tests and internal callers).
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

func open(method string) bool {
	return strings.HasPrefix(method, "/grpc.health.v1.") || strings.HasPrefix(method, "/grpc.reflection.")
}

func (a *Authenticator) authorize(ctx context.Context, method string, policy Policy) (context.Context, error) {
	if open(method) {
		return ctx, nil
	}
	need, ok := policy[method]
	if !ok {
		return nil, status.Errorf(codes.PermissionDenied, "no access policy for %s", method)
	}
	md, _ := metadata.FromIncomingContext(ctx)
	var tok string
	for _, v := range md.Get("authorization") {
		if t, ok := strings.CutPrefix(v, "Bearer "); ok {
			tok = strings.TrimSpace(t)
		}
	}
	if tok == "" {
		return nil, status.Error(codes.Unauthenticated, "missing bearer token (metadata authorization: Bearer <token>)")
	}
	var p Principal
	found := false
	for t, pr := range a.tokens {
		if subtle.ConstantTimeCompare([]byte(t), []byte(tok)) == 1 {
			p, found = pr, true
		}
	}
	if !found && a.jwt != nil && looksLikeJWT(tok) {
		vp, err := a.jwt.Verify(ctx, tok)
		if err != nil {
			return nil, status.Errorf(codes.Unauthenticated, "bearer token refused: %v", err)
		}
		p, found = vp, true
	}
	if !found {
		return nil, status.Error(codes.Unauthenticated, "unknown bearer token")
	}
	if p.Role < need {
		return nil, status.Errorf(codes.PermissionDenied, "%s needs role %s; %s has %s", method, need, p.Subject, p.Role)
	}
	return WithPrincipal(ctx, p), nil
}

// Unary returns the interceptor enforcing policy.
func (a *Authenticator) Unary(policy Policy) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		ctx, err := a.authorize(ctx, info.FullMethod, policy)
		if err != nil {
			return nil, err
		}
		return h(ctx, req)
	}
}

type wrappedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (w wrappedStream) Context() context.Context { return w.ctx }

// Stream returns the stream interceptor enforcing policy.
func (a *Authenticator) Stream(policy Policy) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		ctx, err := a.authorize(ss.Context(), info.FullMethod, policy)
		if err != nil {
			return err
		}
		return h(srv, wrappedStream{ServerStream: ss, ctx: ctx})
	}
}
