// Package apiserverextension embeds the Glassbox API server in the collector
// as the glassbox_api extension, so that one process serves ingestion and
// the REST API.
//
// The ingest receiver, configured with `fallback: glassbox_api`, hands every
// request path it does not own to Handler(), so one port serves both without
// an extra hop. With `listen` set the extension also serves the API on a port
// of its own. The extension is an apikey.Verifier over the API server's
// control plane store, so the glassbox_auth authenticator (`verifier:
// glassbox_api`) checks ingestion keys against the same store.
package apiserverextension // import "github.com/glassbox-dev/glassbox/extension/apiserverextension"
