package auth

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/resultsync/resultsync/pkg/platform/config"
)

// Settings are a server's authentication settings: signed JWTs in every
// profile, the static token list in the local profile only.
type Settings struct {
	// Tokens is the static list "token=subject:role[@school|...],..."
	// (ParseTokens), accepted only in the local profile, where it defaults
	// to DevTokens. Never logged.
	Tokens string
	// JWT verifies signed tokens; set KeysFile to accept them.
	JWT JWTConfig
	// Profile is the configuration profile (the loader fills it).
	Profile string
	// loaded: defined by Flags, so a missing setting is an error of the
	// configuration (a Settings built in code is checked by New).
	loaded bool
}

// Local returns the settings of the local profile with the static tokens.
func Local(tokens string) Settings { return Settings{Tokens: tokens, Profile: config.ProfileLocal} }

// Flags defines the authentication flags on l.
func (s *Settings) Flags(l *config.Loader) {
	l.Secret(&s.Tokens, "auth-tokens", "RS_AUTH_TOKENS",
		"static bearer tokens token=subject:role[@school|school...],... (local profile only; it defaults to the development tokens)")
	l.String(&s.JWT.KeysFile, "auth-jwt-keys", "RS_AUTH_JWT_KEYS", "",
		"file of the JWT verification keys: PEM public keys or a JWKS document, reloaded when it changes (required outside the local profile)")
	l.String(&s.JWT.Audience, "auth-jwt-audience", "RS_AUTH_JWT_AUDIENCE", "", "the audience (aud) a JWT must name")
	l.String(&s.JWT.Issuer, "auth-jwt-issuer", "RS_AUTH_JWT_ISSUER", "", "the issuer (iss) a JWT must name (empty: any)")
	l.String(&s.JWT.Algorithms, "auth-jwt-algorithms", "RS_AUTH_JWT_ALGORITHMS", DefaultAlgorithms,
		"accepted JWT algorithms (of ES256,ES384,ES512,RS256,RS384,RS512,PS256,PS384,PS512,EdDSA)")
	l.Duration(&s.JWT.Leeway, "auth-jwt-leeway", "RS_AUTH_JWT_LEEWAY", 30*time.Second, "clock skew allowed on a JWT's exp and nbf")
	l.ProfileTo(&s.Profile)
	s.loaded = true
}

// ErrStaticTokens refuses the static token list outside the local profile.
var ErrStaticTokens = errors.New("--auth-tokens (env RS_AUTH_TOKENS), the static bearer tokens, is accepted only with --profile=local; " +
	"outside it callers present signed JWTs: set --auth-jwt-keys and --auth-jwt-audience")

// ErrNoAuth names the missing authentication settings.
var ErrNoAuth = errors.New("missing required settings: --auth-jwt-keys (env RS_AUTH_JWT_KEYS), --auth-jwt-audience (env RS_AUTH_JWT_AUDIENCE) " +
	"(signed bearer tokens; the static --auth-tokens and the development tokens only with --profile=local)")

// Validate rejects impossible settings (without reading the key file).
func (s Settings) Validate() error {
	var errs []error
	if s.Tokens != "" && s.Profile != config.ProfileLocal {
		errs = append(errs, ErrStaticTokens)
	}
	if s.loaded && s.Tokens == "" && s.JWT.KeysFile == "" && s.Profile != config.ProfileLocal {
		errs = append(errs, ErrNoAuth)
	}
	if err := s.JWT.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// New returns the Authenticator of s. In the local profile without a
// static list it accepts DevTokens (and says so); outside it a key file is
// required.
func New(log *slog.Logger, s Settings) (*Authenticator, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	tokens := s.Tokens
	if tokens == "" && s.Profile == config.ProfileLocal {
		tokens = DevTokens
	}
	if tokens == DevTokens && log != nil {
		log.Warn("accepting the development bearer tokens (dev-viewer, dev-operator, dev-admin; platform-wide): local profile only")
	}
	var a *Authenticator
	if tokens != "" {
		var err error
		if a, err = ParseTokens(tokens); err != nil {
			return nil, err
		}
	}
	if s.JWT.KeysFile == "" {
		if a == nil {
			return nil, ErrNoAuth
		}
		return a, nil
	}
	v, err := NewVerifier(log, s.JWT)
	if err != nil {
		return nil, fmt.Errorf("JWT verification: %w", err)
	}
	if a == nil {
		return JWT(v), nil
	}
	return a.WithJWT(v), nil
}
