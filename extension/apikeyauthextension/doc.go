// Package apikeyauthextension provides glassbox_auth, the extension that turns
// a Langfuse-style key pair (Authorization: Basic base64(public:secret)) into
// the project it belongs to.
//
// It serves two callers: stock receivers, through extensionauth.Server
// (`auth: {authenticator: glassbox_auth}`), which then find the project in
// client.Info.Auth; and the ingest receiver, which calls it as an
// apikey.Verifier so that it can shape its own error responses.
//
// Keys come from a static list in the configuration and, optionally, from a
// key store exposed by another extension. Verified pairs are cached for
// cache_ttl: a key revoked in the store keeps working for at most that long.
package apikeyauthextension // import "github.com/glassbox-dev/glassbox/extension/apikeyauthextension"
