package playground_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver"
	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/llm/llmtest"
	"github.com/glassbox-dev/glassbox/internal/secretbox"
)

const key = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

type fixture struct {
	env  *uitest.Env
	c    *uitest.Client
	fake *llmtest.Server
	conn controlplane.LLMConnection
	page string
}

func setup(t *testing.T) fixture {
	t.Helper()
	t.Setenv("GLASSBOX_ENCRYPTION_KEY", key)
	fake := llmtest.New(t, func(r llmtest.Request) string {
		body, _ := json.Marshal(r.Body)
		if strings.Contains(string(body), "pirate") {
			return "Arr, it ships tomorrow."
		}
		return "It ships tomorrow."
	})
	env := uitest.Start(t, uitest.Options{Configure: func(c *apiserver.Config) { c.Evaluation.LLMAllowedHosts = []string{"127.0.0.1"} }})
	box, err := secretbox.FromEnv(func(string) string { return key })
	require.NoError(t, err)
	conn, err := env.Store.UpsertLLMConnection(context.Background(), box, env.ProjectID, controlplane.LLMConnectionUpsert{Provider: "local",
		SecretKey: "sk-local-0123456789", BaseURL: fake.URL(), DefaultModel: ptr("default-model"), Timeout: 5 * time.Second})
	require.NoError(t, err)
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)
	c.NoRedirects()
	return fixture{env: env, c: c, fake: fake, conn: conn, page: "/project/" + env.ProjectID + "/playground"}
}

func ptr[T any](v T) *T { return &v }

// form is two variants of one chat with a variable: the second a pirate,
// with its own model, parameters and tools.
func (f fixture) form() url.Values {
	return url.Values{"variants": {"2"}, "var_name": {"order"}, "var_value": {"42"},
		"v0_connection": {f.conn.ID}, "v0_role": {"system", "user"}, "v0_content": {"Be brief.", "Where is order {{order}}?"},
		"v1_connection": {f.conn.ID}, "v1_model": {"gpt-4o"}, "v1_temperature": {"0.7"}, "v1_max_tokens": {"50"},
		"v1_tools": {`[{"type":"function","function":{"name":"lookup_order","parameters":{"type":"object"}}}]`},
		"v1_role":  {"system", "user"}, "v1_content": {"Talk like a pirate.", "Where is order {{order}}?"},
		"prompt_name": {"support/answer"}, "commit": {"from the playground"}}
}

func TestRunVariants(t *testing.T) {
	f := setup(t)
	f.c.Get(f.page)
	form := f.form()
	form.Set("op", "run")
	res := f.c.Post(f.page, form)
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	assert.Contains(t, res.Body, `data-testid="output-0" class="">It ships tomorrow.</pre>`)
	assert.Contains(t, res.Body, `data-testid="output-1" class="">Arr, it ships tomorrow.</pre>`)
	reqs := f.fake.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "default-model", reqs[0].Model, "the connection's default model")
	assert.Equal(t, "Where is order 42?", reqs[0].Prompt, "the variable filled in")
	assert.Equal(t, "gpt-4o", reqs[1].Model)
	assert.Equal(t, 0.7, reqs[1].Body["temperature"])
	assert.EqualValues(t, 50, reqs[1].Body["max_tokens"])
	assert.NotNil(t, reqs[1].Body["tools"], "the tools are sent")

	res = f.c.Post(f.page+"/stream?variant=1", form)
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	assert.Equal(t, "text/plain; charset=utf-8", res.Header.Get("Content-Type"))
	answer, usage, ok := strings.Cut(res.Body, "\n\x00")
	require.True(t, ok, res.Body)
	assert.Equal(t, "Arr, it ships tomorrow.", answer)
	assert.Contains(t, usage, "gpt-4o")
	assert.Equal(t, true, f.fake.Requests()[2].Body["stream"])

	bad := f.form()
	bad.Set("v0_tools", "[not json")
	bad.Set("op", "run")
	res = f.c.Post(f.page, bad)
	assert.Contains(t, res.Body, "tools is not valid JSON", "the variant shows its own error")
	assert.Contains(t, res.Body, "Arr, it ships tomorrow.", "the other variant still runs")
	res = f.c.Post(f.page+"/stream?variant=0", bad)
	assert.Equal(t, http.StatusBadRequest, res.Status)
	assert.Contains(t, res.Body, "tools is not valid JSON")
	f.fake.Fail(llmtest.Fault{Status: http.StatusUnauthorized})
	res = f.c.Post(f.page+"/stream?variant=1", form)
	assert.Equal(t, http.StatusBadGateway, res.Status, "a provider's refusal")
}

