package samplingprocessor // import "github.com/glassbox-dev/glassbox/processor/samplingprocessor"

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/internal/mapping"
	"github.com/glassbox-dev/glassbox/internal/model"
	"github.com/glassbox-dev/glassbox/internal/refresh"
	"github.com/glassbox-dev/glassbox/internal/sampling"
)

const scopeName = "github.com/glassbox-dev/glassbox/processor/samplingprocessor"

type samplingProcessor struct {
	cfg    *Config
	logger *zap.Logger

	global   sampling.Rates
	projects map[string]sampling.Rates
	// settings are the projects' settings from the source, swapped whole
	// by the refresh loop.
	settings atomic.Pointer[map[string]sampling.Rates]

	spans            metric.Int64Counter
	keptOpt, dropOpt metric.AddOption
	loop             *refresh.Loop
}

func newSamplingProcessor(cfg *Config, set processor.Settings) (*samplingProcessor, error) {
	spans, err := spansMetric.Int64Counter(set.MeterProvider.Meter(scopeName))
	if err != nil {
		return nil, err
	}
	rate := cfg.Rate
	p := &samplingProcessor{
		cfg:      cfg,
		logger:   set.Logger,
		global:   sampling.Rates{Rate: &rate, Environments: lowerKeys(cfg.Environments)},
		projects: make(map[string]sampling.Rates, len(cfg.Projects)),
		spans:    spans,
		keptOpt:  metric.WithAttributeSet(attribute.NewSet(attribute.String("decision", "kept"))),
		dropOpt:  metric.WithAttributeSet(attribute.NewSet(attribute.String("decision", "dropped"))),
	}
	for id, pc := range cfg.Projects {
		p.projects[id] = sampling.Rates{Rate: pc.Rate, Environments: lowerKeys(pc.Environments)}
	}
	p.settings.Store(&map[string]sampling.Rates{})
	return p, nil
}

// lowerKeys lower-cases environment names, since stored environments are.
func lowerKeys(envs map[string]float64) map[string]float64 {
	if len(envs) == 0 {
		return nil
	}
	out := make(map[string]float64, len(envs))
	for k, v := range envs {
		out[strings.ToLower(strings.TrimSpace(k))] = v
	}
	return out
}

// start resolves the settings source and reloads the settings in the
// background; until the first load the configuration alone applies.
func (p *samplingProcessor) start(_ context.Context, host component.Host) error {
	if p.cfg.SettingsSource == nil {
		return nil
	}
	ext, ok := host.GetExtensions()[*p.cfg.SettingsSource]
	if !ok {
		return fmt.Errorf("settings_source extension %q is not configured", p.cfg.SettingsSource)
	}
	source, ok := ext.(sampling.Source)
	if !ok {
		return fmt.Errorf("extension %q does not serve sampling settings", p.cfg.SettingsSource)
	}
	p.loop = refresh.Start(p.cfg.RefreshInterval, p.cfg.RefreshTimeout, func(ctx context.Context) error {
		settings, err := source.ProjectSampling(ctx)
		if err != nil {
			return fmt.Errorf("load sampling settings: %w", err)
		}
		next := make(map[string]sampling.Rates, len(settings))
		for id, r := range settings {
			next[id] = sampling.Rates{Rate: r.Rate, Environments: lowerKeys(r.Environments)}
		}
		p.settings.Store(&next)
		return nil
	}, p.logger, refresh.WatchOf(ext, refresh.KindSampling))
	return nil
}

func (p *samplingProcessor) shutdown(context.Context) error {
	p.loop.Stop()
	p.loop = nil
	return nil
}

func (p *samplingProcessor) processTraces(ctx context.Context, td ptrace.Traces) (ptrace.Traces, error) {
	p.loop.Current(ctx)
	settings := *p.settings.Load()
	var kept, dropped int64
	td.ResourceSpans().RemoveIf(func(rs ptrace.ResourceSpans) bool {
		res := rs.Resource().Attributes()
		project := ""
		if v, ok := res.Get(model.ProjectIDAttribute); ok {
			project = v.Str()
		}
		levels := [...]sampling.Rates{settings[project], p.projects[project], p.global}
		resPrior := sampleRate(res)
		rs.ScopeSpans().RemoveIf(func(ss ptrace.ScopeSpans) bool {
			ss.Spans().RemoveIf(func(span ptrace.Span) bool {
				attrs := span.Attributes()
				prior := sampleRate(attrs)
				if prior == 1 {
					prior = resPrior
				}
				d := sampling.Decide(span.TraceID(), span.TraceState().AsRaw(), rateOf(levels[:], attrs, res), prior)
				if !d.Keep {
					dropped++
					return true
				}
				kept++
				if d.Rate < 1 {
					attrs.PutDouble(model.SampleRateAttribute, d.Rate)
				}
				if d.TraceState != "" {
					span.TraceState().FromRaw(d.TraceState)
				}
				return false
			})
			return ss.Spans().Len() == 0
		})
		return rs.ScopeSpans().Len() == 0
	})
	if kept > 0 {
		p.spans.Add(ctx, kept, p.keptOpt)
	}
	if dropped > 0 {
		p.spans.Add(ctx, dropped, p.dropOpt)
	}
	if td.ResourceSpans().Len() == 0 {
		return td, processorhelper.ErrSkipProcessingData
	}
	return td, nil
}

// rateOf returns the first rate the levels set for the span's environment,
// as it will be stored; the environment is looked up only when some level
// has environment rates.
func rateOf(levels []sampling.Rates, span, res pcommon.Map) float64 {
	env := ""
	for _, l := range levels {
		if len(l.Environments) > 0 && env == "" {
			env = mapping.Environment(span, res)
		}
		if r, ok := l.Lookup(env); ok {
			return r
		}
	}
	return 1
}

// sampleRate is an earlier stage's glassbox.sample_rate when it is a
// fraction in (0, 1], else 1.
func sampleRate(attrs pcommon.Map) float64 {
	v, ok := attrs.Get(model.SampleRateAttribute)
	if !ok {
		return 1
	}
	var f float64
	switch v.Type() {
	case pcommon.ValueTypeDouble:
		f = v.Double()
	case pcommon.ValueTypeInt:
		f = float64(v.Int())
	case pcommon.ValueTypeStr:
		var err error
		if f, err = strconv.ParseFloat(v.Str(), 64); err != nil {
			return 1
		}
	default:
		return 1
	}
	if f > 0 && f <= 1 {
		return f
	}
	return 1
}
