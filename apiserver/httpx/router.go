package httpx // import "github.com/glassbox-dev/glassbox/apiserver/httpx"

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/internal/apierr"
	"github.com/glassbox-dev/glassbox/internal/apikey"
	"github.com/glassbox-dev/glassbox/internal/chstore"
	"github.com/glassbox-dev/glassbox/internal/controlplane"
)

// Request body limits when none are configured: the 1 MB that Langfuse's
// JSON routes accept, and the 4.5 MB of its ingestion and dataset item routes.
const (
	DefaultMaxBodyBytes      = 1 << 20
	DefaultMaxLargeBodyBytes = 9 << 19
)

// KeyVerifier checks the credentials of requests: key pairs (Basic) and
// public keys alone (Bearer).
type KeyVerifier interface {
	apikey.Verifier
	// VerifyPublicKey returns the principal of a live key; unknown and
	// revoked keys are apikey.ErrInvalidCredentials.
	VerifyPublicKey(ctx context.Context, publicKey string) (apikey.Principal, error)
}

// Options configures NewRouter.
type Options struct {
	// Verifier checks the credentials of every non-public route.
	Verifier KeyVerifier
	Logger   *zap.Logger
	// MaxBodyBytes bounds request bodies; larger ones get 413.
	MaxBodyBytes int64
	// MaxLargeBodyBytes bounds the bodies of LargeBody routes; they never
	// get less than MaxBodyBytes.
	MaxLargeBodyBytes int64
	// AdminKey is the bearer token of the AdminKey routes; empty leaves
	// them unserved.
	AdminKey string
}

type router struct {
	verifier     KeyVerifier
	logger       *zap.Logger
	maxBody      int64
	maxLargeBody int64
	// adminKeyHash is the hash of Options.AdminKey, compared in constant
	// time; empty when there is none.
	adminKeyHash string
}

// pathRoutes serves every method registered on one path, so that a wrong
// method gets a JSON 405 rather than ServeMux's plain-text one.
type pathRoutes struct {
	r       *router
	methods map[string]*Route
	allow   string
}

// NewRouter serves routes. Unknown paths get a JSON 404, known paths with
// another method a JSON 405, and a panic in a handler a JSON 500; the
// process keeps running.
func NewRouter(routes []Route, opts Options) (h http.Handler, err error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxLargeBodyBytes <= 0 {
		opts.MaxLargeBodyBytes = DefaultMaxLargeBodyBytes
	}
	rt := &router{verifier: opts.Verifier, logger: opts.Logger, maxBody: opts.MaxBodyBytes,
		maxLargeBody: max(opts.MaxLargeBodyBytes, opts.MaxBodyBytes)}
	if opts.AdminKey != "" {
		rt.adminKeyHash = apikey.HashSecret(opts.AdminKey)
	}
	byPath := map[string]*pathRoutes{}
	var paths []string
	for i := range routes {
		route := &routes[i]
		if err := rt.check(route); err != nil {
			return nil, err
		}
		if route.Access == AdminKey && rt.adminKeyHash == "" {
			// The admin API is off: its paths are unknown, whatever the method.
			continue
		}
		pr, ok := byPath[route.Path]
		if !ok {
			pr = &pathRoutes{r: rt, methods: map[string]*Route{}}
			byPath[route.Path] = pr
			paths = append(paths, route.Path)
		}
		if _, dup := pr.methods[route.Method]; dup {
			return nil, fmt.Errorf("route %s %s is registered twice", route.Method, route.Path)
		}
		pr.methods[route.Method] = route
	}
	mux := http.NewServeMux()
	// ServeMux panics on malformed or conflicting patterns; the table is code,
	// but a caller composing routes gets an error rather than a crash.
	defer func() {
		if p := recover(); p != nil {
			h, err = nil, fmt.Errorf("register routes: %v", p)
		}
	}()
	for _, path := range paths {
		pr := byPath[path]
		methods := make([]string, 0, len(pr.methods)+1)
		for m := range pr.methods {
			methods = append(methods, m)
		}
		methods = append(methods, http.MethodOptions)
		if _, ok := pr.methods[http.MethodGet]; ok {
			methods = append(methods, http.MethodHead)
		}
		slices.Sort(methods)
		pr.allow = strings.Join(methods, ", ")
		mux.Handle(path, pr)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		rt.writeError(w, errRouteNotFound)
	})
	return rt.recover(mux), nil
}

