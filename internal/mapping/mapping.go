package mapping

import (
	"encoding/hex"
	"math"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/glassbox-dev/glassbox/internal/model"
)

// Observations maps every span of td. The project id comes from the resource
// attribute model.ProjectIDAttribute. now fills timestamps that are entirely absent.
func Observations(td ptrace.Traces, now time.Time) []model.Observation {
	return AppendObservations(make([]model.Observation, 0, td.SpanCount()), td, now)
}

// AppendObservations is the allocation-friendly form used on the hot path: it
// appends to dst and reuses per-resource work across the resource's spans.
// The observations of one call may share strings and Tags slices, so they
// must not be modified in place.
func AppendObservations(dst []model.Observation, td ptrace.Traces, now time.Time) []model.Observation {
	m := getMapper(now, td.SpanCount())
	defer putMapper(m)
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		m.setResource(rs.Resource())
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j)
			m.setScope(ss.Scope())
			spans := ss.Spans()
			for k := 0; k < spans.Len(); k++ {
				dst = append(dst, model.Observation{})
				m.mapSpan(&dst[len(dst)-1], spans.At(k))
			}
		}
	}
	return dst
}

// PriceReader maps only what pricing reads (project, type, times, level,
// model, usage and cost) by the same rules as FromSpan, without the work of
// input, output and metadata. It reads one span after another with one
// mapper, deriving what a resource and a scope share once for their spans,
// as AppendObservations does. It is not safe for concurrent use; Close
// returns the mapper.
type PriceReader struct{ m *mapper }

// NewPriceReader starts reading spans received at now.
func NewPriceReader(now time.Time) PriceReader { return PriceReader{m: getMapper(now, 0)} }

// SetResource sets the resource of the spans read next; SetScope follows.
func (r PriceReader) SetResource(res pcommon.Resource) { r.m.setResource(res) }

// SetScope sets the instrumentation scope of the spans read next.
func (r PriceReader) SetScope(scope pcommon.InstrumentationScope) { r.m.setScope(scope) }

// Read maps the pricing fields of one span.
func (r PriceReader) Read(span ptrace.Span) model.Observation {
	r.m.load(span)
	o := model.Observation{ProjectID: r.m.res.projectID}
	r.m.priceFields(&o)
	return o
}

// Close ends the reader; it must not be used afterwards.
func (r PriceReader) Close() { putMapper(r.m) }

// FromSpan maps one span.
func FromSpan(res pcommon.Resource, scope pcommon.InstrumentationScope, span ptrace.Span, now time.Time) model.Observation {
	m := getMapper(now, 1)
	defer putMapper(m)
	m.setResource(res)
	m.setScope(scope)
	var o model.Observation
	m.mapSpan(&o, span)
	return o
}

var mapperPool = sync.Pool{New: func() any { return new(mapper) }}

func getMapper(now time.Time, spans int) *mapper {
	m := mapperPool.Get().(*mapper)
	m.now = now.UnixMicro()
	// A fresh id buffer each call: earlier observations keep pointing into the old one.
	m.ids = make([]byte, 0, spans*2*hex.EncodedLen(len(pcommon.SpanID{})))
	return m
}

// putMapper returns m to the pool without what it must not keep: the
// input's values and the output's strings.
func putMapper(m *mapper) {
	m.span = ptrace.Span{}
	m.a.reset()
	clear(m.meta[:cap(m.meta)])
	m.meta = m.meta[:0]
	clear(m.res.meta[:cap(m.res.meta)])
	m.res = resourceInfo{attrsJSON: m.res.attrsJSON[:0], traceMeta: m.res.traceMeta, meta: m.res.meta[:0]}
	m.scope.name, m.scope.version = "", ""
	m.ids = nil
	m.lastTraceID = pcommon.TraceID{}
	m.lastTraceHex, m.lastMeta, m.lastTraceMeta, m.lastMPs = "", "", "", ""
	m.lastTagsSrc, m.lastTags = attr{}, nil
	mapperPool.Put(m)
}

