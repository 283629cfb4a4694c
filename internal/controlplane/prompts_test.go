package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/glassbox-dev/glassbox/internal/promptcompose"
)

func textPrompt(name, text string, labels ...string) NewPrompt {
	raw, _ := json.Marshal(text)
	return NewPrompt{Name: name, Prompt: raw, Labels: labels}
}

func promptText(t *testing.T, p Prompt) string {
	t.Helper()
	var s string
	require.NoError(t, json.Unmarshal(p.Prompt, &s), string(p.Prompt))
	return s
}

func TestPromptVersionsAndLabels(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, _ := twoOrgs(t, s)

		v1, err := s.CreatePrompt(ctx, pa.ID, NewPrompt{
			Name: "folder/greet", Prompt: json.RawMessage(`"Hello {{name}}"`), Labels: []string{"production"},
			Config: json.RawMessage(`{"model": "gpt-4o", "temperature": 0.2}`), Tags: []string{"b", "a", "b"},
			CommitMessage: "first",
		})
		require.NoError(t, err)
		assert.Equal(t, 1, v1.Version)
		assert.Equal(t, PromptText, v1.Type)
		assert.Equal(t, []string{"latest", "production"}, v1.Labels)
		assert.Equal(t, []string{"a", "b"}, v1.Tags)
		assert.JSONEq(t, `{"model":"gpt-4o","temperature":0.2}`, string(v1.Config))
		assert.Equal(t, "first", v1.CommitMessage)
		assert.Equal(t, "API", v1.CreatedBy)

		v2, err := s.CreatePrompt(ctx, pa.ID, textPrompt("folder/greet", "Hi {{name}}", "staging"))
		require.NoError(t, err)
		assert.Equal(t, 2, v2.Version)
		assert.Equal(t, []string{"latest", "staging"}, v2.Labels)
		assert.Equal(t, []string{"a", "b"}, v2.Tags, "omitted tags are kept")
		assert.JSONEq(t, `{}`, string(v2.Config))

		got, err := s.GetPrompt(ctx, pa.ID, "folder/greet", PromptSelector{})
		require.NoError(t, err)
		assert.Equal(t, 1, got.Version, "no selector means production")
		assert.Equal(t, []string{"production"}, got.Labels, "latest moved to v2")
		got, err = s.GetPrompt(ctx, pa.ID, "folder/greet", PromptSelector{Label: "latest"})
		require.NoError(t, err)
		assert.Equal(t, "Hi {{name}}", promptText(t, got))
		got, err = s.GetPrompt(ctx, pa.ID, "folder/greet", PromptSelector{Version: 1})
		require.NoError(t, err)
		assert.Equal(t, "Hello {{name}}", promptText(t, got))
		_, err = s.GetPrompt(ctx, pa.ID, "folder/greet", PromptSelector{Version: 3})
		assert.ErrorIs(t, err, ErrNotFound)
		_, err = s.GetPrompt(ctx, pa.ID, "folder/greet", PromptSelector{Label: "nope"})
		assert.ErrorIs(t, err, ErrNotFound)

		// Moving production to v2 takes it off v1.
		moved, err := s.SetPromptLabels(ctx, pa.ID, "folder/greet", 2, []string{"production", "production"})
		require.NoError(t, err)
		assert.Equal(t, []string{"latest", "production", "staging"}, moved.Labels)
		got, err = s.GetPrompt(ctx, pa.ID, "folder/greet", PromptSelector{Version: 1})
		require.NoError(t, err)
		assert.Equal(t, []string{}, got.Labels, "no labels is an empty list, never null")
		assert.True(t, got.UpdatedAt.After(got.CreatedAt) || got.UpdatedAt.Equal(got.CreatedAt))

		_, err = s.SetPromptLabels(ctx, pa.ID, "folder/greet", 1, []string{"latest"})
		assert.ErrorIs(t, err, ErrInvalid, "latest cannot be moved")
		_, err = s.SetPromptLabels(ctx, pa.ID, "folder/greet", 9, []string{"x"})
		assert.ErrorIs(t, err, ErrNotFound)

		// New tags rewrite the name's tags; an empty list clears them.
		v3, err := s.CreatePrompt(ctx, pa.ID, NewPrompt{Name: "folder/greet", Prompt: json.RawMessage(`"x"`), Tags: []string{}})
		require.NoError(t, err)
		assert.Empty(t, v3.Tags)
		got, err = s.GetPrompt(ctx, pa.ID, "folder/greet", PromptSelector{Version: 1})
		require.NoError(t, err)
		assert.Empty(t, got.Tags, "tags are shared by all versions")

		_, err = s.CreatePrompt(ctx, pa.ID, NewPrompt{Name: "folder/greet", Type: PromptChat,
			Prompt: json.RawMessage(`[{"role":"user","content":"x"}]`)})
		assert.ErrorIs(t, err, ErrInvalid, "the type of a name is fixed")
	})
}

