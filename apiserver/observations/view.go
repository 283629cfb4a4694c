// Package observations serves the observation routes: one observation, the
// page-based list (v1) and the cursor-based list with field groups (v2). It
// also holds the ObservationsView shape that trace details embed.
package observations // import "github.com/glassbox-dev/glassbox/apiserver/observations"

import (
	"context"
	"strings"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// Usage is the deprecated usage block that older SDK code still reads.
type Usage struct {
	Input  int64   `json:"input"`
	Output int64   `json:"output"`
	Total  int64   `json:"total"`
	Unit   *string `json:"unit"`
}

// View is an observation as Langfuse's ObservationsView: the stored fields
// plus the derived usage, cost, latency and time-to-first-token.
type View struct {
	ID                   string             `json:"id"`
	TraceID              string             `json:"traceId"`
	ProjectID            string             `json:"projectId"`
	Type                 string             `json:"type"`
	Name                 string             `json:"name"`
	StartTime            httpx.Timestamp    `json:"startTime"`
	EndTime              *httpx.Timestamp   `json:"endTime"`
	CompletionStartTime  *httpx.Timestamp   `json:"completionStartTime"`
	Model                *string            `json:"model"`
	ModelParameters      httpx.JSON         `json:"modelParameters"`
	Input                httpx.JSON         `json:"input"`
	Output               httpx.JSON         `json:"output"`
	Version              *string            `json:"version"`
	Metadata             httpx.JSON         `json:"metadata"`
	Usage                Usage              `json:"usage"`
	Level                string             `json:"level"`
	StatusMessage        *string            `json:"statusMessage"`
	ParentObservationID  *string            `json:"parentObservationId"`
	PromptID             *string            `json:"promptId"`
	PromptName           *string            `json:"promptName"`
	PromptVersion        *int64             `json:"promptVersion"`
	UsageDetails         map[string]int64   `json:"usageDetails"`
	CostDetails          map[string]float64 `json:"costDetails"`
	Environment          string             `json:"environment"`
	ModelID              *string            `json:"modelId"`
	InputPrice           *float64           `json:"inputPrice"`
	OutputPrice          *float64           `json:"outputPrice"`
	TotalPrice           *float64           `json:"totalPrice"`
	CalculatedInputCost  *float64           `json:"calculatedInputCost"`
	CalculatedOutputCost *float64           `json:"calculatedOutputCost"`
	CalculatedTotalCost  *float64           `json:"calculatedTotalCost"`
	Latency              *float64           `json:"latency"`
	TimeToFirstToken     *float64           `json:"timeToFirstToken"`
	PromptTokens         int64              `json:"promptTokens"`
	CompletionTokens     int64              `json:"completionTokens"`
	TotalTokens          int64              `json:"totalTokens"`
	Unit                 *string            `json:"unit"`
	UsagePricingTierID   *string            `json:"usagePricingTierId"`
	UsagePricingTierName *string            `json:"usagePricingTierName"`
	CreatedAt            httpx.Timestamp    `json:"createdAt"`
	UpdatedAt            httpx.Timestamp    `json:"updatedAt"`
}

// PromptLookup finds the ids of the prompt versions generations name.
type PromptLookup interface {
	PromptVersionIDs(ctx context.Context, projectID string, refs []controlplane.PromptVersionRef) (map[controlplane.PromptVersionRef]string, error)
}

// PromptIDs maps the prompt versions a set of observations names to their
// ids. Generations carry a prompt's name and version, as the SDKs send them;
// the id is looked up when they are read, so a version deleted since has
// none.
type PromptIDs map[controlplane.PromptVersionRef]string

// LookupPromptIDs finds the ids of the prompt versions obs name, with one
// query for the page.
func LookupPromptIDs(ctx context.Context, prompts PromptLookup, projectID string, obs []chstore.Observation) (PromptIDs, error) {
	seen := map[controlplane.PromptVersionRef]bool{}
	var refs []controlplane.PromptVersionRef
	for _, o := range obs {
		if o.PromptName == "" || o.PromptVersion <= 0 {
			continue
		}
		ref := controlplane.PromptVersionRef{Name: o.PromptName, Version: int(o.PromptVersion)}
		if !seen[ref] {
			seen[ref] = true
			refs = append(refs, ref)
		}
	}
	if len(refs) == 0 {
		return nil, nil
	}
	ids, err := prompts.PromptVersionIDs(ctx, projectID, refs)
	return PromptIDs(ids), err
}

func (p PromptIDs) of(o chstore.Observation) *string {
	id, ok := p[controlplane.PromptVersionRef{Name: o.PromptName, Version: int(o.PromptVersion)}]
	if !ok {
		return nil
	}
	return &id
}

// ToView converts a stored observation. Model matching is not recorded, so
// modelId, prices and pricing tiers are null.
func ToView(o chstore.Observation, prompts PromptIDs) View {
	usage := usageOf(o.UsageDetails)
	costs := costsOf(o.CostDetails)
	return View{
		ID:                   o.ID,
		TraceID:              o.TraceID,
		ProjectID:            o.ProjectID,
		Type:                 o.Type,
		Name:                 o.Name,
		StartTime:            httpx.FromMicros(o.StartTime),
		EndTime:              httpx.OptionalMicros(o.EndTime),
		CompletionStartTime:  httpx.OptionalMicros(o.CompletionStartTime),
		Model:                httpx.OptionalString(o.Model),
		ModelParameters:      httpx.JSONValue(o.ModelParameters),
		Input:                httpx.JSONValue(o.Input),
		Output:               httpx.JSONValue(o.Output),
		Version:              httpx.OptionalString(o.Version),
		Metadata:             metadataValue(o.Metadata),
		Usage:                usage,
		Level:                o.Level,
		StatusMessage:        httpx.OptionalString(o.StatusMessage),
		ParentObservationID:  httpx.OptionalString(o.ParentID),
		PromptName:           httpx.OptionalString(o.PromptName),
		PromptVersion:        optionalInt(o.PromptVersion),
		PromptID:             prompts.of(o),
		UsageDetails:         nonNil(o.UsageDetails),
		CostDetails:          nonNil(o.CostDetails),
		Environment:          o.Environment,
		CalculatedInputCost:  costs.input,
		CalculatedOutputCost: costs.output,
		CalculatedTotalCost:  costs.total,
		Latency:              secondsBetween(o.StartTime, o.EndTime),
		TimeToFirstToken:     secondsBetween(o.StartTime, o.CompletionStartTime),
		PromptTokens:         usage.Input,
		CompletionTokens:     usage.Output,
		TotalTokens:          usage.Total,
		CreatedAt:            httpx.FromMicros(o.StoredAt),
		UpdatedAt:            httpx.FromMicros(o.StoredAt),
	}
}

// usageOf derives the usage block as Langfuse does: input and output sum
// the keys that contain them (input_cached_tokens counts as input), total
// is the `total` key, else input plus output.
func usageOf(details map[string]int64) Usage {
	var u Usage
	total, hasTotal := int64(0), false
	for k, v := range details {
		switch {
		case k == "total":
			total, hasTotal = v, true
		case strings.Contains(k, "input"):
			u.Input += v
		case strings.Contains(k, "output"):
			u.Output += v
		}
	}
	u.Total = u.Input + u.Output
	if hasTotal {
		u.Total = total
	}
	return u
}

type costs struct {
	input, output, total *float64
}

// costsOf derives the calculated costs the same way; all are null when the
// observation has no cost.
func costsOf(details map[string]float64) costs {
	if len(details) == 0 {
		return costs{}
	}
	var input, output, total float64
	hasTotal := false
	for k, v := range details {
		switch {
		case k == "total":
			total, hasTotal = v, true
		case strings.Contains(k, "input"):
			input += v
		case strings.Contains(k, "output"):
			output += v
		}
	}
	if !hasTotal {
		total = input + output
	}
	return costs{input: &input, output: &output, total: &total}
}

// TotalCost is the observation's total cost in USD, nil when it has none.
func TotalCost(o chstore.Observation) *float64 {
	return costsOf(o.CostDetails).total
}

func secondsBetween(startUS, endUS int64) *float64 {
	if endUS == 0 || startUS == 0 {
		return nil
	}
	s := float64(endUS-startUS) / 1e6
	return &s
}

func optionalInt(v int64) *int64 {
	if v == 0 {
		return nil
	}
	return &v
}

func nonNil[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return m
}

// metadataValue is the stored metadata object, {} when none was recorded.
func metadataValue(text string) httpx.JSON {
	if text == "" {
		return httpx.JSON("{}")
	}
	return httpx.JSONValue(text)
}
