package web

import (
	"bytes"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPagesParseAtStartAndAreKeptFromFirstUse(t *testing.T) {
	a := &App{}
	page := `{{define "title"}}T{{end}}{{define "content"}}<p>{{template "note" .}}</p>{{end}}`
	fsys := fstest.MapFS{
		"_note.html":  {Data: []byte(`{{define "note"}}a note{{end}}`)},
		"one.html":    {Data: []byte(page)},
		"two.html":    {Data: []byte(page)},
		"broken.html": {Data: []byte(`{{define "content"}}{{if}}{{end}}`)},
	}

	_, err := a.Parse(fsys, "_note.html", "one.html", "broken.html")
	require.ErrorContains(t, err, "broken.html", "a broken page stops the start")

	tmpl, err := a.Parse(fsys, "_note.html", "one.html", "two.html")
	require.NoError(t, err)
	for name, p := range tmpl.pages {
		assert.Nil(t, p.t, "%s is not kept before it is used", name)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			var b bytes.Buffer
			assert.NoError(t, tmpl.fragment(&b, "one", "content", nil))
			assert.Equal(t, "<p>a note</p>", b.String())
		})
	}
	wg.Wait()
	assert.NotNil(t, tmpl.pages["one"].t, "kept once rendered")
	assert.Nil(t, tmpl.pages["two"].t, "the other page is still not kept")
	_, err = tmpl.page("three")
	assert.ErrorContains(t, err, `no page template "three"`)
}