func TestChatPrompts(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, _ := twoOrgs(t, s)
		p, err := s.CreatePrompt(ctx, pa.ID, NewPrompt{Name: "chat", Type: PromptChat, Prompt: json.RawMessage(`[
			{"role": "system", "content": "You help with {{topic}}.", "type": "chatmessage"},
			{"type": "placeholder", "name": "history"},
			{"role": "user", "content": ""}]`)})
		require.NoError(t, err)
		assert.JSONEq(t, `[{"role":"system","content":"You help with {{topic}}."},{"type":"placeholder","name":"history"},
			{"role":"user","content":""}]`, string(p.Prompt))

		for name, body := range map[string]string{
			"not an array":            `"text"`,
			"no role":                 `[{"content":"x"}]`,
			"content not a string":    `[{"role":"user","content":1}]`,
			"bad placeholder name":    `[{"type":"placeholder","name":"1x"}]`,
			"unknown type":            `[{"type":"image","role":"user","content":"x"}]`,
			"variable is placeholder": `[{"role":"user","content":"{{ history }}"},{"type":"placeholder","name":"history"}]`,
		} {
			_, err := s.CreatePrompt(ctx, pa.ID, NewPrompt{Name: "bad", Type: PromptChat, Prompt: json.RawMessage(body)})
			assert.ErrorIs(t, err, ErrInvalid, name)
		}
	})
}

func TestPromptValidation(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, _ := twoOrgs(t, s)
		long := make([]byte, 501)
		for i := range long {
			long[i] = 'x'
		}
		for name, np := range map[string]NewPrompt{
			"empty name":      textPrompt("", "x"),
			"pipe in name":    textPrompt("a|b", "x"),
			"html in name":    textPrompt("<b>", "x"),
			"empty folder":    textPrompt("a//b", "x"),
			"trailing slash":  textPrompt("a/", "x"),
			"reserved name":   textPrompt("new", "x"),
			"bad label":       textPrompt("p", "x", "Prod"),
			"long label":      textPrompt("p", "x", "a234567890123456789012345678901234567"),
			"text not string": {Name: "p", Prompt: json.RawMessage(`["x"]`)},
			"unknown type":    {Name: "p", Type: "image", Prompt: json.RawMessage(`"x"`)},
			"bad config":      {Name: "p", Prompt: json.RawMessage(`"x"`), Config: json.RawMessage(`{`)},
			"commit message":  {Name: "p", Prompt: json.RawMessage(`"x"`), CommitMessage: string(long)},
			"empty tag":       {Name: "p", Prompt: json.RawMessage(`"x"`), Tags: []string{""}},
			"bad reference":   textPrompt("p", "@@@langfusePrompt:name=x@@@"),
			"bad ref version": textPrompt("p", "@@@langfusePrompt:name=x|version=0@@@"),
			"bad ref key":     textPrompt("p", "@@@langfusePrompt:name=x|tag=a@@@"),
		} {
			_, err := s.CreatePrompt(ctx, pa.ID, np)
			assert.ErrorIs(t, err, ErrInvalid, name)
		}
		_, err := s.CreatePrompt(ctx, "missing-project", textPrompt("p", "x"))
		assert.ErrorIs(t, err, ErrNotFound)
	})
}

