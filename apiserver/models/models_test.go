package models

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/apiserver/internal/apitest"
	"github.com/glassbox-dev/glassbox/internal/pricing"
)

func setup(t *testing.T) (http.Handler, apitest.Tenant, apitest.Tenant) {
	store := apitest.ControlPlane(t)
	a, b := apitest.Seed(t, store, "a"), apitest.Seed(t, store, "b")
	h, err := httpx.NewRouter(Routes(store), httpx.Options{Verifier: store})
	require.NoError(t, err)
	return h, a, b
}

func status(t *testing.T, rec *httptest.ResponseRecorder, want int) {
	t.Helper()
	require.Equal(t, want, rec.Code, rec.Body.String())
}

func TestCreateGetDelete(t *testing.T) {
	h, a, b := setup(t)
	rec := apitest.Do(t, h, http.MethodPost, "/api/public/models", a.ProjectAuth, map[string]any{
		"modelName": "acme-llm", "matchPattern": "(?i)^acme-llm$", "startDate": "2025-06-01T00:00:00Z",
		"unit": "TOKENS", "inputPrice": 1e-6, "outputPrice": 2e-6, "tokenizerId": "openai",
		"tokenizerConfig": map[string]any{"tokenizerModel": "gpt-4o", "tokensPerMessage": 3},
	})
	status(t, rec, http.StatusOK)
	created := apitest.Decode[Model](t, rec)
	assert.Equal(t, "acme-llm", created.ModelName)
	assert.False(t, created.IsLangfuseManaged)
	require.NotNil(t, created.InputPrice)
	assert.Equal(t, 1e-6, *created.InputPrice)
	assert.Nil(t, created.TotalPrice)
	assert.Equal(t, map[string]PriceValue{"input": {1e-6}, "output": {2e-6}}, created.Prices)
	require.Len(t, created.PricingTiers, 1)
	assert.Equal(t, "Standard", created.PricingTiers[0].Name)
	assert.True(t, created.PricingTiers[0].IsDefault)
	assert.Equal(t, []Condition{}, created.PricingTiers[0].Conditions)
	require.NotNil(t, created.StartDate)
	assert.Contains(t, rec.Body.String(), `"startDate":"2025-06-01T00:00:00.000Z"`)
	assert.Equal(t, &TokenizerConfig{TokenizerModel: "gpt-4o", TokensPerMessage: 3}, created.TokenizerConfig)

	rec = apitest.Do(t, h, http.MethodGet, "/api/public/models/"+created.ID, a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	assert.Equal(t, created, apitest.Decode[Model](t, rec))
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/models/"+created.ID, b.ProjectAuth, nil), http.StatusNotFound)
	status(t, apitest.Do(t, h, http.MethodDelete, "/api/public/models/"+created.ID, b.ProjectAuth, nil), http.StatusNotFound)

	rec = apitest.Do(t, h, http.MethodDelete, "/api/public/models/"+created.ID, a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	assert.JSONEq(t, `{"message":"Model successfully deleted"}`, rec.Body.String())
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/models/"+created.ID, a.ProjectAuth, nil), http.StatusNotFound)

	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/models", a.OrgAuth, nil), http.StatusForbidden)
}

func TestBuiltinModels(t *testing.T) {
	h, a, _ := setup(t)
	rec := apitest.Do(t, h, http.MethodGet, "/api/public/models/glassbox-gpt-4o-20241002", a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	m := apitest.Decode[Model](t, rec)
	assert.True(t, m.IsLangfuseManaged)
	assert.Equal(t, "gpt-4o", m.ModelName)
	assert.Equal(t, 2.5e-6, *m.InputPrice)
	assert.Equal(t, 1.25e-6, m.Prices["input_cached_tokens"].Price)
	assert.Nil(t, m.CreatedAt)

	rec = apitest.Do(t, h, http.MethodGet, "/api/public/models/glassbox-gemini-2.5-pro", a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	m = apitest.Decode[Model](t, rec)
	require.Len(t, m.PricingTiers, 2, "tiers are shown")
	assert.Equal(t, "Large context", m.PricingTiers[1].Name)
	assert.Equal(t, "gt", m.PricingTiers[1].Conditions[0].Operator)

	status(t, apitest.Do(t, h, http.MethodDelete, "/api/public/models/glassbox-gpt-4o-20241002", a.ProjectAuth, nil),
		http.StatusBadRequest)
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/models/glassbox-nope", a.ProjectAuth, nil), http.StatusNotFound)
}

func TestListMergesProjectAndBuiltinModels(t *testing.T) {
	h, a, b := setup(t)
	status(t, apitest.Do(t, h, http.MethodPost, "/api/public/models", a.ProjectAuth, map[string]any{
		"modelName": "gpt-4o", "matchPattern": "(?i)^gpt-4o$", "startDate": "2030-01-01T00:00:00Z", "inputPrice": 1e-6,
	}), http.StatusOK)

	builtin, err := pricing.Builtin()
	require.NoError(t, err)
	rec := apitest.Do(t, h, http.MethodGet, "/api/public/models?limit=100", a.ProjectAuth, nil)
	status(t, rec, http.StatusOK)
	first := apitest.Decode[httpx.List[Model]](t, rec)
	assert.Equal(t, int64(builtin.Len()+1), first.Meta.TotalItems)
	assert.Len(t, first.Data, 100)

	var all []Model
	for page := 1; page <= int(first.Meta.TotalPages); page++ {
		rec := apitest.Do(t, h, http.MethodGet, fmt.Sprintf("/api/public/models?limit=100&page=%d", page), a.ProjectAuth, nil)
		status(t, rec, http.StatusOK)
		all = append(all, apitest.Decode[httpx.List[Model]](t, rec).Data...)
	}
	require.Len(t, all, builtin.Len()+1)
	for i := 1; i < len(all); i++ {
		assert.LessOrEqual(t, all[i-1].ModelName, all[i].ModelName, "ordered by name")
	}
	var gpt4o []Model
	for _, m := range all {
		if m.ModelName == "gpt-4o" {
			gpt4o = append(gpt4o, m)
		}
	}
	require.Len(t, gpt4o, 3)
	assert.False(t, gpt4o[0].IsLangfuseManaged, "the latest start date first")
	assert.Equal(t, "2024-10-02", timeString(gpt4o[1].StartDate))
	assert.Equal(t, "2024-05-13", timeString(gpt4o[2].StartDate))

	rec = apitest.Do(t, h, http.MethodGet, "/api/public/models?limit=100", b.ProjectAuth, nil)
	assert.Equal(t, int64(builtin.Len()), apitest.Decode[httpx.List[Model]](t, rec).Meta.TotalItems, "others do not see it")
	status(t, apitest.Do(t, h, http.MethodGet, "/api/public/models?limit=0", a.ProjectAuth, nil), http.StatusBadRequest)
}

func timeString(ts *httpx.Timestamp) string {
	raw, _ := ts.MarshalJSON()
	return strings.Trim(string(raw), `"`)[:10]
}

func TestCreateWithTiers(t *testing.T) {
	h, a, _ := setup(t)
	rec := apitest.Do(t, h, http.MethodPost, "/api/public/models", a.ProjectAuth, map[string]any{
		"modelName": "tiered", "matchPattern": "^tiered$",
		"pricingTiers": []map[string]any{
			{"name": "Standard", "isDefault": true, "priority": 0, "prices": map[string]any{"input": 1e-6}},
			{"name": "Long", "isDefault": false, "priority": 1, "prices": map[string]any{"input": 2e-6},
				"conditions": []map[string]any{{"usageDetailPattern": "input", "operator": "gt", "value": 200000}}},
		},
	})
	status(t, rec, http.StatusOK)
	m := apitest.Decode[Model](t, rec)
	require.Len(t, m.PricingTiers, 2)
	assert.Equal(t, 200000.0, m.PricingTiers[1].Conditions[0].Value)
	assert.Equal(t, 1e-6, *m.InputPrice, "flat prices come from the default tier")
}

func TestCreateValidation(t *testing.T) {
	h, a, _ := setup(t)
	valid := func() map[string]any {
		return map[string]any{"modelName": "m", "matchPattern": "^m$", "inputPrice": 1e-6}
	}
	for name, edit := range map[string]func(map[string]any){
		"no name":         func(b map[string]any) { delete(b, "modelName") },
		"bad pattern":     func(b map[string]any) { b["matchPattern"] = "(" },
		"no prices":       func(b map[string]any) { delete(b, "inputPrice") },
		"total and input": func(b map[string]any) { b["totalPrice"] = 1e-6 },
		"flat and tiers": func(b map[string]any) {
			b["pricingTiers"] = []map[string]any{{"name": "S", "isDefault": true, "prices": map[string]any{"input": 1}}}
		},
		"negative price": func(b map[string]any) { b["inputPrice"] = -1 },
		"tokenizer":      func(b map[string]any) { b["tokenizerId"] = "sentencepiece" },
		"two defaults": func(b map[string]any) {
			delete(b, "inputPrice")
			b["pricingTiers"] = []map[string]any{
				{"name": "A", "isDefault": true, "prices": map[string]any{"input": 1}},
				{"name": "B", "isDefault": true, "prices": map[string]any{"input": 2}},
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			body := valid()
			edit(body)
			status(t, apitest.Do(t, h, http.MethodPost, "/api/public/models", a.ProjectAuth, body), http.StatusBadRequest)
		})
	}
	status(t, apitest.Do(t, h, http.MethodPost, "/api/public/models", a.ProjectAuth, valid()), http.StatusOK)
	status(t, apitest.Do(t, h, http.MethodPost, "/api/public/models", a.ProjectAuth, valid()), http.StatusBadRequest)
}

// PUT /models/{id} creates under the id, then replaces the project's own
// definition; another project's id and built-in ids are refused.
func TestUpsert(t *testing.T) {
	h, a, b := setup(t)
	body := func(price float64) map[string]any {
		return map[string]any{"modelName": "acme-llm", "matchPattern": "(?i)^acme-llm$", "unit": "TOKENS", "inputPrice": price}
	}
	rec := apitest.Do(t, h, http.MethodPut, "/api/public/models/acme-1", a.ProjectAuth, body(1e-6))
	status(t, rec, http.StatusOK)
	assert.Equal(t, "acme-1", apitest.Decode[Model](t, rec).ID)
	rec = apitest.Do(t, h, http.MethodPut, "/api/public/models/acme-1", a.ProjectAuth, body(3e-6))
	status(t, rec, http.StatusOK)
	replaced := apitest.Decode[Model](t, rec)
	require.NotNil(t, replaced.InputPrice)
	assert.Equal(t, 3e-6, *replaced.InputPrice)
	got := apitest.Decode[Model](t, apitest.Do(t, h, http.MethodGet, "/api/public/models/acme-1", a.ProjectAuth, nil))
	assert.Equal(t, replaced, got)

	rec = apitest.Do(t, h, http.MethodPut, "/api/public/models/acme-1", b.ProjectAuth, body(9e-6))
	status(t, rec, http.StatusConflict)
	assert.Contains(t, rec.Body.String(), "another project")
	got = apitest.Decode[Model](t, apitest.Do(t, h, http.MethodGet, "/api/public/models/acme-1", a.ProjectAuth, nil))
	assert.Equal(t, 3e-6, *got.InputPrice, "another project cannot overwrite it")

	listed := apitest.Decode[httpx.List[Model]](t, apitest.Do(t, h, http.MethodGet, "/api/public/models?limit=100", a.ProjectAuth, nil))
	i := slices.IndexFunc(listed.Data, func(m Model) bool { return m.IsLangfuseManaged })
	require.GreaterOrEqual(t, i, 0, "the catalogue lists built-in models")
	rec = apitest.Do(t, h, http.MethodPut, "/api/public/models/"+listed.Data[i].ID, a.ProjectAuth, body(1))
	status(t, rec, http.StatusBadRequest)
	assert.Contains(t, rec.Body.String(), "built in")
	status(t, apitest.Do(t, h, http.MethodPut, "/api/public/models/acme-2", a.ProjectAuth, map[string]any{"modelName": "x"}), http.StatusBadRequest)
}
