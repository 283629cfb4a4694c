package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/llm"
	"github.com/glassbox-dev/glassbox/internal/llm/llmtest"
)

func TestLLMConnectionAdaptersAndConfig(t *testing.T) {
	serviceAccount := llmtest.New(t, nil).ServiceAccount(t, "proj-1")
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, _ := twoOrgs(t, s)
		box := testBox(t)
		awsKeys := `{"accessKeyId":"AKIAEXAMPLE1234","secretAccessKey":"wJalrXUtnFEMI"}`
		var checked []string
		check := func(raw string) error {
			checked = append(checked, raw)
			if strings.Contains(raw, "forbidden") {
				return errors.New("host not allowed")
			}
			return nil
		}
		upsert := func(u LLMConnectionUpsert) (LLMConnection, error) {
			u.CheckURL = check
			return s.UpsertLLMConnection(ctx, box, pa.ID, u)
		}

		for name, bad := range map[string]LLMConnectionUpsert{
			"bedrock without region": {Provider: "aws", Adapter: AdapterBedrock, SecretKey: awsKeys},
			"unknown config key":     {Provider: "aws", Adapter: AdapterBedrock, SecretKey: awsKeys, Config: json.RawMessage(`{"region":"eu-west-1","profile":"x"}`)},
			"config of another":      {Provider: "aws", Adapter: AdapterAnthropic, SecretKey: "sk-ant-123456789", Config: json.RawMessage(`{"region":"eu-west-1"}`)},
			"plain bedrock key":      {Provider: "aws", Adapter: AdapterBedrock, SecretKey: "AKIA:secret", Config: json.RawMessage(`{"region":"eu-west-1"}`)},
			"azure without baseURL":  {Provider: "az", Adapter: AdapterAzure, SecretKey: "azure-key-123456"},
			"vertex with a bad key":  {Provider: "gcp", Adapter: AdapterVertexAI, SecretKey: `{"type":"service_account"}`},
			"forbidden host": {Provider: "aws", Adapter: AdapterBedrock, SecretKey: awsKeys, Config: json.RawMessage(`{"region":"eu-west-1"}`),
				BaseURL: "https://forbidden.example"},
		} {
			_, err := upsert(bad)
			assert.ErrorIs(t, err, ErrInvalid, name)
		}
		_, err := upsert(LLMConnectionUpsert{Provider: "aws", Adapter: AdapterBedrock, SecretKey: awsKeys, Config: json.RawMessage(`{"region":"eu-west-1","profile":"x"}`)})
		assert.ErrorContains(t, err, `unknown key "profile"`)

		checked = nil
		cn, err := upsert(LLMConnectionUpsert{Provider: "aws", Adapter: AdapterBedrock, SecretKey: awsKeys,
			Config: json.RawMessage(`{"region":"eu-west-1"}`), WithDefaultModels: ptr(false)})
		require.NoError(t, err)
		assert.Equal(t, []string{"https://bedrock-runtime.eu-west-1.amazonaws.com"}, checked, "the policy sees the host the region implies")
		assert.Empty(t, cn.BaseURL, "the region decides the host")
		assert.JSONEq(t, `{"region":"eu-west-1"}`, string(cn.Config))
		assert.False(t, cn.WithDefaultModels)
		assert.Equal(t, "...1234", cn.DisplaySecret, "the access key id's end, not the secret's")
		creds, err := s.LLMCredentials(ctx, box, pa.ID, cn.ID)
		require.NoError(t, err)
		assert.Equal(t, llm.Endpoint{Adapter: AdapterBedrock, APIKey: awsKeys, Headers: map[string]string{}, Config: llm.Config{Region: "eu-west-1"}}, creds.Endpoint())

		// The region is where the keys go: moving it takes them again.
		_, err = upsert(LLMConnectionUpsert{Provider: "aws", Config: json.RawMessage(`{"region":"us-east-1"}`)})
		assert.ErrorIs(t, err, ErrInvalid)
		cn, err = upsert(LLMConnectionUpsert{Provider: "aws", Config: json.RawMessage(`{"region":"us-east-1"}`), SecretKey: awsKeys})
		require.NoError(t, err)
		assert.False(t, cn.WithDefaultModels, "omitted keeps")
		_, err = s.LLMCredentials(ctx, box, pa.ID, cn.ID)
		require.NoError(t, err)
		// ... and a region changed in the database opens nothing.
		_, err = s.conn().exec(ctx, `UPDATE llm_connections SET config = ? WHERE id = ?`, `{"region":"eu-west-1"}`, cn.ID)
		require.NoError(t, err)
		_, err = s.LLMCredentials(ctx, box, pa.ID, cn.ID)
		assert.Error(t, err)

		// Settings that do not move the key change without it.
		_, err = upsert(LLMConnectionUpsert{Provider: "oa", SecretKey: "sk-1234567890abcd"})
		require.NoError(t, err)
		oa, err := upsert(LLMConnectionUpsert{Provider: "oa", Config: json.RawMessage(`{"useResponsesApi":true}`)})
		require.NoError(t, err)
		assert.JSONEq(t, `{"useResponsesApi":true}`, string(oa.Config))
		creds, err = s.LLMCredentials(ctx, box, pa.ID, oa.ID)
		require.NoError(t, err)
		assert.True(t, creds.Endpoint().Config.UseResponsesAPI)
		// A new adapter drops the old one's public API and settings.
		oa, err = upsert(LLMConnectionUpsert{Provider: "oa", Adapter: AdapterGoogleAIStudio, SecretKey: "AIza-123456789"})
		require.NoError(t, err)
		assert.Equal(t, "https://generativelanguage.googleapis.com", oa.BaseURL)
		assert.JSONEq(t, `{}`, string(oa.Config))

		checked = nil
		gcp, err := upsert(LLMConnectionUpsert{Provider: "gcp", Adapter: AdapterVertexAI, SecretKey: serviceAccount})
		require.NoError(t, err)
		require.Len(t, checked, 2)
		assert.Equal(t, "https://us-central1-aiplatform.googleapis.com", checked[0])
		assert.True(t, strings.HasSuffix(checked[1], "/token"), "the token endpoint of the key is checked too: %v", checked)
		assert.Equal(t, "...cdef", gcp.DisplaySecret)
		_, err = upsert(LLMConnectionUpsert{Provider: "gcp", Config: json.RawMessage(`{"location":"europe-west4"}`)})
		assert.ErrorIs(t, err, ErrInvalid, "the location is where the key goes")

		az, err := upsert(LLMConnectionUpsert{Provider: "az", Adapter: AdapterAzure, SecretKey: "azure-key-123456",
			BaseURL: "https://res.openai.azure.com/", Config: json.RawMessage(`{"apiVersion":"2025-01-01-preview"}`)})
		require.NoError(t, err)
		assert.Equal(t, "https://res.openai.azure.com", az.BaseURL)
		assert.True(t, az.WithDefaultModels, "true by default")
	})
}