// mapper carries the state of one mapping call: what was derived from the
// current resource and scope, and scratch space reused from span to span.
type mapper struct {
	now int64

	res   resourceInfo
	scope scopeInfo

	span   ptrace.Span
	a      spanAttrs
	hidden []bool     // per span attribute: left out of metadata "attributes"
	meta   []keyValue // the span's attributes under metadata prefixes

	obj      objBuilder
	objItem  objBuilder
	buf      []byte
	tmp      []byte
	usageRaw usagePairs

	// Output strings. Ids are cut from one buffer per call; for the JSON
	// fields, consecutive spans often produce the same text (propagated trace
	// metadata, the resource part of metadata), so the last string is reused
	// when equal. Observations of one call may share these strings and the
	// Tags slice; they are read-only.
	ids                              []byte
	lastTraceID                      pcommon.TraceID
	lastTraceHex                     string
	lastMeta, lastTraceMeta, lastMPs string
	lastTagsSrc                      attr
	lastTags                         []string
}

// resourceInfo is what every span of a resource shares.
type resourceInfo struct {
	projectID   string
	serviceName string
	version     string // service.version
	release     string // langfuse.release
	envs        [3]attr
	python      bool
	sampleRate  attr
	attrsJSON   []byte     // resourceAttributes metadata object
	traceMeta   objBuilder // trace metadata carried by resource attributes
	meta        []keyValue // scratch: resource attributes under metadata prefixes
}

type keyValue struct {
	key string
	v   pcommon.Value
}

const metadataFamilies = famObsMeta | famTraceMeta | famLegacyMeta | famAIMeta

// scopeInfo is what every span of an instrumentation scope shares.
type scopeInfo struct {
	name, version string
	langfuseSDK   bool
	// pythonLegacy marks Python SDK <= 3.3 spans (needs the resource too).
	pythonLegacy bool
	json         []byte // scope metadata object
}

func (m *mapper) setResource(res pcommon.Resource) {
	r := &m.res
	*r = resourceInfo{attrsJSON: r.attrsJSON[:0], traceMeta: r.traceMeta, meta: r.meta[:0]}
	r.traceMeta.reset()
	attrs := res.Attributes()
	var traceBlob, legacyBlob attr
	r.attrsJSON = append(r.attrsJSON, '{')
	first := true
	for k, v := range attrs.All() {
		at := attr{v: v, ok: true}
		switch k {
		case model.ProjectIDAttribute:
			r.projectID = at.str()
		case "service.name":
			r.serviceName = at.str()
		case "service.version":
			r.version = at.text()
		case "langfuse.release":
			r.release = at.text()
		case "langfuse.environment":
			r.envs[0] = at
		case "deployment.environment.name":
			r.envs[1] = at
		case "deployment.environment":
			r.envs[2] = at
		case "telemetry.sdk.language":
			r.python = at.str() == "python"
		case model.SampleRateAttribute:
			r.sampleRate = at
		case "langfuse.trace.metadata":
			traceBlob = at
		case "langfuse.metadata":
			legacyBlob = at
		}
		if fam, _ := family(k); fam&metadataFamilies != 0 {
			r.meta = append(r.meta, keyValue{k, v})
		}
		if strings.HasPrefix(k, prefixInternal) {
			continue
		}
		if !first {
			r.attrsJSON = append(r.attrsJSON, ',')
		}
		first = false
		r.attrsJSON = appendString(r.attrsJSON, k)
		r.attrsJSON = append(r.attrsJSON, ':')
		r.attrsJSON = appendValue(r.attrsJSON, v)
	}
	r.attrsJSON = append(r.attrsJSON, '}')
	addMetadata(&r.traceMeta, r.meta, pick(traceBlob, legacyBlob), prefixTraceMeta)
}

