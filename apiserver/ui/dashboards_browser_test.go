package ui_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/glassbox-dev/glassbox/apiserver/ui/uitest"
)

// TestBrowserDashboards opens the home dashboard of a project with traces,
// then builds a custom dashboard through its form in Chromium: a bar chart
// of cost by model and a line of p95 latency, the widget form offering only
// the chosen view's measures; then moves and removes a widget.
func TestBrowserDashboards(t *testing.T) {
	env := uitest.Start(t, uitest.Options{})
	now := time.Now().Add(-3 * time.Hour)
	for i, user := range []string{"alice", "bob", "alice", "carol", "dan"} {
		env.ChatTrace(t, "dash-"+string(rune('a'+i)), []string{"support-chat", "billing-chat"}[i%2], user, now.Add(time.Duration(i)*25*time.Minute))
	}
	p := env.URL + "/project/" + env.ProjectID
	b := uitest.NewTab(t, 2*time.Minute)
	b.SignIn(env.URL, env.OwnerEmail, env.OwnerPassword)

	b.Go(p + "?range=24h")
	b.WaitVisible(`[data-widget="Traces"] .big-number`)
	assert.Equal(t, "5", b.Text(`[data-widget="Traces"] .big-number`))
	assert.Equal(t, "4", b.Text(`[data-widget="Users"] .big-number`))
	assert.Equal(t, 1, b.Count(`[data-widget="Traces over time"] svg polygon`))
	assert.Contains(t, b.Text(`[data-widget="Cost by model"]`), "gpt-4o")
	b.Screenshot("home-dashboard")

	b.Go(p + "/dashboards")
	b.Type(`[data-testid=new-dashboard] input[name=name]`, "Support quality")
	b.ClickAndWait(`[data-testid=new-dashboard] button`)
	assert.Equal(t, "Support quality", b.Text(`[data-testid=dashboard-name]`))

	// The measure list follows the view: scores offer "value", not "totalCost".
	chooseView := func(view string) {
		b.SetValue(`[data-testid=add-widget] select[name=view]`, view)
		uitest.Eval[bool](b, `document.querySelector("[data-testid=add-widget] select[name=view]").dispatchEvent(new Event("change", {bubbles: true}))`)
	}
	chooseView("scores-numeric")
	assert.True(t, uitest.Eval[bool](b, `document.querySelector('[data-testid=add-widget] optgroup[data-view="observations"]').disabled`))
	assert.Equal(t, "scores-numeric", uitest.Eval[string](b, `document.querySelector("[data-testid=add-widget] select[name=measure]").selectedOptions[0].parentElement.dataset.view`))
	chooseView("observations")

	addWidget := func(name, measure, agg, dimension, chart string) {
		b.Type(`[data-testid=add-widget] input[name=name]`, name)
		b.SetValue(`[data-testid=add-widget] select[name=measure]`, measure)
		b.SetValue(`[data-testid=add-widget] select[name=agg]`, agg)
		b.SetValue(`[data-testid=add-widget] select[name=dimension]`, dimension)
		b.SetValue(`[data-testid=add-widget] select[name=chart]`, chart)
		b.ClickAndWait(`[data-testid=add-widget] button[type=submit]`)
	}
	last24h := func() {
		u := b.URL()
		u.RawQuery = "range=24h"
		b.Go(u.String())
	}
	addWidget("Cost by trace name", "totalCost", "sum", "traceName", "HORIZONTAL_BAR")
	last24h()
	assert.Contains(t, b.Text(`[data-widget="Cost by trace name"]`), "support-chat")
	addWidget("p95 latency by name", "latency", "p95", "name", "LINE_TIME_SERIES")
	last24h()
	assert.Equal(t, 2, b.Count(`[data-widget]`))
	assert.GreaterOrEqual(t, b.Count(`[data-widget="p95 latency by name"] svg polyline`), 1)
	b.Screenshot("dashboard")

	b.ClickAndWait(`[data-widget="p95 latency by name"] button[aria-label^="Move"][title="Move earlier"]`)
	assert.Equal(t, "p95 latency by name", uitest.Eval[string](b, `document.querySelector("[data-widget]").dataset.widget`))
	uitest.Eval[bool](b, `(window.confirm = () => true, true)`)
	b.ClickAndWait(`[data-widget="Cost by trace name"] button[data-confirm]`)
	assert.Equal(t, 0, b.Count(`[data-widget="Cost by trace name"]`))
	assert.Empty(t, b.ConsoleErrors())
}
