package main

import "testing"

// The generated text must compress about like real prose (gzip 2.5–4×),
// not like repeated text.
func TestTextCompressesLikeProse(t *testing.T) {
	g := newTextGen(1, 30000)
	var texts []string
	for i := 0; i < 400; i++ {
		texts = append(texts, g.text(2500))
	}
	r := gzipRatio(texts)
	t.Logf("gzip ratio %.2f; sample: %.600s", r, texts[0])
	if r < 2.5 || r > 4 {
		t.Fatalf("gzip ratio %.2f, want 2.5–4", r)
	}
}