func (m *mapper) setScope(scope pcommon.InstrumentationScope) {
	s := &m.scope
	s.name, s.version = scope.Name(), scope.Version()
	s.langfuseSDK = strings.HasPrefix(s.name, "langfuse-sdk")
	s.pythonLegacy = s.name == "langfuse-sdk" && m.res.python && versionAtMost33(s.version)
	b := append(s.json[:0], `{"name":`...)
	b = appendString(b, s.name)
	b = append(b, `,"version":`...)
	b = appendString(b, s.version)
	b = append(b, `,"attributes":`...)
	b = appendMap(b, scope.Attributes())
	s.json = append(b, '}')
}

// versionAtMost33 reports whether an SDK version is 3.3.x or older; an
// unknown version counts as old, as in Langfuse.
func versionAtMost33(v string) bool {
	if v == "" {
		return true
	}
	major, rest := leadingInt(v)
	if major != 3 {
		return major < 3
	}
	if rest == "" || rest[0] != '.' {
		return true
	}
	minor, _ := leadingInt(rest[1:])
	return minor <= 3
}

func leadingInt(s string) (int, string) {
	n, i := 0, 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' && n < 1<<20 {
		n = n*10 + int(s[i]-'0')
		i++
	}
	return n, s[i:]
}

// load reads the span's attributes into the mapper.
func (m *mapper) load(span ptrace.Span) {
	m.span = span
	a := &m.a
	a.reset()
	m.hidden = m.hidden[:0]
	m.meta = m.meta[:0]
	for k, v := range span.Attributes().All() {
		fam, hidden := a.set(k, v)
		m.hidden = append(m.hidden, hidden)
		if fam&metadataFamilies != 0 {
			m.meta = append(m.meta, keyValue{k, v})
		}
	}
}

// priceFields sets what pricing reads: type, times, level, model, usage and cost.
func (m *mapper) priceFields(o *model.Observation) {
	a := &m.a
	o.Type = m.observationType()
	o.StartTime, o.EndTime = m.times()
	o.Level = level(a.obsLevel, m.span.Status().Code())
	// Agent runs repeat what their generations report.
	if op := a.genaiOperation.str(); op != "invoke_agent" && op != "agent_step" && !m.pydanticAgent() {
		o.Model = m.model()
		o.UsageDetails = m.usage()
		o.CostDetails = m.cost()
		o.UsageEstimated = o.UsageDetails != nil && a.usageEstimated.isTrue()
	}
}

func (m *mapper) mapSpan(o *model.Observation, span ptrace.Span) {
	m.load(span)
	a := &m.a

	o.ProjectID = m.res.projectID
	o.TraceID = m.traceHex(span.TraceID())
	id := span.SpanID()
	o.ID = m.hexID(id[:])
	parent := span.ParentSpanID()
	if !parent.IsEmpty() {
		o.ParentID = m.hexID(parent[:])
	}
	// The SDK marks the top span of its process as the app root; when the
	// trace continues from an uninstrumented caller it is the root we have.
	o.IsRoot = parent.IsEmpty() || a.asRoot.isTrue() || a.appRoot.isTrue()

	m.priceFields(o)
	o.Name = m.name()
	o.CompletionStartTime = m.completionStart(o.StartTime)
	o.StatusMessage = a.obsStatusMessage.text()
	if !a.obsStatusMessage.ok {
		o.StatusMessage = statusMessage(span, a.errorType)
	}

	o.Input, o.Output = m.inputOutput()
	o.ModelParameters = m.modelParameters()
	if o.Type == model.TypeGeneration {
		o.PromptName, o.PromptVersion = m.prompt()
	}

	o.Environment = m.environment()
	o.Release, o.Version = m.res.release, m.res.version
	if a.release.ok {
		o.Release = a.release.text()
	}
	if a.version.ok {
		o.Version = a.version.text()
	}

	m.traceFields(o)
	o.Metadata = m.metadata()
	o.Experiment = m.experiment()

	o.ServiceName = m.res.serviceName
	o.ScopeName, o.ScopeVersion = m.scope.name, m.scope.version
	o.SampleRate = sampleRate(a.sampleRate, m.res.sampleRate)
}

