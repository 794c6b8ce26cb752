// Package auth authenticates gRPC callers by bearer token and authorizes each
// RPC by role. Roles are ordered: viewer < operator < admin; reads need
// viewer, writes and replays operator, rebuilds, approvals and removals admin.
// Health and reflection are open. A method without a policy is denied.
package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
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

// Principal is an authenticated caller.
type Principal struct {
	Subject string
	Role    Role
}

// DevTokens are the documented development tokens of the local stack:
// "dev-viewer", "dev-operator" and "dev-admin", each carrying the role of its
// name. Production deployments set their own tokens.
const DevTokens = "dev-viewer=dev-viewer:viewer,dev-operator=dev-operator:operator,dev-admin=dev-admin:admin"

// Authenticator maps bearer tokens to principals.
type Authenticator struct {
	tokens map[string]Principal
}

// ParseTokens reads "token=subject:role,..." (entries may also be separated
// by ';' or newlines; space around a token, subject or role is ignored).
// Tokens must be unique and at least 8 characters; an error never shows one.
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
		r, err := ParseRole(role)
		if err != nil {
			return nil, fmt.Errorf("auth token of %s: %w", subj, err)
		}
		if _, dup := a.tokens[tok]; dup {
			return nil, fmt.Errorf("auth token of %s: duplicate token", subj)
		}
		a.tokens[tok] = Principal{Subject: subj, Role: r}
	}
	if len(a.tokens) == 0 {
		return nil, errors.New("no auth tokens configured")
	}
	return a, nil
}

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
