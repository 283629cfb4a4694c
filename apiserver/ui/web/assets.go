package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

// static holds the UI's own CSS and scripts and the vendored libraries
// (static/vendor, pinned by scripts/vendor-ui.sh). Nothing is fetched from
// another host at run time.
//
//go:embed static
var static embed.FS

// assets serves the embedded files under names that carry a hash of their
// content (app.3f2a9c1b.css), so browsers may cache them for good and a new
// release is fetched at once. Text files are gzipped once, at start.
type assets struct {
	base   string            // the base path
	names  map[string]string // logical name (vendor/htmx.min.js) -> served name
	served map[string]*asset // served name -> content
}

type asset struct {
	contentType string
	raw, gz     []byte
}

func loadAssets() (*assets, error) {
	a := &assets{names: map[string]string{}, served: map[string]*asset{}}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := strings.TrimPrefix(p, "static/")
		ext := path.Ext(name)
		if ext != ".js" && ext != ".css" && ext != ".svg" {
			return nil // licences and checksums are kept, not served
		}
		raw, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(raw)
		served := strings.ReplaceAll(strings.TrimSuffix(name, ext), "/", "-") + "." + hex.EncodeToString(sum[:6]) + ext
		var gz bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		if _, err := zw.Write(raw); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		a.names[name] = served
		a.served[served] = &asset{contentType: mime.TypeByExtension(ext), raw: raw, gz: gz.Bytes()}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ui: load assets: %w", err)
	}
	return a, nil
}

// url is the address of a static file, by its logical name; templates call
// it as {{asset "app.css"}}. An unknown name is a template error at render,
// caught by the test that renders every page.
func (a *assets) url(name string) (string, error) {
	served, ok := a.names[name]
	if !ok {
		return "", fmt.Errorf("ui: no static file %q", name)
	}
	return a.base + "/static/" + served, nil
}

func (a *assets) serve(w http.ResponseWriter, r *http.Request) {
	f, ok := a.served[r.PathValue("file")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.contentType)
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Vary", "Accept-Encoding")
	body := f.raw
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		h.Set("Content-Encoding", "gzip")
		body = f.gz
	}
	_, _ = w.Write(body)
}

// GzipSize is the number of gzipped bytes of the named static files, for
// the page-weight budget.
func (a *App) GzipSize(names ...string) (int, error) {
	n := 0
	for _, name := range names {
		served, ok := a.assets.names[name]
		if !ok {
			return 0, fmt.Errorf("no static file %q", name)
		}
		n += len(a.assets.served[served].gz)
	}
	return n, nil
}