// traceHex formats the trace id, reusing the string while consecutive spans
// belong to the same trace, which is the common case in a batch.
func (m *mapper) traceHex(id pcommon.TraceID) string {
	if id != m.lastTraceID || m.lastTraceHex == "" {
		m.lastTraceID = id
		m.lastTraceHex = m.hexID(id[:])
	}
	return m.lastTraceHex
}

// hexID formats an id into the call's id buffer. The buffer is only ever
// appended to, so the returned strings stay valid and unchanged.
func (m *mapper) hexID(id []byte) string {
	start := len(m.ids)
	m.ids = hex.AppendEncode(m.ids, id)
	return unsafeString(m.ids[start:])
}

// times returns start and end in microseconds: a missing edge takes the
// other one, and a span with neither gets now.
func (m *mapper) times() (start, end int64) {
	start, end = micros(m.span.StartTimestamp()), micros(m.span.EndTimestamp())
	switch {
	case start == 0 && end == 0:
		return m.now, m.now
	case start == 0:
		return end, end
	case end == 0:
		return start, start
	}
	return start, end
}

// micros converts nanoseconds; a value beyond int64 counts as absent.
func micros(ts pcommon.Timestamp) int64 {
	if ts > math.MaxInt64 {
		return 0
	}
	return int64(ts) / 1000
}

// name applies the span-name overrides of instrumentations that put the
// meaningful name into an attribute.
func (m *mapper) name() string {
	a := &m.a
	// LiteLLM's langfuse_otel callback names its generation apart.
	for _, at := range [...]attr{a.genaiToolName, a.genkitName, a.logfireMsg, a.litellmGenerationName} {
		if at.truthy() {
			return at.text()
		}
	}
	if a.aiToolCallName.ok {
		return a.aiToolCallName.text()
	}
	if a.aiOperationID.ok {
		op := a.aiOperationID.text()
		if a.aiFunctionID.truthy() {
			return a.aiFunctionID.text() + ":" + op
		}
		return op
	}
	return m.span.Name()
}

func (m *mapper) environment() string {
	a := &m.a
	return firstEnvironment([3]attr{a.environment, a.deployEnvName, a.deployEnv}, m.res.envs)
}

// environmentKeys name a span's environment, in precedence order.
var environmentKeys = [3]string{"langfuse.environment", "deployment.environment.name", "deployment.environment"}

// Environment is the environment a span with these span and resource
// attributes is stored under. Processors that decide by environment (the
// sampling rates) use it, so that they see what the reads show.
func Environment(span, res pcommon.Map) string {
	var spanEnvs, resEnvs [3]attr
	for i, k := range environmentKeys {
		spanEnvs[i].v, spanEnvs[i].ok = span.Get(k)
		resEnvs[i].v, resEnvs[i].ok = res.Get(k)
	}
	return firstEnvironment(spanEnvs, resEnvs)
}

// firstEnvironment takes the first environment key set on the span or,
// failing that, on the resource, normalised.
func firstEnvironment(span, res [3]attr) string {
	for i := range environmentKeys {
		if span[i].truthy() {
			return normalizeEnvironment(span[i].text())
		}
		if res[i].truthy() {
			return normalizeEnvironment(res[i].text())
		}
	}
	return defaultEnvironment
}

// model picks the model name by precedence.
func (m *mapper) model() string {
	a := &m.a
	for _, at := range [...]attr{
		a.obsModel, a.genaiResponseModel, a.aiModelID, a.genaiRequestModel,
		a.llmResponseModel, a.llmModelName, a.embeddingModelName, a.model,
	} {
		if at.truthy() {
			return at.text()
		}
	}
	if a.genkitSubtype.str() == "model" && a.genkitName.truthy() {
		return a.genkitName.text()
	}
	return ""
}