func TestDeletePrompts(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, _ := twoOrgs(t, s)
		for i, labels := range [][]string{{"production"}, {"staging"}, {"staging2"}} {
			_, err := s.CreatePrompt(ctx, pa.ID, textPrompt("p", fmt.Sprint("v", i+1), labels...))
			require.NoError(t, err)
		}
		// Deleting the latest version moves latest down.
		require.NoError(t, s.DeletePrompts(ctx, pa.ID, "p", PromptSelector{Version: 3}))
		latest, err := s.GetPrompt(ctx, pa.ID, "p", PromptSelector{Label: "latest"})
		require.NoError(t, err)
		assert.Equal(t, 2, latest.Version)
		assert.Equal(t, []string{"latest", "staging"}, latest.Labels)

		require.NoError(t, s.DeletePrompts(ctx, pa.ID, "p", PromptSelector{Label: "staging"}))
		latest, err = s.GetPrompt(ctx, pa.ID, "p", PromptSelector{Label: "latest"})
		require.NoError(t, err)
		assert.Equal(t, 1, latest.Version)

		assert.ErrorIs(t, s.DeletePrompts(ctx, pa.ID, "p", PromptSelector{Label: "staging"}), ErrNotFound)
		assert.ErrorIs(t, s.DeletePrompts(ctx, pa.ID, "p", PromptSelector{Version: 7}), ErrNotFound)
		require.NoError(t, s.DeletePrompts(ctx, pa.ID, "p", PromptSelector{}))
		_, err = s.GetPrompt(ctx, pa.ID, "p", PromptSelector{Label: "latest"})
		assert.ErrorIs(t, err, ErrNotFound)
		assert.ErrorIs(t, s.DeletePrompts(ctx, pa.ID, "p", PromptSelector{}), ErrNotFound)

		again, err := s.CreatePrompt(ctx, pa.ID, textPrompt("p", "fresh"))
		require.NoError(t, err)
		assert.Equal(t, 1, again.Version, "a deleted name starts over")
	})
}

func TestPromptComposition(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, pb := twoOrgs(t, s)
		_, err := s.CreatePrompt(ctx, pa.ID, textPrompt("lib/tone", "Be \"kind\".", "production"))
		require.NoError(t, err)
		_, err = s.CreatePrompt(ctx, pa.ID, textPrompt("lib/tone", "Be brief."))
		require.NoError(t, err)
		mid, err := s.CreatePrompt(ctx, pa.ID, textPrompt("mid",
			"Rules: @@@langfusePrompt:name=lib/tone|label=production@@@ and @@@langfusePrompt:name=lib/tone|version=2@@@", "production"))
		require.NoError(t, err)
		assert.Contains(t, promptText(t, mid), "@@@langfusePrompt:name=lib/tone|label=production@@@", "stored with its tags")

		top, err := s.CreatePrompt(ctx, pa.ID, NewPrompt{Name: "top", Type: PromptChat, Labels: []string{"production"},
			Prompt: json.RawMessage(`[{"role":"system","content":"@@@langfusePrompt:name=mid|label=production@@@ {{x}}"}]`)})
		require.NoError(t, err)

		resolved, err := s.ResolvePrompt(ctx, pa.ID, "top", PromptSelector{})
		require.NoError(t, err)
		assert.JSONEq(t, `[{"role":"system","content":"Rules: Be \"kind\". and Be brief. {{x}}"}]`, string(resolved.Prompt))
		require.NotNil(t, resolved.Graph)
		assert.Equal(t, promptcompose.Node{ID: top.ID, Name: "top", Version: 1}, resolved.Graph.Root)
		assert.Len(t, resolved.Graph.Dependencies[top.ID], 1)
		assert.Len(t, resolved.Graph.Dependencies[mid.ID], 2)

		plain, err := s.ResolvePrompt(ctx, pa.ID, "lib/tone", PromptSelector{})
		require.NoError(t, err)
		assert.Nil(t, plain.Graph, "no references, no graph")

		// The referenced label is what another prompt depends on.
		assert.ErrorIs(t, s.DeletePrompts(ctx, pa.ID, "lib/tone", PromptSelector{Label: "production"}), ErrInvalid)
		assert.ErrorIs(t, s.DeletePrompts(ctx, pa.ID, "lib/tone", PromptSelector{}), ErrInvalid)
		assert.ErrorIs(t, s.DeletePrompts(ctx, pa.ID, "lib/tone", PromptSelector{Version: 2}), ErrInvalid)
		require.NoError(t, s.DeletePrompts(ctx, pa.ID, "top", PromptSelector{}), "nothing depends on top")

		// Missing children, chat children and self references are refused at creation.
		for name, np := range map[string]NewPrompt{
			"missing": textPrompt("x", "@@@langfusePrompt:name=ghost|label=production@@@"),
			"chat":    textPrompt("x", "@@@langfusePrompt:name=chatchild|label=latest@@@"),
			"self":    textPrompt("mid", "@@@langfusePrompt:name=mid|label=production@@@"),
			"cycle":   textPrompt("lib/tone", "@@@langfusePrompt:name=mid|label=production@@@"),
		} {
			if name == "chat" {
				_, err := s.CreatePrompt(ctx, pa.ID, NewPrompt{Name: "chatchild", Type: PromptChat,
					Prompt: json.RawMessage(`[{"role":"user","content":"x"}]`)})
				require.NoError(t, err)
			}
			_, err := s.CreatePrompt(ctx, pa.ID, np)
			assert.ErrorIs(t, err, promptcompose.ErrComposition, name)
		}

		// Another project cannot reference, and does not see, these prompts.
		_, err = s.CreatePrompt(ctx, pb.ID, textPrompt("x", "@@@langfusePrompt:name=mid|label=production@@@"))
		assert.ErrorIs(t, err, promptcompose.ErrComposition)
	})
}

