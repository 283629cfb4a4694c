// Command glassbox-api runs the Glassbox API server on its own, for
// deployments that route the REST API to API servers and ingestion to
// collectors, and manages organizations, projects and keys on a fresh
// install:
//
//	glassbox-api [--config FILE]                 serve the API
//	glassbox-api admin [--config FILE] COMMAND   manage the control plane store
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/glassbox-dev/glassbox/apiserver"
	"github.com/glassbox-dev/glassbox/apiserver/workers"
)

// shutdownTimeout bounds how long requests in flight may finish on exit.
const shutdownTimeout = 15 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], adminInput{stdin: os.Stdin, getenv: os.Getenv}, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "glassbox-api:", err)
		}
		os.Exit(2)
	}
}

func run(ctx context.Context, args []string, in adminInput, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "admin" {
		return admin(ctx, args[1:], in, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "serve" {
		args = args[1:]
	}
	fs := flag.NewFlagSet("glassbox-api", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "YAML configuration file (defaults apply without one)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: glassbox-api [serve] [--config FILE] | glassbox-api admin [--config FILE] COMMAND ...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	cfg, err := loadConfig(*configPath)
	if err != nil {
		return err
	}
	if cfg.Listen == "" {
		return errors.New("config: listen is required for the standalone server")
	}
	logger, err := zap.NewProduction()
	if err != nil {
		return err
	}
	defer func() { _ = logger.Sync() }()
	return serve(ctx, cfg, logger)
}

// serve runs the API, and the background jobs its configuration turns on
// (evaluation.enabled, automations.enabled), until ctx ends or the
// listener fails.
func serve(ctx context.Context, cfg apiserver.Config, logger *zap.Logger) error {
	srv, err := apiserver.New(ctx, cfg, logger)
	if err != nil {
		return err
	}
	jobs, err := workers.Start(cfg.Config, cfg.PublicURL, workers.Stores{ControlPlane: srv.ControlPlane(), ClickHouse: srv.ClickHouse()}, logger)
	if err != nil {
		return errors.Join(err, srv.Close())
	}
	l, err := apiserver.Listen(cfg.Listen, srv.Handler(), logger)
	if err != nil {
		jobs.Stop()
		return errors.Join(err, srv.Close())
	}
	var serveErr error
	select {
	case <-ctx.Done():
		logger.Info("shutting down")
	case serveErr = <-l.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	shutdownErr := l.Shutdown(shutdownCtx)
	jobs.Stop()
	return errors.Join(serveErr, shutdownErr, srv.Close())
}
