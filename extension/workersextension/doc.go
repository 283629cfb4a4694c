// Package workersextension runs the API's background jobs in the collector
// as the glassbox_workers extension: the evaluation workers (evaluator
// rules, backfills, prompt experiments), the alert evaluator and the
// automation deliveries, over the glassbox_controlplane and
// glassbox_storage extensions it names by id. A configuration runs them by
// listing the extension; glassbox_api runs none.
package workersextension // import "github.com/glassbox-dev/glassbox/extension/workersextension"