// prompt returns the linked prompt's name and version.
func (m *mapper) prompt() (string, int64) {
	a := &m.a
	name := pick(a.obsPromptName, a.lfPromptName).text()
	version, _ := intOf(pick(a.obsPromptVersion, a.lfPromptVersion))
	if (name == "" || version == 0) && a.aiMetaPrompt.isStr() {
		// The Vercel AI SDK integration passes {"name":..,"version":..}.
		if s := a.aiMetaPrompt.v.Str(); isJSONObject(s) {
			eachMember(s, func(k, raw string) {
				switch k {
				case "name":
					if name == "" {
						name = rawString(raw)
					}
				case "version":
					if f, ok := rawNumber(raw); ok && version == 0 && f == float64(int64(f)) {
						version = int64(f)
					}
				}
			})
		}
	}
	return name, version
}

// completionStart reads the time of the first streamed token.
func (m *mapper) completionStart(start int64) int64 {
	a := &m.a
	if s := a.obsCompletionStart.str(); s != "" {
		if t, ok := parseTime(s); ok {
			return t
		}
	}
	ms := a.aiMsToFirstChunk
	if !ms.ok {
		ms = a.aiStreamMsToFirstChunk
	}
	if f, ok := floatOf(ms); ok && f > 0 {
		return start + ceilMillis(f)*1000
	}
	// The GenAI conventions' client metric, as a span attribute (seconds):
	// what the AI SDK's @ai-sdk/otel sends.
	if f, ok := floatOf(a.genaiTimeToFirstChunk); ok && f > 0 {
		return start + int64(f*1e6)
	}
	return 0
}

// statusMessage is the span status's message or, for a failed span whose
// status says nothing (the Anthropic SDK's own spans), its exception's
// message, else its error.type.
func statusMessage(span ptrace.Span, errorType attr) string {
	if msg := span.Status().Message(); msg != "" || span.Status().Code() != ptrace.StatusCodeError {
		return msg
	}
	events := span.Events()
	for i := 0; i < events.Len(); i++ {
		if e := events.At(i); e.Name() == "exception" {
			if v, ok := e.Attributes().Get("exception.message"); ok && v.Str() != "" {
				return v.Str()
			}
		}
	}
	return errorType.text()
}

func ceilMillis(f float64) int64 {
	n := int64(f)
	if float64(n) < f {
		n++
	}
	return n
}

// experiment reads the experiment runner's attributes. A span without an
// experiment id is not part of one, whatever else it carries.
func (m *mapper) experiment() model.Experiment {
	a := &m.a
	if !a.expID.truthy() {
		return model.Experiment{}
	}
	return model.Experiment{
		ID: a.expID.text(), Name: a.expName.text(), DatasetID: a.expDatasetID.text(),
		ItemID: a.expItemID.text(), ItemRootID: a.expItemRoot.text(),
		Description: a.expDescription.text(), Metadata: a.expMetadata.text(),
		ItemMetadata: a.expItemMetadata.text(), ItemExpectedOutput: a.expItemExpected.text(),
	}
}

// traceFields fills the trace-level fields the span carries.
func (m *mapper) traceFields(o *model.Observation) {
	a := &m.a
	o.TraceName = a.traceName.text()
	if o.TraceName == "" && o.IsRoot {
		o.TraceName = o.Name
	}
	o.UserID = firstTruthy(a.lfUserID, a.userID, a.obsMetaUserID, a.traceMetaUserID, a.aiMetaUserID).text()
	o.SessionID = firstTruthy(a.lfSessionID, a.sessionID, a.conversationID, a.obsMetaSessionID,
		a.traceMetaSessionID, a.aiMetaSessionID).text()
	o.Tags = m.tags(firstTruthy(a.traceTags, a.lfTags, a.obsMetaTags, a.traceMetaTags, a.aiMetaTags, a.tagTags))
	o.Public = pick(a.tracePublic, a.lfPublic).isTrue()

	o.TraceInput = a.traceInput.text()
	o.TraceOutput = a.traceOutput.text()
	if o.IsRoot {
		// A root span's own input and output stand for the trace's.
		if !a.traceInput.truthy() {
			o.TraceInput = o.Input
		}
		if !a.traceOutput.truthy() {
			o.TraceOutput = o.Output
		}
	}

	b := &m.obj
	b.reset()
	b.addAll(&m.res.traceMeta)
	if a.families&(famTraceMeta|famLegacyMeta|famAIMeta) != 0 || a.traceMetadata.ok || a.lfMetadata.ok {
		addMetadata(b, m.meta, pick(a.traceMetadata, a.lfMetadata), prefixTraceMeta)
	}
	o.TraceMetadata = m.objString(b, &m.lastTraceMeta)
}

