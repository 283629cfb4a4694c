package mapping

// NormalizeEnvironment applies the environment rule of the OTLP path to
// values that arrive by other routes (scores, legacy ingestion events), so
// that every route stores the same spelling.
func NormalizeEnvironment(env string) string {
	return normalizeEnvironment(env)
}
