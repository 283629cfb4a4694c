// Package layout checks the package layout that docs/components.md
// describes: which packages may depend on which.
package layout

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/glassbox-dev/glassbox/"

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// packages lists the module's packages with their imports and dependencies.
func packages(t *testing.T) map[string]pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", "../../...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		pkgs[strings.TrimPrefix(p.ImportPath, module)] = p
	}
	require.Contains(t, pkgs, "internal/controlplane")
	require.Contains(t, pkgs, "apiserver/workers")
	return pkgs
}

func under(path string, prefixes ...string) bool {
	for _, prefix := range prefixes {
		if path == prefix || strings.HasPrefix(path, prefix+"/") {
			return true
		}
	}
	return false
}

func TestLayout(t *testing.T) {
	pkgs := packages(t)
	for path, p := range pkgs {
		var own []string // the module's packages p depends on
		for _, d := range p.Deps {
			if rel, ok := strings.CutPrefix(d, module); ok {
				own = append(own, rel)
			}
		}
		switch path {
		case "internal/sqldb", "internal/promptcompose":
			assert.Empty(t, own, "%s is a leaf: it takes what it needs from its callers", path)
		case "internal/evalqueue":
			assert.NotContains(t, own, "internal/controlplane", "the queue runs over internal/sqldb, below the store")
		}
		// What the gateway tier lists (configs/gateway.yaml) opens no
		// ClickHouse connection and runs no workers.
		if path == "extension/controlplaneextension" || path == "extension/apikeyauthextension" {
			for _, d := range p.Deps {
				assert.False(t, strings.HasPrefix(d, "github.com/ClickHouse/clickhouse-go"), "%s (gateway tier) depends on %s", path, d)
			}
			for _, d := range own {
				assert.False(t, under(d, "internal/chstore", "internal/workpool", "apiserver", "extension/storageextension"),
					"%s (gateway tier) depends on %s", path, d)
			}
		}
		// The background jobs are one package that the standalone server and
		// glassbox_workers start, below the API, whose options hold their
		// settings.
		if path == "apiserver/workers" {
			for _, d := range own {
				assert.False(t, d == "apiserver" || under(d, "apiserver/ui", "extension"),
					"%s (the background jobs) depends on %s", path, d)
			}
		}
		if path == "extension/apiserverextension" {
			assert.NotContains(t, own, "extension/workersextension", "glassbox_api and glassbox_workers are separate components")
		}
		if under(path, "internal", "provider") {
			for _, d := range own {
				assert.False(t, under(d, "apiserver", "extension", "receiver", "processor", "exporter", "cmd"),
					"%s (shared code) depends on %s", path, d)
			}
		}
		if under(path, "receiver", "processor", "exporter") {
			for _, d := range own {
				assert.False(t, under(d, "apiserver"), "component %s depends on %s", path, d)
			}
		}
		if under(path, "apiserver") {
			for _, imp := range p.Imports {
				assert.NotEqual(t, "database/sql", imp, "handlers hold no SQL: %s", path)
				assert.NotEqual(t, module+"internal/sqldb", imp, "handlers hold no SQL: %s", path)
			}
		}
	}
}
