package promptcompose

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// library is a project's prompts, keyed by name and then by selector
// ("label:x" or "version:n").
type library map[string]map[string]Prompt

func (l library) add(name, typ string, version int, labels []string, texts ...string) Prompt {
	p := Prompt{Node: Node{ID: fmt.Sprintf("%s-v%d", name, version), Name: name, Version: version}, Type: typ, Texts: texts}
	if l[name] == nil {
		l[name] = map[string]Prompt{}
	}
	l[name][fmt.Sprint("version:", version)] = p
	for _, lb := range labels {
		l[name]["label:"+lb] = p
	}
	return p
}

// lookup serves the library and counts the calls.
func (l library) lookup(calls *int) Lookup {
	return func(_ context.Context, ref Ref) (Prompt, bool, error) {
		*calls++
		key := "label:" + ref.Label
		if ref.Version > 0 {
			key = fmt.Sprint("version:", ref.Version)
		}
		p, ok := l[ref.Name][key]
		return p, ok, nil
	}
}

func TestParseRefs(t *testing.T) {
	refs, err := ParseRefs("a @@@langfusePrompt:name=lib/tone|label=production@@@ b",
		"@@@langfusePrompt:name=x|version=3@@@")
	require.NoError(t, err)
	assert.Equal(t, []Ref{
		{Tag: "@@@langfusePrompt:name=lib/tone|label=production@@@", Name: "lib/tone", Label: "production"},
		{Tag: "@@@langfusePrompt:name=x|version=3@@@", Name: "x", Version: 3},
	}, refs)
	assert.Equal(t, "label 'production'", refs[0].Selector())
	assert.Equal(t, "version 3", refs[1].Selector())

	none, err := ParseRefs("no tags here {{x}}")
	require.NoError(t, err)
	assert.Empty(t, none)

	for _, bad := range []string{
		"@@@langfusePrompt:name=x@@@",
		"@@@langfusePrompt:name=|label=a@@@",
		"@@@langfusePrompt:label=a|name=x@@@",
		"@@@langfusePrompt:name=x|label=Prod@@@",
		"@@@langfusePrompt:name=x|label=@@@",
		"@@@langfusePrompt:name=x|version=0@@@",
		"@@@langfusePrompt:name=x|version=two@@@",
		"@@@langfusePrompt:name=x|tag=a@@@",
		"@@@langfusePrompt:name=x|label=a|version=1@@@",
	} {
		_, err := ParseRefs(bad)
		assert.ErrorIs(t, err, ErrInvalidReference, bad)
	}
}

func TestValidLabel(t *testing.T) {
	for _, ok := range []string{"production", "a", "v1.2_beta-3", strings.Repeat("a", 36)} {
		assert.True(t, ValidLabel(ok), ok)
	}
	for _, bad := range []string{"", "Prod", "a b", "a/b", strings.Repeat("a", 37)} {
		assert.False(t, ValidLabel(bad), bad)
	}
}

func TestResolve(t *testing.T) {
	lib := library{}
	lib.add("lib/tone", TypeText, 1, []string{"production"}, `Be "kind".`)
	lib.add("lib/tone", TypeText, 2, nil, "Be brief.")
	mid := lib.add("mid", TypeText, 1, []string{"production"},
		"Rules: @@@langfusePrompt:name=lib/tone|label=production@@@ and @@@langfusePrompt:name=lib/tone|version=2@@@")
	root := Prompt{Node: Node{ID: "top-v1", Name: "top", Version: 1}, Type: "chat",
		Texts: []string{"@@@langfusePrompt:name=mid|label=production@@@ {{x}}", "", "plain"}}

	calls := 0
	texts, graph, err := Resolve(context.Background(), root, lib.lookup(&calls), DefaultLimits())
	require.NoError(t, err)
	assert.Equal(t, []string{`Rules: Be "kind". and Be brief. {{x}}`, "", "plain"}, texts)
	require.NotNil(t, graph)
	assert.Equal(t, root.Node, graph.Root)
	assert.Equal(t, []Node{mid.Node}, graph.Dependencies["top-v1"])
	assert.Equal(t, []Node{{ID: "lib/tone-v1", Name: "lib/tone", Version: 1}, {ID: "lib/tone-v2", Name: "lib/tone", Version: 2}},
		graph.Dependencies["mid-v1"])
	assert.Equal(t, 3, calls)

	plain, graph, err := Resolve(context.Background(), lib["lib/tone"]["version:2"], lib.lookup(&calls), DefaultLimits())
	require.NoError(t, err)
	assert.Nil(t, graph, "no references, no graph")
	assert.Equal(t, []string{"Be brief."}, plain)

	// A tag repeated in one text is fetched once.
	calls = 0
	twice := Prompt{Node: Node{Name: "twice"}, Type: TypeText,
		Texts: []string{"@@@langfusePrompt:name=lib/tone|version=2@@@ @@@langfusePrompt:name=lib/tone|version=2@@@"}}
	texts, _, err = Resolve(context.Background(), twice, lib.lookup(&calls), DefaultLimits())
	require.NoError(t, err)
	assert.Equal(t, []string{"Be brief. Be brief."}, texts)
	assert.Equal(t, 1, calls)
}

