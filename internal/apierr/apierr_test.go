package apierr

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/apikey"
)

func TestAuth(t *testing.T) {
	storeDown := errors.New("dial tcp 10.0.0.9:5432: connection refused")
	tests := []struct {
		err     error
		status  int
		message string
	}{
		{apikey.ErrMissingCredentials, http.StatusUnauthorized, MsgMissingAuth},
		{apikey.ErrMalformedHeader, http.StatusUnauthorized, MsgMalformedAuth},
		{apikey.ErrInvalidCredentials, http.StatusUnauthorized, MsgInvalidCredentials},
		{fmt.Errorf("key store: %w", apikey.ErrInvalidCredentials), http.StatusUnauthorized, MsgInvalidCredentials},
		{apikey.RequireProject(apikey.Principal{Scope: apikey.ScopeProject}), http.StatusUnauthorized, MsgInvalidCredentials},
		{apikey.RequireProject(apikey.Principal{Scope: apikey.ScopeOrganization}), http.StatusForbidden, MsgNotProjectKey},
		{apikey.ErrSecretRequired, http.StatusForbidden, MsgScopeDenied},
		{storeDown, http.StatusServiceUnavailable, MsgUnavailable},
	}
	for _, tt := range tests {
		e := Auth(tt.err)
		assert.Equal(t, tt.status, e.Status, tt.err)
		assert.Equal(t, tt.message, e.Message, tt.err)
		assert.Empty(t, e.Name, "the auth step answers with a message alone, as Langfuse's does")
		assert.ErrorIs(t, e, tt.err, "the cause stays reachable for logs")
	}
	body, err := json.Marshal(Auth(storeDown).Body())
	require.NoError(t, err)
	assert.JSONEq(t, `{"message":"Service Unavailable"}`, string(body), "the store's error is never sent")
}

func TestNew(t *testing.T) {
	body, err := json.Marshal(New(http.StatusNotFound, "Trace t1 not found within authorized project").Body())
	require.NoError(t, err)
	assert.JSONEq(t, `{"message":"Trace t1 not found within authorized project","error":"LangfuseNotFoundError"}`, string(body))
	assert.Equal(t, NameConflict, Name(http.StatusConflict))
	assert.Equal(t, NameInternal, Name(http.StatusTeapot))
}
