// Package health serves GET /api/public/health and /api/public/ready: the
// server's version and whether the stores it depends on answer.
package health // import "github.com/glassbox-dev/glassbox/apiserver/health"

import (
	"context"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/apiserver/httpx"
)

// checkTimeout bounds each dependency check, so that a hung database makes
// the health check fail rather than hang.
const checkTimeout = 2 * time.Second

// Pinger is a dependency whose reachability the health check reports.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Dependency is a named Pinger; the name appears in the failure status.
type Dependency struct {
	Name   string
	Pinger Pinger
}

// Response is the health body, as Langfuse answers it.
type Response struct {
	Status  string `json:"status"`
	Version string `json:"version"`
}

// Routes returns the health route and its readiness alias. Both answer 200
// {"status":"OK"} when every dependency answers, else 503 with the first
// unreachable one named, so an orchestrator sends no traffic to a server
// that cannot serve it.
func Routes(version string, deps []Dependency, logger *zap.Logger) []httpx.Route {
	check := func(r *http.Request) (any, error) {
		for _, d := range deps {
			ctx, cancel := context.WithTimeout(r.Context(), checkTimeout)
			err := d.Pinger.Ping(ctx)
			cancel()
			if err != nil {
				logger.Warn("health check failed", zap.String("dependency", d.Name), zap.Error(err))
				return httpx.WithStatus(http.StatusServiceUnavailable,
					Response{Status: d.Name + " is unreachable", Version: version}), nil
			}
		}
		return Response{Status: "OK", Version: version}, nil
	}
	return []httpx.Route{
		{
			Method: http.MethodGet, Path: "/api/public/health", Access: httpx.Public, Handler: check,
			Doc: httpx.Doc{OperationID: "health_get", Tag: "Health", Response: Response{},
				Summary: "Server version and reachability of ClickHouse and the control plane store (503 when one is unreachable)."},
		},
		{
			Method: http.MethodGet, Path: "/api/public/ready", Access: httpx.Public, Handler: check,
			Doc: httpx.Doc{OperationID: "health_ready", Tag: "Health", Response: Response{},
				Summary: "Readiness: the health check under Langfuse's readiness path (503 while a store is unreachable)."},
		},
	}
}
