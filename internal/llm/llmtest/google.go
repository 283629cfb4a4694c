package llmtest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// tokenPath is the fake's OAuth token endpoint.
const tokenPath = "/token"

type serviceAccount struct {
	email string
	key   *rsa.PublicKey
}

// ServiceAccount creates a Google service account whose token endpoint is
// this server and returns its key file, the secret of a Vertex AI
// connection. The server then exchanges JWTs signed with its key for
// access tokens, and accepts those on Vertex AI calls.
func (s *Server) ServiceAccount(t testing.TB, projectID string) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	email := fmt.Sprintf("judge-%d@%s.iam.gserviceaccount.com", len(s.accounts)+1, projectID)
	s.accounts[email] = &serviceAccount{email: email, key: &key.PublicKey}
	s.mu.Unlock()
	out, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": projectID, "private_key_id": "0123456789abcdef",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": email, "token_uri": s.Server.URL + tokenPath,
	})
	return string(out)
}

// TokenCalls is the number of token exchanges asked for.
func (s *Server) TokenCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokenCalls
}

// token is the OAuth 2.0 JWT bearer grant (RFC 7523) as Google serves it:
// an RS256 assertion by a known account, for this endpoint, for the
// cloud-platform scope, not expired, at most an hour long.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.tokenCalls++
	s.mu.Unlock()
	refuse := func(msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant", "error_description": msg})
	}
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
		refuse("POST a form")
		return
	}
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		refuse("grant_type must be urn:ietf:params:oauth:grant-type:jwt-bearer")
		return
	}
	parts := strings.Split(r.PostForm.Get("assertion"), ".")
	if len(parts) != 3 {
		refuse("assertion is not a JWT")
		return
	}
	var header struct{ Alg, Typ string }
	var claims struct {
		Iss, Scope, Aud string
		Iat, Exp        int64
	}
	if decodeSegment(parts[0], &header) != nil || decodeSegment(parts[1], &claims) != nil || header.Alg != "RS256" {
		refuse("assertion header or claims are not RS256 JSON")
		return
	}
	s.mu.Lock()
	acct := s.accounts[claims.Iss]
	s.mu.Unlock()
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	now := time.Now().Unix()
	switch {
	case acct == nil:
		refuse("unknown account " + claims.Iss)
	case err != nil || rsa.VerifyPKCS1v15(acct.key, crypto.SHA256, digest[:], sig) != nil:
		refuse("Invalid JWT Signature.")
	case claims.Aud != "http://"+r.Host+tokenPath:
		refuse("Invalid JWT: aud is " + claims.Aud)
	case !strings.Contains(" "+claims.Scope+" ", " https://www.googleapis.com/auth/cloud-platform "):
		refuse("scope is " + claims.Scope)
	case claims.Exp <= now || claims.Iat > now+60 || claims.Exp-claims.Iat > 3600:
		refuse("Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.")
	default:
		s.mu.Lock()
		token := fmt.Sprintf("ya29.fake-%d", len(s.tokens)+1)
		s.tokens[token] = true
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": token, "expires_in": 3599, "token_type": "Bearer"})
	}
}

func decodeSegment(seg string, out any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}