func TestResolveRefuses(t *testing.T) {
	lib := library{}
	lib.add("chatchild", "chat", 1, []string{"latest"}, "x")
	lib.add("a", TypeText, 1, []string{"production"}, "@@@langfusePrompt:name=b|label=production@@@")
	lib.add("b", TypeText, 1, []string{"production"}, "@@@langfusePrompt:name=a|label=production@@@")
	lib.add("broken", TypeText, 1, []string{"production"}, "@@@langfusePrompt:name=x@@@")
	for name, tc := range map[string]struct {
		root Prompt
		want string
	}{
		"missing":       {text("@@@langfusePrompt:name=ghost|label=production@@@"), "'ghost' with label 'production', which does not exist"},
		"chat child":    {text("@@@langfusePrompt:name=chatchild|label=latest@@@"), "which is a chat prompt"},
		"self":          {text("@@@langfusePrompt:name=root|version=1@@@"), "cycle: root -> root"},
		"cycle below":   {text("@@@langfusePrompt:name=a|label=production@@@"), "cycle: root -> a -> b -> a"},
		"malformed":     {text("@@@langfusePrompt:name=a@@@"), "invalid prompt reference"},
		"child invalid": {text("@@@langfusePrompt:name=broken|label=production@@@"), "invalid prompt reference"},
	} {
		calls := 0
		_, _, err := Resolve(context.Background(), tc.root, lib.lookup(&calls), DefaultLimits())
		require.ErrorIs(t, err, ErrComposition, name)
		assert.ErrorContains(t, err, tc.want, name)
	}

	failing := errors.New("database down")
	_, _, err := Resolve(context.Background(), text("@@@langfusePrompt:name=a|label=production@@@"),
		func(context.Context, Ref) (Prompt, bool, error) { return Prompt{}, false, failing }, DefaultLimits())
	assert.ErrorIs(t, err, failing, "the lookup's own error is returned as is")
	assert.NotErrorIs(t, err, ErrComposition)
}

func TestResolveLimits(t *testing.T) {
	// p0 references p1 references ... p6.
	lib := library{}
	lib.add("p6", TypeText, 1, []string{"latest"}, "end")
	for i := 5; i >= 0; i-- {
		lib.add(fmt.Sprint("p", i), TypeText, 1, []string{"latest"}, fmt.Sprintf("%d@@@langfusePrompt:name=p%d|label=latest@@@", i, i+1))
	}
	calls := 0
	texts, _, err := Resolve(context.Background(), lib["p1"]["label:latest"], lib.lookup(&calls), DefaultLimits())
	require.NoError(t, err, "five levels below the root resolve")
	assert.Equal(t, []string{"12345end"}, texts)
	_, _, err = Resolve(context.Background(), lib["p0"]["label:latest"], lib.lookup(&calls), DefaultLimits())
	require.ErrorIs(t, err, ErrComposition)
	assert.ErrorContains(t, err, "deeper than 5 levels")

	_, _, err = Resolve(context.Background(), lib["p1"]["label:latest"], lib.lookup(&calls), Limits{MaxResolvedBytes: 1 << 20, MaxReferences: 4})
	require.ErrorIs(t, err, ErrComposition)
	assert.ErrorContains(t, err, "more than 4 prompt references")

	// A text referenced many times grows past the size bound without the
	// resolved text being built.
	lib.add("big", TypeText, 1, []string{"latest"}, strings.Repeat("x", 100))
	many := Prompt{Node: Node{Name: "many"}, Type: TypeText, Texts: []string{strings.Repeat("@@@langfusePrompt:name=big|label=latest@@@", 20)}}
	_, _, err = Resolve(context.Background(), many, lib.lookup(&calls), Limits{MaxResolvedBytes: 1999, MaxReferences: 100})
	require.ErrorIs(t, err, ErrComposition)
	assert.ErrorContains(t, err, "more than 1999 bytes")
	texts, _, err = Resolve(context.Background(), many, lib.lookup(&calls), Limits{MaxResolvedBytes: 2000, MaxReferences: 100})
	require.NoError(t, err)
	assert.Len(t, texts[0], 2000)

	// The bound applies to each referenced prompt once resolved, too.
	lib.add("mid", TypeText, 1, []string{"latest"}, strings.Repeat("@@@langfusePrompt:name=big|label=latest@@@", 20))
	_, _, err = Resolve(context.Background(), text("@@@langfusePrompt:name=mid|label=latest@@@"), lib.lookup(&calls),
		Limits{MaxResolvedBytes: 1500, MaxReferences: 100})
	require.ErrorIs(t, err, ErrComposition)
	assert.ErrorContains(t, err, `"mid" would resolve to more than 1500 bytes`)
}

// text is a text prompt named root.
func text(s string) Prompt {
	return Prompt{Node: Node{Name: "root"}, Type: TypeText, Texts: []string{s}}
}
