package llm

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// vertexScope is the OAuth scope the access token is asked for.
const vertexScope = "https://www.googleapis.com/auth/cloud-platform"

// defaultTokenURI is Google's token endpoint, for keys that name none.
const defaultTokenURI = "https://oauth2.googleapis.com/token"

// serviceAccount is the part of a Google service account key file the
// client uses.
type serviceAccount struct {
	Type         string `json:"type"`
	ProjectID    string `json:"project_id"`
	PrivateKeyID string `json:"private_key_id"`
	PrivateKey   string `json:"private_key"`
	ClientEmail  string `json:"client_email"`
	TokenURI     string `json:"token_uri"`

	key *rsa.PrivateKey
}

// parseServiceAccount reads a service account key file; the error never
// quotes the key.
func parseServiceAccount(secret string) (serviceAccount, error) {
	var sa serviceAccount
	if err := json.Unmarshal([]byte(secret), &sa); err != nil {
		return sa, errors.New("the google-vertex-ai secretKey must be a service account key file (JSON)")
	}
	if sa.Type != "" && sa.Type != "service_account" {
		return sa, fmt.Errorf("the google-vertex-ai secretKey is a %q key file, not a service account's", sa.Type)
	}
	if sa.ProjectID == "" || sa.ClientEmail == "" || sa.PrivateKey == "" {
		return sa, errors.New("the google-vertex-ai service account key needs project_id, client_email and private_key")
	}
	if sa.TokenURI == "" {
		sa.TokenURI = defaultTokenURI
	}
	if u, err := url.Parse(sa.TokenURI); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return sa, errors.New("the google-vertex-ai service account key's token_uri is not an http(s) URL")
	}
	block, _ := pem.Decode([]byte(sa.PrivateKey))
	if block == nil {
		return sa, errors.New("the google-vertex-ai service account key's private_key is not PEM")
	}
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		parsed, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	}
	key, ok := parsed.(*rsa.PrivateKey)
	if err != nil || !ok {
		return sa, errors.New("the google-vertex-ai service account key's private_key is not an RSA key")
	}
	sa.key = key
	return sa, nil
}

// tokenError is a refused or failed token exchange: it keeps the token
// endpoint's status (for Retryable), and is not the model's refusal of a
// schema.
type tokenError struct{ err error }

func (e *tokenError) Error() string { return "service account token: " + e.err.Error() }
func (e *tokenError) Unwrap() error { return e.err }

// tokenCache holds access tokens until shortly before they expire.
type tokenCache struct {
	mu     sync.Mutex
	tokens map[[32]byte]cachedToken
}

type cachedToken struct {
	token   string
	expires time.Time
}

// tokenMargin is how long before its expiry a token is no longer used.
const tokenMargin = 2 * time.Minute

// vertexToken returns an access token for sa: a cached one, or one the
// token endpoint exchanges for a JWT signed with the account's key
// (RFC 7523).
func (c *Client) vertexToken(ctx context.Context, sa serviceAccount) (string, error) {
	id := sha256.Sum256([]byte(sa.ClientEmail + "\n" + sa.TokenURI + "\n" + sa.PrivateKey))
	c.tokens.mu.Lock()
	cached, ok := c.tokens.tokens[id]
	c.tokens.mu.Unlock()
	if ok && time.Now().Before(cached.expires) {
		return cached.token, nil
	}
	assertion, err := signJWT(sa, time.Now())
	if err != nil {
		return "", err
	}
	form := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {assertion}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sa.TokenURI, strings.NewReader(form.Encode()))
	if err != nil {
		return "", fmt.Errorf("build token request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.do(req)
	if err != nil {
		return "", &tokenError{err}
	}
	var out struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	if err := decodeAnswer(resp, &out); err != nil {
		return "", fmt.Errorf("service account token: %w", err)
	}
	if out.AccessToken == "" {
		return "", errors.New("service account token: the token endpoint answered without access_token")
	}
	expires := time.Now().Add(time.Duration(out.ExpiresIn)*time.Second - tokenMargin)
	c.tokens.mu.Lock()
	if c.tokens.tokens == nil {
		c.tokens.tokens = map[[32]byte]cachedToken{}
	}
	for k, t := range c.tokens.tokens {
		if time.Now().After(t.expires) {
			delete(c.tokens.tokens, k)
		}
	}
	c.tokens.tokens[id] = cachedToken{token: out.AccessToken, expires: expires}
	c.tokens.mu.Unlock()
	return out.AccessToken, nil
}

// signJWT is the RS256 assertion of sa asking for the cloud-platform scope
// at its token endpoint, valid for an hour from now.
func signJWT(sa serviceAccount, now time.Time) (string, error) {
	header, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": sa.PrivateKeyID})
	claims, _ := json.Marshal(map[string]any{
		"iss": sa.ClientEmail, "scope": vertexScope, "aud": sa.TokenURI,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	})
	enc := base64.RawURLEncoding
	signed := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	digest := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, sa.key, crypto.SHA256, digest[:])
	if err != nil {
		return "", fmt.Errorf("sign service account assertion: %w", err)
	}
	return signed + "." + enc.EncodeToString(sig), nil
}