// metadata builds the observation metadata: trace metadata from resource
// attributes, the observation's own metadata, the remaining span attributes
// (not for Langfuse SDK spans, whose attributes are all Langfuse keys), the
// resource attributes and the instrumentation scope.
func (m *mapper) metadata() string {
	a := &m.a
	b := &m.obj
	b.reset()
	b.addAll(&m.res.traceMeta)
	if a.families&(famObsMeta|famLegacyMeta|famAIMeta) != 0 || a.obsMetadata.ok || a.lfMetadata.ok {
		addMetadata(b, m.meta, pick(a.obsMetadata, a.lfMetadata), prefixObsMeta)
	}
	if a.aiPromptTools.truthy() {
		b.addValue("tools", a.aiPromptTools.v)
	}
	if !m.scope.langfuseSDK {
		m.tmp = m.filteredAttributes(m.tmp[:0])
		b.addRaw("attributes", unsafeString(m.tmp))
	}
	b.addRaw("resourceAttributes", unsafeString(m.res.attrsJSON))
	b.addRaw("scope", unsafeString(m.scope.json))
	return m.objString(b, &m.lastMeta)
}

// filteredAttributes appends the span attributes that are not shown
// elsewhere, with non-string values as JSON text, as Langfuse shows them.
func (m *mapper) filteredAttributes(dst []byte) []byte {
	dst = append(dst, '{')
	i, first := 0, true
	for k, v := range m.span.Attributes().All() {
		hidden := i < len(m.hidden) && m.hidden[i]
		i++
		if hidden {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendString(dst, k)
		dst = append(dst, ':')
		if v.Type() == pcommon.ValueTypeStr {
			dst = appendString(dst, v.Str())
			continue
		}
		m.buf = appendValue(m.buf[:0], v)
		dst = appendString(dst, unsafeString(m.buf))
	}
	return append(dst, '}')
}

// objString renders a builder to a string, "{}" when empty, reusing *last
// when the text is the same.
func (m *mapper) objString(b *objBuilder, last *string) string {
	if b.empty() {
		return "{}"
	}
	m.buf = b.appendTo(m.buf[:0])
	if string(m.buf) != *last {
		*last = string(m.buf)
	}
	return *last
}

// tags reads the trace tags, reusing the previous span's slice when the
// span carries the same value, as propagated tags are.
func (m *mapper) tags(a attr) []string {
	if a.ok && m.lastTagsSrc.ok && a.v.Equal(m.lastTagsSrc.v) {
		return m.lastTags
	}
	m.lastTagsSrc, m.lastTags = a, parseTags(a)
	return m.lastTags
}

// addMetadata adds metadata in Langfuse's shape: the blob's members, then
// every attribute under the own prefix, langfuse.metadata. or
// ai.telemetry.metadata. with the prefix removed. The Vercel AI SDK keys that
// stand for trace fields are not metadata.
func addMetadata(b *objBuilder, attrs []keyValue, blob attr, ownPrefix string) {
	b.addBlob(blob)
	for _, kv := range attrs {
		k, v := kv.key, kv.v
		var key string
		switch {
		case strings.HasPrefix(k, ownPrefix):
			key = k[len(ownPrefix):]
		case strings.HasPrefix(k, prefixLegacyMeta):
			key = k[len(prefixLegacyMeta):]
		case strings.HasPrefix(k, prefixAIMeta):
			key = k[len(prefixAIMeta):]
			switch key {
			case "userId", "sessionId", "tags", "langfusePrompt":
				continue
			}
		default:
			continue
		}
		b.addEmbedded(key, v)
	}
}
