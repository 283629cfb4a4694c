package mapping

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/glassbox-dev/glassbox/internal/model"
)

var (
	testTraceID  = pcommon.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}
	testSpanID   = pcommon.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}
	testParentID = pcommon.SpanID{0xa2, 0xfb, 0x4a, 0x1d, 0x1a, 0x96, 0xd3, 0x12}
	testNow      = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	testStart    = time.Date(2025, 10, 31, 8, 40, 0, 0, time.UTC)
)

// fixture is one span with its resource and scope, ready to be adjusted by a
// test before mapping.
type fixture struct {
	res   pcommon.Resource
	scope pcommon.InstrumentationScope
	span  ptrace.Span
}

// newFixture builds a child span (it has a parent) lasting one second.
func newFixture() fixture {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr(model.ProjectIDAttribute, "proj-1")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("test-scope")
	sp := ss.Spans().AppendEmpty()
	sp.SetTraceID(testTraceID)
	sp.SetSpanID(testSpanID)
	sp.SetParentSpanID(testParentID)
	sp.SetName("span-name")
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(testStart))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(testStart.Add(time.Second)))
	return fixture{res: rs.Resource(), scope: ss.Scope(), span: sp}
}

// withAttrs sets span attributes from a map (for tests where order does not matter).
func (f fixture) withAttrs(t testing.TB, attrs map[string]any) fixture {
	t.Helper()
	for k, v := range attrs {
		require.NoError(t, f.span.Attributes().PutEmpty(k).FromRaw(v))
	}
	return f
}

func (f fixture) root() fixture {
	f.span.SetParentSpanID(pcommon.SpanID{})
	return f
}

func (f fixture) inScope(name, version string) fixture {
	f.scope.SetName(name)
	f.scope.SetVersion(version)
	return f
}

func (f fixture) mapped() model.Observation {
	return FromSpan(f.res, f.scope, f.span, testNow)
}

// mapAttrs maps a child span carrying attrs.
func mapAttrs(t testing.TB, attrs map[string]any) model.Observation {
	return newFixture().withAttrs(t, attrs).mapped()
}
