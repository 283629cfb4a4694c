package apikey

import (
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseBasic(t *testing.T) {
	enc := func(s string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(s)) }
	pk, sk, err := ParseBasic(enc("pk-lf-1:sk-lf-2"))
	require.NoError(t, err)
	assert.Equal(t, "pk-lf-1", pk)
	assert.Equal(t, "sk-lf-2", sk)

	_, _, err = ParseBasic("")
	assert.ErrorIs(t, err, ErrMissingCredentials)
	for _, bad := range []string{"Bearer ", "Token x", enc("nocolon"), enc(":sk"), enc("pk:"), "Basic !!!"} {
		_, _, err = ParseBasic(bad)
		assert.ErrorIs(t, err, ErrMalformedHeader, bad)
		assert.ErrorIs(t, err, ErrInvalidCredentials, bad)
	}
	_, _, err = ParseBasic("Bearer pk-lf-1")
	assert.ErrorIs(t, err, ErrSecretRequired, "a public key alone is not a bad pair but too little")
	assert.NotErrorIs(t, err, ErrInvalidCredentials)
}

func TestSecretMatches(t *testing.T) {
	h := HashSecret("sk-lf-secret")
	assert.Len(t, h, 64)
	assert.True(t, SecretMatches("sk-lf-secret", h))
	assert.False(t, SecretMatches("sk-lf-other", h))
	assert.Equal(t, "sk-lf-...cret", DisplaySecret("sk-lf-xxxxsecret"))
}

func TestRequireProject(t *testing.T) {
	assert.NoError(t, RequireProject(Principal{Scope: ScopeProject, ProjectID: "p"}))
	assert.ErrorIs(t, RequireProject(Principal{Scope: ScopeOrganization, OrganizationID: "o"}), ErrNotProjectKey)
	assert.ErrorIs(t, RequireProject(Principal{Scope: ScopeProject}), ErrInvalidCredentials, "a project key naming no project is not valid")
	assert.ErrorIs(t, RequireProject(Principal{Scope: "scores", ProjectID: "p"}), ErrNotProjectKey)
}
