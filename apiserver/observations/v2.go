package observations // import "github.com/glassbox-dev/glassbox/apiserver/observations"

import (
	"slices"
	"strings"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
	"github.com/glassbox-dev/glassbox/internal/chstore"
)

// Field groups of the v2 list, as Langfuse names them.
const (
	groupCore         = "core"
	groupBasic        = "basic"
	groupTime         = "time"
	groupIO           = "io"
	groupMetadata     = "metadata"
	groupModel        = "model"
	groupUsage        = "usage"
	groupPrompt       = "prompt"
	groupMetrics      = "metrics"
	groupTraceContext = "trace_context"
)

var allGroups = []string{
	groupCore, groupBasic, groupTime, groupIO, groupMetadata, groupModel, groupUsage, groupPrompt, groupMetrics, groupTraceContext,
}

// V2 is an observation of the v2 list: the core fields always, the others
// by field group. A group that was not requested is left out entirely
// (encoding/json skips nil embedded pointers); a requested one is complete,
// with null for absent values.
type V2 struct {
	V2Core
	*V2Basic
	*V2Time
	*V2IO
	*V2Metadata
	*V2Model
	*V2Usage
	*V2Prompt
	*V2Metrics
	*V2TraceContext
}

// V2Core is always present. Model prices are null: model matching is not recorded.
type V2Core struct {
	ID                  string           `json:"id"`
	TraceID             string           `json:"traceId"`
	StartTime           httpx.Timestamp  `json:"startTime"`
	EndTime             *httpx.Timestamp `json:"endTime"`
	ProjectID           string           `json:"projectId"`
	ParentObservationID *string          `json:"parentObservationId"`
	Type                string           `json:"type"`
	ModelID             *string          `json:"modelId"`
	InputPrice          *string          `json:"inputPrice"`
	OutputPrice         *string          `json:"outputPrice"`
	TotalPrice          *string          `json:"totalPrice"`
}

// V2Basic is the `basic` group. Glassbox has no bookmarks, so bookmarked is false.
type V2Basic struct {
	Name              string  `json:"name"`
	Level             string  `json:"level"`
	StatusMessage     *string `json:"statusMessage"`
	Version           *string `json:"version"`
	Environment       string  `json:"environment"`
	Bookmarked        bool    `json:"bookmarked"`
	Public            bool    `json:"public"`
	UserID            *string `json:"userId"`
	SessionID         *string `json:"sessionId"`
	IsRootObservation bool    `json:"isRootObservation"`
}

// V2Time is the `time` group.
type V2Time struct {
	CompletionStartTime *httpx.Timestamp `json:"completionStartTime"`
	CreatedAt           httpx.Timestamp  `json:"createdAt"`
	UpdatedAt           httpx.Timestamp  `json:"updatedAt"`
}

// V2IO is the `io` group: input and output as the raw stored strings.
type V2IO struct {
	Input  *string `json:"input"`
	Output *string `json:"output"`
}

// V2Metadata is the `metadata` group.
type V2Metadata struct {
	Metadata httpx.JSON `json:"metadata"`
}

// V2Model is the `model` group, with the field names of Langfuse's spec:
// the model as the client named it, and the matched model definition,
// which Glassbox does not record (null).
type V2Model struct {
	ProvidedModelName *string    `json:"providedModelName"`
	InternalModelID   *string    `json:"internalModelId"`
	ModelParameters   httpx.JSON `json:"modelParameters"`
}

// V2Usage is the `usage` group.
type V2Usage struct {
	UsageDetails         map[string]int64   `json:"usageDetails"`
	CostDetails          map[string]float64 `json:"costDetails"`
	TotalCost            *float64           `json:"totalCost"`
	UsagePricingTierName *string            `json:"usagePricingTierName"`
}

// V2Prompt is the `prompt` group.
type V2Prompt struct {
	PromptID      *string `json:"promptId"`
	PromptName    *string `json:"promptName"`
	PromptVersion *int64  `json:"promptVersion"`
}

