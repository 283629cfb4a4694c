package tracing

import (
	"cmp"
	"slices"

	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/model"
)

// Node is one observation as the trace view draws it: a row of the tree
// and its bar on the timeline, laid out on the server so that neither needs
// script to appear.
type Node struct {
	ID, ParentID string
	Type, Name   string
	Level        string
	Depth        int
	// Start and Duration place the bar, in percent of the trace's span.
	Start, Width float64
	// DurationMs is the observation's own duration; -1 while it has no end.
	DurationMs float64
	Model      string
	// Cost and Tokens are the observation's own; TotalCost and TotalTokens
	// add its descendants'.
	Cost, TotalCost     float64
	Tokens, TotalTokens int64
	Children            int
}

// Tree is a trace's observations in display order: each parent followed by
// its children, children by start time.
type Tree struct {
	Nodes []Node
	// StartUs and EndUs bound the whole trace; DurationMs is their distance.
	StartUs, EndUs int64
	DurationMs     float64
	Cost           float64
	Tokens         int64
}

// tokens is the total usage of an observation: its "total" when it has one,
// else the sum of input and output.
func tokens(o *model.Observation) int64 {
	if t, ok := o.UsageDetails["total"]; ok {
		return t
	}
	return o.UsageDetails["input"] + o.UsageDetails["output"]
}

func cost(o *model.Observation) float64 {
	if c, ok := o.CostDetails["total"]; ok {
		return c
	}
	var sum float64
	for _, c := range o.CostDetails {
		sum += c
	}
	return sum
}

// BuildTree orders and measures a trace's observations. An observation
// whose parent is not in the trace (not received yet, or sampled away) is
// shown at the top level rather than lost.
func BuildTree(obs []chstore.Observation) Tree {
	var t Tree
	if len(obs) == 0 {
		return t
	}
	byID := make(map[string]int, len(obs))
	for i := range obs {
		byID[obs[i].ID] = i
	}
	children := make(map[string][]int, len(obs))
	var roots []int
	t.StartUs, t.EndUs = obs[0].StartTime, obs[0].StartTime
	for i := range obs {
		o := &obs[i].Observation
		if _, ok := byID[o.ParentID]; o.ParentID == "" || !ok || o.ParentID == o.ID {
			roots = append(roots, i)
		} else {
			children[o.ParentID] = append(children[o.ParentID], i)
		}
		t.StartUs = min(t.StartUs, o.StartTime)
		t.EndUs = max(t.EndUs, o.StartTime, o.EndTime)
	}
	byStart := func(a, b int) int {
		return cmp.Or(cmp.Compare(obs[a].StartTime, obs[b].StartTime), cmp.Compare(obs[a].ID, obs[b].ID))
	}
	slices.SortFunc(roots, byStart)
	for _, c := range children {
		slices.SortFunc(c, byStart)
	}
	span := float64(t.EndUs - t.StartUs)
	t.DurationMs = span / 1000
	t.Nodes = make([]Node, 0, len(obs))
	visited := make([]bool, len(obs))
	// Depth-first with an explicit stack: a 10,000-level chain must not
	// exhaust the goroutine stack, and a cycle in bad data must end.
	type frame struct{ i, depth int }
	stack := make([]frame, 0, 64)
	for k := len(roots) - 1; k >= 0; k-- {
		stack = append(stack, frame{roots[k], 0})
	}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if visited[f.i] {
			continue
		}
		visited[f.i] = true
		o := &obs[f.i].Observation
		n := Node{ID: o.ID, ParentID: o.ParentID, Type: o.Type, Name: o.Name, Level: o.Level, Depth: f.depth,
			Model: o.Model, Cost: cost(o), Tokens: tokens(o), DurationMs: -1, Children: len(children[o.ID])}
		if o.EndTime >= o.StartTime && o.EndTime > 0 {
			n.DurationMs = float64(o.EndTime-o.StartTime) / 1000
		}
		if span > 0 {
			n.Start = 100 * float64(o.StartTime-t.StartUs) / span
			end := o.EndTime
			if end < o.StartTime {
				end = o.StartTime
			}
			n.Width = max(100*float64(end-o.StartTime)/span, 0.2)
		} else {
			n.Width = 100
		}
		t.Nodes = append(t.Nodes, n)
		c := children[o.ID]
		for k := len(c) - 1; k >= 0; k-- {
			stack = append(stack, frame{c[k], f.depth + 1})
		}
	}
	// Observations only reachable through a cycle: show them flat.
	for i := range obs {
		if !visited[i] {
			o := &obs[i].Observation
			t.Nodes = append(t.Nodes, Node{ID: o.ID, ParentID: o.ParentID, Type: o.Type, Name: o.Name, Level: o.Level,
				Model: o.Model, Cost: cost(o), Tokens: tokens(o), DurationMs: -1, Width: 0.2})
		}
	}
	// Roll costs and tokens up: children come after their parent, so a
	// backward pass sees every child before its parent.
	index := make(map[string]int, len(t.Nodes))
	for i := range t.Nodes {
		index[t.Nodes[i].ID] = i
		t.Nodes[i].TotalCost, t.Nodes[i].TotalTokens = t.Nodes[i].Cost, t.Nodes[i].Tokens
		t.Cost += t.Nodes[i].Cost
		t.Tokens += t.Nodes[i].Tokens
	}
	for i := len(t.Nodes) - 1; i >= 0; i-- {
		n := &t.Nodes[i]
		if p, ok := index[n.ParentID]; ok && p < i && n.Depth > 0 {
			t.Nodes[p].TotalCost += n.TotalCost
			t.Nodes[p].TotalTokens += n.TotalTokens
		}
	}
	return t
}
