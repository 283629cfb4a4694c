// Package itemschema checks dataset items against the JSON Schemas of their
// dataset: pure logic, apart from the store that keeps the schemas.
package itemschema // import "github.com/glassbox-dev/glassbox/internal/itemschema"

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// schemaURL is the name a dataset's schema is compiled under; nothing is
// ever fetched from it.
const schemaURL = "glassbox:dataset-schema.json"

var schemaMessages = message.NewPrinter(language.English)

// Compile parses a JSON Schema (draft 2020-12 unless it names another
// with $schema). References to anything outside the document are refused,
// so a schema can never make the server read a file or a URL.
func Compile(field string, raw json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("%s must be a JSON Schema: %w", field, err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	sch, err := c.Compile(schemaURL)
	var verr *jsonschema.ValidationError
	if errors.As(err, &verr) {
		return nil, fmt.Errorf("%s is not a valid JSON Schema: %s", field, describe(field, verr))
	}
	if err != nil {
		return nil, fmt.Errorf("%s is not a valid JSON Schema: %w", field, err)
	}
	return sch, nil
}

// Validate checks value (JSON text) against sch; the error names the
// failing location inside the value, e.g. "input/messages/0/role".
// Errors of Compile and Validate are the caller's to classify.
func Validate(sch *jsonschema.Schema, field string, value json.RawMessage) error {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(value)))
	if err != nil {
		return fmt.Errorf("%s must be JSON: %w", field, err)
	}
	err = sch.Validate(doc)
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return err
	}
	// The value fails the schema: say where.
	return fmt.Errorf("%s does not match the dataset's schema: %s", field, describe(field, verr))
}

// describe names the most specific failure, following the first cause
// down, as "<field>/<path>: <reason>".
func describe(field string, e *jsonschema.ValidationError) string {
	for len(e.Causes) > 0 {
		e = e.Causes[0]
	}
	path := field
	for _, p := range e.InstanceLocation {
		path += "/" + p
	}
	return path + ": " + e.ErrorKind.LocalizedString(schemaMessages)
}
