package model

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// StampProject writes the authenticated project on every resource. Any value
// the client sent is removed first, duplicates included, so no span can claim
// another project. It is the one rule every ingest path applies.
func StampProject(td ptrace.Traces, projectID string) {
	for _, rs := range td.ResourceSpans().All() {
		attrs := rs.Resource().Attributes()
		attrs.RemoveIf(func(k string, _ pcommon.Value) bool { return k == ProjectIDAttribute })
		attrs.PutStr(ProjectIDAttribute, projectID)
	}
}
