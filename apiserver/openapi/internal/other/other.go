// Package other holds a type whose name collides with one in the openapi
// tests, to check that the document keeps both.
package other

// Item collides by name with the test package's Item.
type Item struct {
	Other string `json:"other"`
}
