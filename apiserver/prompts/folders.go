package prompts // import "github.com/glassbox-dev/glassbox/apiserver/prompts"

import (
	"net/http"
	"net/url"
	"strings"
)

const promptsPrefix = "/api/public/v2/prompts/"

// FolderNames lets prompt names with folders ('/') arrive unencoded: it
// rewrites /api/public/v2/prompts/a/b/c to /api/public/v2/prompts/a%2Fb%2Fc
// (and .../a/b/versions/2 for PATCH, the only method on that path) so that
// the routes' single-segment {promptName} matches. Other paths pass as they are.
func FolderNames(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		escaped := r.URL.EscapedPath()
		rest, ok := strings.CutPrefix(escaped, promptsPrefix)
		if !ok || !strings.Contains(rest, "/") {
			next.ServeHTTP(w, r)
			return
		}
		suffix := ""
		if r.Method == http.MethodPatch {
			if i := strings.LastIndex(rest, "/versions/"); i > 0 && !strings.Contains(rest[i+len("/versions/"):], "/") {
				rest, suffix = rest[:i], rest[i:]
			}
		}
		rewritten := promptsPrefix + strings.ReplaceAll(rest, "/", "%2F") + suffix
		path, err := url.PathUnescape(rewritten)
		if err != nil {
			next.ServeHTTP(w, r)
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path, r2.URL.RawPath = path, rewritten
		next.ServeHTTP(w, r2)
	})
}