func TestVariantsAddRemoveAndSave(t *testing.T) {
	f := setup(t)
	f.c.Get(f.page)
	form := f.form()
	form.Set("op", "add")
	res := f.c.Post(f.page, form)
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, `name="variants" value="3"`)
	assert.Contains(t, res.Body, "Variant 3")
	form.Set("op", "remove-0")
	res = f.c.Post(f.page, form)
	assert.Contains(t, res.Body, `name="variants" value="1"`)
	assert.Contains(t, res.Body, "Talk like a pirate.", "the second variant is left")

	form = f.form()
	form.Set("op", "save-1")
	res = f.c.Post(f.page, form)
	require.Equal(t, http.StatusSeeOther, res.Status, res.Body)
	p, err := f.env.Store.GetPrompt(context.Background(), f.env.ProjectID, "support/answer", controlplane.PromptSelector{Version: 1})
	require.NoError(t, err)
	assert.Equal(t, controlplane.PromptChat, p.Type)
	assert.JSONEq(t, `[{"role":"system","content":"Talk like a pirate."},{"role":"user","content":"Where is order {{order}}?"}]`, string(p.Prompt), "saved with its variables")
	var cfg map[string]any
	require.NoError(t, json.Unmarshal(p.Config, &cfg))
	assert.Equal(t, "gpt-4o", cfg["model"])
	assert.Equal(t, 0.7, cfg["temperature"])
	assert.NotNil(t, cfg["tools"])
	assert.Equal(t, "from the playground", p.CommitMessage)
	assert.Equal(t, []string{"latest"}, p.Labels, "no label but latest: production moves deliberately")

	// The saved version opens in the playground again.
	res = f.c.Get(f.page + "?prompt=support/answer&version=1")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, "Talk like a pirate.")
	assert.Contains(t, res.Body, `name="v0_model" value="gpt-4o"`)
	assert.Contains(t, res.Body, `name="v0_temperature" value="0.7"`)
	assert.Contains(t, res.Body, `name="var_name" value="order"`, "its variable is offered")
}

func TestOpenAGeneration(t *testing.T) {
	f := setup(t)
	f.env.ChatTrace(t, "t-1", "chat", "alice", time.Now().Add(-time.Hour))
	res := f.c.Get("/project/" + f.env.ProjectID + "/traces/t-1?observation=t-1-llm")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, `data-testid="open-in-playground"`)
	res = f.c.Get(f.page + "?trace=t-1&observation=t-1-llm")
	require.Equal(t, http.StatusOK, res.Status)
	assert.Contains(t, res.Body, "You are a helpful support agent.</textarea>")
	assert.Contains(t, res.Body, "Where is my order 42?</textarea>")
	assert.Contains(t, res.Body, `name="v0_model" value="gpt-4o"`)
	assert.Contains(t, res.Body, `name="v0_temperature" value="0.2"`)
	assert.Equal(t, http.StatusNotFound, f.c.Get(f.page+"?trace=t-1&observation=nope").Status)
}

func TestViewersCannotRun(t *testing.T) {
	f := setup(t)
	f.env.AddMember(t, "viewer@example.com", controlplane.RoleViewer)
	v := uitest.NewClient(t, f.env.URL)
	v.SignIn("viewer@example.com", uitest.MemberPassword)
	res := v.Get(f.page)
	require.Equal(t, http.StatusOK, res.Status)
	assert.NotContains(t, res.Body, `data-testid="run"`)
	form := f.form()
	form.Set("op", "run")
	assert.Equal(t, http.StatusForbidden, v.Post(f.page, form).Status)
	assert.Equal(t, http.StatusForbidden, v.Post(f.page+"/stream?variant=0", form).Status)
	assert.Empty(t, f.fake.Requests())
}