func TestPromptCompositionLimits(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, _ := twoOrgs(t, s)
		// p0 references p1 references ... p5: five levels below p0 resolve.
		_, err := s.CreatePrompt(ctx, pa.ID, textPrompt("p5", "end"))
		require.NoError(t, err)
		for i := 4; i >= 0; i-- {
			_, err := s.CreatePrompt(ctx, pa.ID, textPrompt(fmt.Sprint("p", i), fmt.Sprintf("%d@@@langfusePrompt:name=p%d|label=latest@@@", i, i+1)))
			require.NoError(t, err)
		}
		p0, err := s.ResolvePrompt(ctx, pa.ID, "p0", PromptSelector{Label: "latest"})
		require.NoError(t, err)
		assert.Equal(t, "01234end", promptText(t, p0))
		_, err = s.CreatePrompt(ctx, pa.ID, textPrompt("deep", "@@@langfusePrompt:name=p0|label=latest@@@"))
		assert.ErrorIs(t, err, promptcompose.ErrComposition, "six levels are too deep")

		// A cycle written behind the store's back is reported on fetch.
		_, err = s.conn().exec(ctx, `UPDATE prompts SET prompt = ? WHERE project_id = ? AND name = 'p5'`,
			`"@@@langfusePrompt:name=p4|label=latest@@@"`, pa.ID)
		require.NoError(t, err)
		_, err = s.ResolvePrompt(ctx, pa.ID, "p4", PromptSelector{Label: "latest"})
		assert.ErrorIs(t, err, promptcompose.ErrComposition)
		assert.ErrorContains(t, err, "cycle")
	})
}

func TestListPrompts(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, pb := twoOrgs(t, s)
		clock := &fakeClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
		s.now = clock.Now
		for _, np := range []NewPrompt{
			{Name: "b", Prompt: json.RawMessage(`"b1"`), Tags: []string{"t1"}, Labels: []string{"production"}},
			{Name: "b", Prompt: json.RawMessage(`"b2"`), Config: json.RawMessage(`{"v":2}`)},
			{Name: "a", Prompt: json.RawMessage(`"a1"`)},
			{Name: "c/d", Type: PromptChat, Prompt: json.RawMessage(`[{"role":"user","content":"x"}]`), Tags: []string{"t1", "t2"}},
		} {
			clock.Advance(time.Minute)
			_, err := s.CreatePrompt(ctx, pa.ID, np)
			require.NoError(t, err)
		}
		_, err := s.CreatePrompt(ctx, pb.ID, textPrompt("zzz", "other project"))
		require.NoError(t, err)

		list, total, err := s.ListPrompts(ctx, pa.ID, PromptFilter{Limit: 10})
		require.NoError(t, err)
		assert.Equal(t, 3, total)
		require.Len(t, list, 3)
		assert.Equal(t, []string{"a", "b", "c/d"}, []string{list[0].Name, list[1].Name, list[2].Name})
		b := list[1]
		assert.Equal(t, []int{1, 2}, b.Versions)
		assert.Equal(t, []string{"latest", "production"}, b.Labels)
		assert.Equal(t, []string{"t1"}, b.Tags)
		assert.JSONEq(t, `{"v":2}`, string(b.LastConfig))
		assert.Equal(t, time.Date(2025, 1, 1, 0, 2, 0, 0, time.UTC), b.LastUpdatedAt)
		assert.Equal(t, PromptChat, list[2].Type)

		page, total, err := s.ListPrompts(ctx, pa.ID, PromptFilter{Limit: 2, Offset: 2})
		require.NoError(t, err)
		assert.Equal(t, 3, total)
		require.Len(t, page, 1)
		assert.Equal(t, "c/d", page[0].Name)

		for _, tt := range []struct {
			f     PromptFilter
			names []string
		}{
			{PromptFilter{Label: "production"}, []string{"b"}},
			{PromptFilter{Tag: "t1"}, []string{"b", "c/d"}},
			{PromptFilter{Name: "c/d"}, []string{"c/d"}},
			{PromptFilter{Version: 2}, []string{"b"}},
			{PromptFilter{UpdatedFrom: time.Date(2025, 1, 1, 0, 3, 0, 0, time.UTC)}, []string{"a", "c/d"}},
			{PromptFilter{UpdatedTo: time.Date(2025, 1, 1, 0, 2, 0, 0, time.UTC)}, []string{}},
		} {
			tt.f.Limit = 10
			list, total, err := s.ListPrompts(ctx, pa.ID, tt.f)
			require.NoError(t, err)
			names := []string{}
			for _, p := range list {
				names = append(names, p.Name)
			}
			assert.Equal(t, tt.names, names, "%+v", tt.f)
			assert.Equal(t, len(tt.names), total)
		}
		// The production filter lists only the matching version.
		list, _, err = s.ListPrompts(ctx, pa.ID, PromptFilter{Label: "production", Limit: 10})
		require.NoError(t, err)
		assert.Equal(t, []int{1}, list[0].Versions)
	})
}

