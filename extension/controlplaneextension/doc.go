// Package controlplaneextension is the glassbox_controlplane extension: the
// control plane store (SQLite or PostgreSQL) alone, for collector tiers that
// verify keys and read settings but serve no API. The authenticator
// (`verifier`), glassbox_sampling (`settings_source`), glassbox_cost
// (`models_source`) and glassbox_evaltap (`source`) reference it by id, as
// they reference glassbox_api in the all-in-one binary. It opens no
// ClickHouse connection and runs no evaluation workers.
package controlplaneextension // import "github.com/glassbox-dev/glassbox/extension/controlplaneextension"
