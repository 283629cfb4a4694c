package settings_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/apiserver"
	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
	"github.com/glassbox-dev/glassbox/internal/llm/llmtest"
)

func TestLLMConnections(t *testing.T) {
	t.Setenv("GLASSBOX_ENCRYPTION_KEY", "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
	fake := llmtest.New(t, func(llmtest.Request) string { return "OK" })
	env := uitest.Start(t, uitest.Options{Configure: func(c *apiserver.Config) { c.Evaluation.LLMAllowedHosts = []string{"127.0.0.1"} }})
	env.AddMember(t, "member@example.com", controlplane.RoleMember)
	c := uitest.NewClient(t, env.URL)
	c.SignIn(env.OwnerEmail, env.OwnerPassword)
	c.NoRedirects()
	page := "/project/" + env.ProjectID + "/settings/llm-connections"
	c.Get(page)

	const secret = "sk-live-abcdefghijklmnop"
	res := c.Post(page, url.Values{"provider": {"local"}, "adapter": {"openai"}, "secret_key": {secret}, "base_url": {fake.URL()}, "default_model": {"gpt-4o-mini"}})
	require.Equal(t, http.StatusSeeOther, res.Status, res.Body)
	res = c.Get(page)
	assert.Contains(t, res.Body, `data-connection="local"`)
	assert.NotContains(t, res.Body, secret, "the key is never shown")
	assert.NotContains(t, res.Body, "abcdefghijkl")

	res = c.Post(page, url.Values{"provider": {"metadata"}, "adapter": {"openai"}, "secret_key": {secret}, "base_url": {"http://169.254.169.254/v1"}})
	assert.Equal(t, http.StatusBadRequest, res.Status, "a host the operator's policy does not list")
	assert.Contains(t, res.Body, "evaluation.llm_allowed_hosts")
	res = c.Post(page, url.Values{"provider": {"nokey"}, "adapter": {"openai"}})
	assert.Equal(t, http.StatusBadRequest, res.Status, "a new connection needs its key")

	cs, _, err := env.Store.ListLLMConnections(t.Context(), env.ProjectID, 0, 10)
	require.NoError(t, err)
	require.Len(t, cs, 1)
	res = c.Post(page+"/"+cs[0].ID+"/test", url.Values{})
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	assert.Contains(t, res.Body, "the provider answered “OK”")
	reqs := fake.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "Bearer "+secret, reqs[0].Header.Get("Authorization"), "the stored key is sent to its own base URL")
	assert.Equal(t, "gpt-4o-mini", reqs[0].Model)

	fake.Fail(llmtest.Fault{Status: http.StatusUnauthorized})
	res = c.Post(page+"/"+cs[0].ID+"/test", url.Values{})
	assert.Contains(t, res.Body, "401", "a refused key is reported")

	member := uitest.NewClient(t, env.URL)
	member.SignIn("member@example.com", uitest.MemberPassword)
	res = member.Get(page)
	require.Equal(t, http.StatusOK, res.Status)
	assert.False(t, strings.Contains(res.Body, `data-testid="add-llm"`), "no form for a member")
	assert.Equal(t, http.StatusForbidden, member.Post(page, url.Values{"provider": {"x"}, "secret_key": {"y"}}).Status)
	assert.Equal(t, http.StatusForbidden, member.Post(page+"/"+cs[0].ID+"/test", url.Values{}).Status)

	require.Equal(t, http.StatusSeeOther, c.Post(page+"/"+cs[0].ID+"/delete", url.Values{}).Status)
	cs, _, err = env.Store.ListLLMConnections(t.Context(), env.ProjectID, 0, 10)
	require.NoError(t, err)
	assert.Empty(t, cs)

	// A Bedrock connection takes its region in the config, and its test
	// call is signed for it.
	aws := url.Values{"provider": {"aws"}, "adapter": {"bedrock"}, "secret_key": {fake.AWS("AKIDEXAMPLE", "aws-secret", "", "eu-west-1")},
		"base_url": {fake.Root()}, "default_model": {"anthropic.claude-3-haiku-20240307-v1:0"}}
	res = c.Post(page, aws)
	assert.Equal(t, http.StatusBadRequest, res.Status)
	assert.Contains(t, res.Body, "requires {&#34;region&#34;")
	aws.Set("config", `{"region":"eu-west-1"}`)
	require.Equal(t, http.StatusSeeOther, c.Post(page, aws).Status)
	cs, _, err = env.Store.ListLLMConnections(t.Context(), env.ProjectID, 0, 10)
	require.NoError(t, err)
	require.Len(t, cs, 1)
	res = c.Post(page+"/"+cs[0].ID+"/test", url.Values{})
	assert.Contains(t, res.Body, "the provider answered “OK”")
	last := fake.Requests()[len(fake.Requests())-1]
	assert.Equal(t, llmtest.KindBedrock, last.Kind)
	assert.Contains(t, last.Header.Get("Authorization"), "/eu-west-1/bedrock/aws4_request")
}