func TestPromptConcurrency(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, _ := twoOrgs(t, s)
		const n = 8
		var wg sync.WaitGroup
		errs := make(chan error, 2*n)
		for i := 0; i < n; i++ {
			wg.Go(func() {
				_, err := s.CreatePrompt(ctx, pa.ID, textPrompt("race", fmt.Sprint("v", i)))
				errs <- err
			})
		}
		wg.Wait()
		for i := 0; i < n; i++ {
			require.NoError(t, <-errs)
		}
		list, _, err := s.ListPrompts(ctx, pa.ID, PromptFilter{Name: "race", Limit: 10})
		require.NoError(t, err)
		require.Len(t, list, 1)
		assert.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8}, list[0].Versions, "concurrent creates get distinct versions")

		// Every version races to take the same two labels.
		for v := 1; v <= n; v++ {
			wg.Go(func() {
				_, err := s.SetPromptLabels(ctx, pa.ID, "race", v, []string{"production", "canary"})
				errs <- err
			})
			wg.Go(func() {
				_, err := s.SetPromptLabels(ctx, pa.ID, "race", v, []string{"canary", "production"})
				errs <- err
			})
		}
		wg.Wait()
		for i := 0; i < 2*n; i++ {
			require.NoError(t, <-errs)
		}
		labels, err := promptLabels(ctx, s.conn(), pa.ID, "race")
		require.NoError(t, err)
		count := map[string]int{}
		for _, ls := range labels {
			for _, l := range ls {
				count[l]++
			}
		}
		assert.Equal(t, map[string]int{"production": 1, "canary": 1, "latest": 1}, count)
	})
}

func TestPromptIsolation(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		pa, pb := twoOrgs(t, s)
		_, err := s.CreatePrompt(ctx, pa.ID, textPrompt("secret", "a's", "production"))
		require.NoError(t, err)

		_, err = s.GetPrompt(ctx, pb.ID, "secret", PromptSelector{})
		assert.ErrorIs(t, err, ErrNotFound)
		_, err = s.ResolvePrompt(ctx, pb.ID, "secret", PromptSelector{})
		assert.ErrorIs(t, err, ErrNotFound)
		_, err = s.SetPromptLabels(ctx, pb.ID, "secret", 1, []string{"x"})
		assert.ErrorIs(t, err, ErrNotFound)
		assert.ErrorIs(t, s.DeletePrompts(ctx, pb.ID, "secret", PromptSelector{}), ErrNotFound)
		list, total, err := s.ListPrompts(ctx, pb.ID, PromptFilter{Limit: 10})
		require.NoError(t, err)
		assert.Empty(t, list)
		assert.Zero(t, total)

		// The same name in b is a separate prompt with its own versions.
		other, err := s.CreatePrompt(ctx, pb.ID, textPrompt("secret", "b's"))
		require.NoError(t, err)
		assert.Equal(t, 1, other.Version)
		got, err := s.GetPrompt(ctx, pa.ID, "secret", PromptSelector{})
		require.NoError(t, err)
		assert.Equal(t, "a's", promptText(t, got))
		assert.Equal(t, []string{"latest", "production"}, got.Labels)
	})
}
