// Package mapping turns OpenTelemetry spans into Glassbox observations. It is
// the only place that knows which attribute means what: the Langfuse SDK keys
// and the conventions of other instrumentations (OpenTelemetry GenAI,
// OpenInference, Vercel AI SDK, Traceloop, MLflow and more), following the
// precedence rules of Langfuse's OTLP ingestion so that the same spans give
// the same traces.
//
// Where this package knowingly differs from Langfuse:
//   - map and bytes attribute values become a JSON object and base64 text,
//     not the text of the OTLP wrapper;
//   - metadata values that hold JSON text are stored as that JSON (Langfuse
//     parses them when reading);
//   - the outer Vercel AI SDK spans carry no usage, because they repeat the
//     sum of their provider calls, which would otherwise be counted twice;
//   - usage details reported by a provider as inclusive totals
//     (prompt_tokens, input_tokens, ...) have every input_* or output_* detail
//     subtracted, and total is the sum of all details when not reported;
//   - tags are sorted, without duplicates or empty tags, as merged traces
//     show them;
//   - the SDK's app root (langfuse.internal.is_app_root) counts as a trace
//     root, so a trace continued from an uninstrumented caller has one;
//   - the Vercel AI SDK settings leave out unset keys instead of null.
//
// Not mapped: Genkit, Flue, Google ADK, Logfire, LiveKit and Pydantic AI
// input/output, experiment attributes, and media references; their
// attributes are kept in the metadata.
package mapping
