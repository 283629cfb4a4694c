package apiserver

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
)

// A public key alone (Bearer) is accepted by exactly two routes, which write
// scores; every other keyed route answers it with 403 before touching data.
func TestPublicKeyAloneScope(t *testing.T) {
	s := newServer(t)
	var scoring []string
	for _, rt := range s.routes {
		name := rt.Method + " " + rt.Path
		switch rt.Access {
		case httpx.Public:
			continue
		case httpx.ProjectOrScoresKey:
			scoring = append(scoring, name)
			continue
		}
		a := attacks[name]
		var body any
		if a.body != nil {
			body = a.body(s)
		}
		rec := apitest.Do(t, s.h, rt.Method, a.target(s), s.a.ProjectBearer, body)
		if rt.Access == httpx.AdminKey {
			// A bearer that is not the admin key.
			assert.Equal(t, http.StatusUnauthorized, rec.Code, "%s: %s", name, rec.Body.String())
			continue
		}
		assert.Equal(t, http.StatusForbidden, rec.Code, "%s: %s", name, rec.Body.String())
		assert.Contains(t, rec.Body.String(), "insufficient permissions", name)
	}
	assert.ElementsMatch(t, []string{"POST /api/public/scores", "POST /api/public/ingestion"}, scoring)

	rec := apitest.Do(t, s.h, http.MethodPost, "/api/public/scores", s.a.ProjectBearer,
		map[string]any{"id": "bearer-score", "traceId": s.a.trace, "name": "thumbs", "value": 1})
	assert.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	rec = apitest.Do(t, s.h, http.MethodGet, "/api/public/v2/scores/bearer-score", s.a.ProjectAuth, nil)
	assert.Equal(t, http.StatusOK, rec.Code, "the score is the key's project's: %s", rec.Body.String())
	rec = apitest.Do(t, s.h, http.MethodGet, "/api/public/v2/scores/bearer-score", s.b.ProjectAuth, nil)
	assert.Equal(t, http.StatusNotFound, rec.Code, rec.Body.String())
	rec = apitest.Do(t, s.h, http.MethodPost, "/api/public/scores", s.a.OrgAuth,
		map[string]any{"traceId": s.a.trace, "name": "thumbs", "value": 1})
	assert.Equal(t, http.StatusForbidden, rec.Code, "organization keys still need a project: %s", rec.Body.String())
}