// V2Metrics is the `metrics` group, in seconds.
type V2Metrics struct {
	Latency          *float64 `json:"latency"`
	TimeToFirstToken *float64 `json:"timeToFirstToken"`
}

// V2TraceContext is the `trace_context` group: trace fields the span carried.
type V2TraceContext struct {
	TraceName *string  `json:"traceName"`
	Tags      []string `json:"tags"`
	Release   *string  `json:"release"`
}

// V2Meta holds the cursor of the next page; absent on the last page.
type V2Meta struct {
	Cursor string `json:"cursor,omitempty"`
}

// V2List is the body of GET /api/public/v2/observations.
type V2List struct {
	Data []V2   `json:"data"`
	Meta V2Meta `json:"meta"`
}

// parseGroups checks the requested field groups; none means core and basic.
func parseGroups(requested []string) (map[string]bool, error) {
	if len(requested) == 0 {
		requested = []string{groupCore, groupBasic}
	}
	groups := map[string]bool{}
	for _, g := range requested {
		if !slices.Contains(allGroups, g) {
			return nil, httpx.BadRequest("Invalid query parameter fields: unknown field group %q, expected any of %s",
				g, strings.Join(allGroups, ", "))
		}
		groups[g] = true
	}
	return groups, nil
}

func toV2(o chstore.Observation, groups map[string]bool, prompts PromptIDs) V2 {
	v := V2{V2Core: V2Core{
		ID:                  o.ID,
		TraceID:             o.TraceID,
		StartTime:           httpx.FromMicros(o.StartTime),
		EndTime:             httpx.OptionalMicros(o.EndTime),
		ProjectID:           o.ProjectID,
		ParentObservationID: httpx.OptionalString(o.ParentID),
		Type:                o.Type,
	}}
	if groups[groupBasic] {
		v.V2Basic = &V2Basic{
			Name:              o.Name,
			Level:             o.Level,
			StatusMessage:     httpx.OptionalString(o.StatusMessage),
			Version:           httpx.OptionalString(o.Version),
			Environment:       o.Environment,
			Public:            o.Public,
			UserID:            httpx.OptionalString(o.UserID),
			SessionID:         httpx.OptionalString(o.SessionID),
			IsRootObservation: o.IsRoot || o.ParentID == "",
		}
	}
	if groups[groupTime] {
		v.V2Time = &V2Time{
			CompletionStartTime: httpx.OptionalMicros(o.CompletionStartTime),
			CreatedAt:           httpx.FromMicros(o.StoredAt),
			UpdatedAt:           httpx.FromMicros(o.StoredAt),
		}
	}
	if groups[groupIO] {
		v.V2IO = &V2IO{Input: httpx.OptionalString(o.Input), Output: httpx.OptionalString(o.Output)}
	}
	if groups[groupMetadata] {
		v.V2Metadata = &V2Metadata{Metadata: metadataValue(o.Metadata)}
	}
	if groups[groupModel] {
		v.V2Model = &V2Model{ProvidedModelName: httpx.OptionalString(o.Model), ModelParameters: httpx.JSONValue(o.ModelParameters)}
	}
	if groups[groupUsage] {
		v.V2Usage = &V2Usage{
			UsageDetails: nonNil(o.UsageDetails),
			CostDetails:  nonNil(o.CostDetails),
			TotalCost:    TotalCost(o),
		}
	}
	if groups[groupPrompt] {
		v.V2Prompt = &V2Prompt{PromptID: prompts.of(o), PromptName: httpx.OptionalString(o.PromptName), PromptVersion: optionalInt(o.PromptVersion)}
	}
	if groups[groupMetrics] {
		v.V2Metrics = &V2Metrics{
			Latency:          secondsBetween(o.StartTime, o.EndTime),
			TimeToFirstToken: secondsBetween(o.StartTime, o.CompletionStartTime),
		}
	}
	if groups[groupTraceContext] {
		v.V2TraceContext = &V2TraceContext{
			TraceName: httpx.OptionalString(o.TraceName),
			Tags:      httpx.NonNil(o.Tags),
			Release:   httpx.OptionalString(o.Release),
		}
	}
	return v
}