func (rt *router) check(route *Route) error {
	switch {
	case route.Handler == nil:
		return fmt.Errorf("route %s %s has no handler", route.Method, route.Path)
	case !strings.HasPrefix(route.Path, "/"):
		return fmt.Errorf("route %s %q: path must start with /", route.Method, route.Path)
	case strings.Contains(route.Path, "...}") || strings.Contains(route.Path, "{$}"):
		return fmt.Errorf("route %s %s: only single-segment wildcards are supported", route.Method, route.Path)
	case route.Method == "" || route.Method == http.MethodOptions || route.Method == http.MethodHead ||
		strings.ToUpper(route.Method) != route.Method:
		return fmt.Errorf("route %s %s: method must be an upper-case HTTP method other than OPTIONS and HEAD", route.Method, route.Path)
	case route.Access != Public && route.Access != AdminKey && rt.verifier == nil:
		return fmt.Errorf("route %s %s requires a key but no verifier is configured", route.Method, route.Path)
	}
	return nil
}

func (pr *pathRoutes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	allowCORS(w, r)
	method := r.Method
	if method == http.MethodHead {
		// HEAD is GET without the body, which net/http drops.
		method = http.MethodGet
	}
	route, ok := pr.methods[method]
	switch {
	case ok:
		pr.r.serve(w, r, route)
	case r.Method == http.MethodOptions:
		// CORS preflight: Langfuse allows any origin, without credentials.
		w.Header().Set("Allow", pr.allow)
		w.Header().Set("Access-Control-Allow-Methods", pr.allow)
		if h := r.Header.Get("Access-Control-Request-Headers"); h != "" {
			w.Header().Set("Access-Control-Allow-Headers", h)
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", pr.allow)
		pr.r.writeError(w, errMethodNotAllowed)
	}
}

func allowCORS(w http.ResponseWriter, r *http.Request) {
	if origin := r.Header.Get("Origin"); origin != "" {
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Add("Vary", "Origin")
	}
}

func (rt *router) serve(w http.ResponseWriter, r *http.Request, route *Route) {
	if route.Access != Public {
		p, apiErr := rt.authenticate(r, route.Access)
		if apiErr != nil {
			rt.writeError(w, apiErr)
			return
		}
		r = r.WithContext(withPrincipal(r.Context(), p))
	}
	// url.Values silently drops pairs it cannot decode, which would turn a
	// mistyped filter into no filter.
	if _, err := url.ParseQuery(r.URL.RawQuery); err != nil {
		rt.writeError(w, BadRequest("Malformed query string: %v", err))
		return
	}
	limit := rt.maxBody
	if route.LargeBody {
		limit = rt.maxLargeBody
	}
	// A declared length over the limit is refused unread; a body without
	// one (chunked) fails when reading passes the limit.
	if r.ContentLength > limit {
		rt.writeError(w, payloadTooLarge(limit))
		return
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, limit)
	}
	body, err := route.Handler(r)
	if err != nil {
		rt.writeError(w, rt.classify(r, route, err))
		return
	}
	if write, ok := body.(rawBody); ok {
		write(w)
		return
	}
	status := http.StatusOK
	if sb, ok := body.(statusBody); ok {
		status, body = sb.status, sb.body
	}
	rt.writeJSON(w, status, body)
}

func (rt *router) authenticate(r *http.Request, access Access) (apikey.Principal, *Error) {
	header := r.Header.Get("Authorization")
	if access == AdminKey {
		return apikey.Principal{}, rt.authenticateAdmin(header)
	}
	if scheme, token, ok := strings.Cut(header, " "); ok && strings.EqualFold(scheme, "Bearer") {
		return rt.authenticatePublicKey(r, access, strings.TrimSpace(token))
	}
	publicKey, secretKey, err := apikey.ParseBasic(header)
	if err != nil {
		return apikey.Principal{}, apierr.Auth(err)
	}
	p, apiErr := rt.verified(rt.verifier.Verify(r.Context(), publicKey, secretKey))
	if apiErr != nil {
		return apikey.Principal{}, apiErr
	}
	switch access {
	case ProjectKey, ProjectOrScoresKey:
		if err := apikey.RequireProject(p); err != nil {
			return apikey.Principal{}, apierr.Auth(err)
		}
	case OrganizationKey:
		if p.Scope != apikey.ScopeOrganization || p.OrganizationID == "" {
			return apikey.Principal{}, authError(http.StatusForbidden, "Access denied - this endpoint requires an organization API key, not a project key")
		}
	}
	return p, nil
}

// authError is a refusal of the auth step that apierr.Auth has no word
// for; like its answers, it carries a message alone.
func authError(status int, message string) *Error {
	return &Error{Status: status, Message: message}
}

// authenticateAdmin checks `Bearer <admin API key>`. The token is compared
// by hash in constant time; no API key, of any scope, is accepted instead.
func (rt *router) authenticateAdmin(header string) *Error {
	if header == "" {
		return apierr.Auth(apikey.ErrMissingCredentials)
	}
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return authError(http.StatusUnauthorized, "Invalid authorization header, expected Bearer <admin API key>."+apierr.HostHint)
	}
	if !apikey.SecretMatches(strings.TrimSpace(token), rt.adminKeyHash) {
		return authError(http.StatusUnauthorized, "Invalid admin API key."+apierr.HostHint)
	}
	return nil
}

