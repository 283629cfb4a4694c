// Package storageextension is the glassbox_storage extension: the one
// definition of the ClickHouse store (connection, database, cluster and
// engines). The glassbox_clickhouse exporter and the glassbox_api and
// glassbox_evaluation extensions name it by id (`storage:`), as Jaeger's
// storage exporter and query extension name jaeger_storage, so a process
// opens one connection pool and runs the migrations once.
//
// Start never waits for ClickHouse: the store connects and migrates in the
// background while ClickHouse is down, and the extension reports a
// recoverable error through the collector's component status until it
// answers.
package storageextension // import "github.com/glassbox-dev/glassbox/extension/storageextension"