// authenticatePublicKey serves `Bearer <publicKey>`: the key is checked like
// any other, but since a public key is no secret it grants only the scores
// scope of its project, on the routes that accept it.
func (rt *router) authenticatePublicKey(r *http.Request, access Access, publicKey string) (apikey.Principal, *Error) {
	if publicKey == "" {
		return apikey.Principal{}, authError(http.StatusUnauthorized, "Invalid authorization header, expected Bearer <publicKey>."+apierr.HostHint)
	}
	p, apiErr := rt.verified(rt.verifier.VerifyPublicKey(r.Context(), publicKey))
	if apiErr != nil {
		return apikey.Principal{}, apiErr
	}
	if access != ProjectOrScoresKey {
		return apikey.Principal{}, apierr.Auth(apikey.ErrSecretRequired)
	}
	if err := apikey.RequireProject(p); err != nil {
		return apikey.Principal{}, apierr.Auth(err)
	}
	p.Scope = ScopeScores
	return p, nil
}

// verified turns the outcome of a key lookup into a principal or the error
// the client sees: 401 for bad credentials, 503 when the store failed.
func (rt *router) verified(p apikey.Principal, err error) (apikey.Principal, *Error) {
	if err != nil {
		if !errors.Is(err, apikey.ErrInvalidCredentials) {
			rt.logger.Warn("API key verification failed", zap.Error(err))
		}
		return apikey.Principal{}, apierr.Auth(err)
	}
	return p, nil
}

// classify turns a handler error into what the client sees; only unexpected
// errors are logged, with the route, since their detail is not sent.
func (rt *router) classify(r *http.Request, route *Route, err error) *Error {
	if apiErr, ok := ClientError(err); ok {
		if errors.Is(err, chstore.ErrUnavailable) {
			rt.logger.Warn("ClickHouse is unavailable", zap.String("route", route.Path), zap.Error(err))
		}
		return apiErr
	}
	if r.Context().Err() != nil {
		// The client went away; nobody reads the answer.
		return errClientGone
	}
	rt.logger.Error("request failed", zap.String("method", route.Method), zap.String("route", route.Path), zap.Error(err))
	return errInternal
}

// ClientError is what the client is told of a handler's error: an *Error as
// it is, the stores' verdicts (not found, invalid, conflict, ClickHouse
// down) and an oversized body as their statuses. ok is false for anything
// else, an unexpected failure whose detail is not for the client.
func ClientError(err error) (e *Error, ok bool) {
	var apiErr *Error
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &apiErr):
		return apiErr, true
	case errors.As(err, &tooLarge):
		return payloadTooLarge(tooLarge.Limit), true
	case errors.Is(err, chstore.ErrUnavailable):
		return errClickHouseDown, true
	// The stores' own verdicts, for handlers that pass them on as they are.
	case errors.Is(err, chstore.ErrNotFound), errors.Is(err, controlplane.ErrNotFound):
		return NotFound("%s", storeMessage(err, "Not found")), true
	case errors.Is(err, chstore.ErrInvalid), errors.Is(err, controlplane.ErrInvalid):
		return BadRequest("%s", storeMessage(err, "Invalid request")), true
	case errors.Is(err, controlplane.ErrConflict):
		return Conflict("%s", storeMessage(err, "Conflict")), true
	}
	return nil, false
}

// storeMessage is a store error's text, which names what was wrong; def
// when it has nothing beyond the sentinel.
func storeMessage(err error, def string) string {
	msg := err.Error()
	for _, sentinel := range []error{chstore.ErrNotFound, chstore.ErrInvalid, controlplane.ErrNotFound, controlplane.ErrInvalid, controlplane.ErrConflict} {
		if msg == sentinel.Error() {
			return def
		}
	}
	return msg
}

func (rt *router) writeError(w http.ResponseWriter, e *Error) {
	rt.writeJSON(w, e.Status, e.Body())
}

func (rt *router) writeJSON(w http.ResponseWriter, status int, body any) {
	buf, err := json.Marshal(body)
	if err != nil {
		rt.logger.Error("encode response", zap.Error(err))
		status = http.StatusInternalServerError
		buf, _ = json.Marshal(errInternal.Body())
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf)
}

// recover answers a panicking request with a JSON 500 and logs it; the
// process and the other requests carry on.
func (rt *router) recover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler { //nolint:errorlint // sentinel compared as net/http does
				panic(p)
			}
			rt.logger.Error("handler panicked", zap.String("method", r.Method), zap.String("path", r.URL.Path),
				zap.Any("panic", p), zap.StackSkip("stack", 2))
			rt.writeError(w, errInternal)
		}()
		next.ServeHTTP(w, r)
	})
}
