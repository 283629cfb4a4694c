package main

import (
	"bytes"
	"compress/gzip"
	"math/rand/v2"
	"strconv"
	"strings"
)

// textGen writes text with roughly the statistics of English prose: a large
// vocabulary whose word frequencies follow Zipf's law (the most common words
// are real function words), sentences of varying length with punctuation,
// numbers, identifiers, and now and then a JSON or code fragment. It
// compresses about like real text, where repeated prose would compress far
// better and flatter every compressing stage downstream.
type textGen struct {
	rng   *rand.Rand
	zipf  *rand.Zipf
	words []string
	// phrases are common multi-word sequences ("of the system"), drawn with
	// their own Zipf law: real text repeats collocations, not only words.
	phrases    []string
	phraseZipf *rand.Zipf
	// topic holds the words of the current text, which recur in it as
	// words recur within a real document.
	topic []string
}

// functionWords are the most frequent English words, most frequent first:
// they take the top ranks of the vocabulary.
var functionWords = strings.Fields(`the of and to a in is that for it as was with be by on not he i this are or his
from at which but have an had they you were their one all we can her has there been if more when will would
who so no she other its may these what them than some him time into only do could new about two any our
after first also made then most over like did should such where your much through before must between each
those well because being how under very while same here both why back still during without however again`)

var (
	onsets  = strings.Fields("b c d f g h j k l m n p r s t v w y z br cr dr fr gr pr tr st sp sl ch sh th wh pl cl bl gl sc sk sm sn qu b c d l m n p r s t")
	nuclei  = strings.Fields("a e i o u a e i o u a e i o ea ou ai io ee oo ie y")
	codas   = []string{"", "", "", "", "", "n", "r", "s", "t", "l", "nd", "st", "ng", "ck", "m", "rt", "ct", "x", "n", "r", "s", "t"}
	endings = []string{"", "", "", "", "", "", "ing", "ed", "tion", "ly", "er", "ment", "ness", "able", "s", "es", "al", "ive"}
)

// newTextGen builds a vocabulary of vocab words and a Zipf sampler over it.
func newTextGen(seed uint64, vocab int) *textGen {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	g := &textGen{rng: rng}
	seen := map[string]bool{}
	for _, w := range functionWords {
		if !seen[w] {
			seen[w] = true
			g.words = append(g.words, w)
		}
	}
	// Pseudo-words get longer as they get rarer, as in English.
	for len(g.words) < vocab {
		rank := len(g.words)
		syllables := 1
		if rank > 1000 && rng.IntN(2) == 0 {
			syllables++
		}
		if rank > 8000 && rng.IntN(3) == 0 {
			syllables++
		}
		var b strings.Builder
		for s := 0; s < syllables; s++ {
			if s == 0 || rng.IntN(2) == 0 {
				b.WriteString(onsets[rng.IntN(len(onsets))])
			}
			b.WriteString(nuclei[rng.IntN(len(nuclei))])
			b.WriteString(codas[rng.IntN(len(codas))])
		}
		if rank > 300 && rng.IntN(2) == 0 {
			b.WriteString(endings[rng.IntN(len(endings))])
		}
		w := b.String()
		if !seen[w] {
			seen[w] = true
			g.words = append(g.words, w)
		}
	}
	g.zipf = rand.NewZipf(rng, 1.07, 2.7, uint64(len(g.words)-1))
	for i := 0; i < 2000; i++ {
		n := 2 + rng.IntN(3)
		p := make([]string, n)
		for j := range p {
			p[j] = g.words[g.zipf.Uint64()]
		}
		g.phrases = append(g.phrases, strings.Join(p, " "))
	}
	g.phraseZipf = rand.NewZipf(rng, 1.1, 2, uint64(len(g.phrases)-1))
	return g
}

func (g *textGen) word() string {
	switch r := g.rng.IntN(100); {
	case r < phrasePercent:
		return g.phrases[g.phraseZipf.Uint64()]
	case r < phrasePercent+topicPercent:
		return g.topic[g.rng.IntN(len(g.topic))]
	}
	return g.words[g.zipf.Uint64()]
}

const (
	phrasePercent = 25
	topicPercent  = 25
	topicWords    = 40
)

// text returns about n bytes of prose (it ends on a whole sentence, so a few
// bytes more or less).
func (g *textGen) text(n int) string {
	var b strings.Builder
	b.Grow(n + 160)
	g.topic = g.topic[:0]
	for len(g.topic) < topicWords {
		if w := g.words[g.zipf.Uint64()]; len(w) > 3 {
			g.topic = append(g.topic, w)
		}
	}
	inParagraph := 0
	for b.Len() < n {
		if b.Len() > 0 {
			if inParagraph >= 3+g.rng.IntN(4) {
				b.WriteString("\n\n")
				inParagraph = 0
			} else {
				b.WriteByte(' ')
			}
		}
		if g.rng.IntN(25) == 0 {
			g.fragment(&b)
		} else {
			g.sentence(&b)
		}
		inParagraph++
	}
	return b.String()
}

func (g *textGen) sentence(b *strings.Builder) {
	words := 5 + g.rng.IntN(10) + g.rng.IntN(10)
	for i := 0; i < words; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch r := g.rng.IntN(100); {
		case r < 2:
			b.WriteString(g.number())
		case r < 3:
			b.WriteString(g.word())
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(g.rng.IntN(100000)))
		default:
			w := g.word()
			if i == 0 {
				b.WriteString(strings.ToUpper(w[:1]))
				b.WriteString(w[1:])
			} else {
				b.WriteString(w)
			}
		}
		if i < words-1 && g.rng.IntN(12) == 0 {
			b.WriteByte(',')
		}
	}
	switch r := g.rng.IntN(100); {
	case r < 8:
		b.WriteByte('?')
	case r < 11:
		b.WriteByte('!')
	case r < 13:
		b.WriteByte(':')
	default:
		b.WriteByte('.')
	}
}

func (g *textGen) number() string {
	switch g.rng.IntN(4) {
	case 0:
		return strconv.Itoa(g.rng.IntN(100))
	case 1:
		return strconv.Itoa(g.rng.IntN(100000))
	case 2:
		return strconv.FormatFloat(g.rng.Float64()*1000, 'f', 2, 64)
	default:
		return "2025-" + strconv.Itoa(10+g.rng.IntN(3)) + "-" + strconv.Itoa(10+g.rng.IntN(18))
	}
}

// fragment writes a small JSON object, a line of code or a list: what chat
// inputs and tool outputs carry between the prose.
func (g *textGen) fragment(b *strings.Builder) {
	switch g.rng.IntN(3) {
	case 0:
		b.WriteString(`{"`)
		b.WriteString(g.word())
		b.WriteString(`": `)
		b.WriteString(strconv.Itoa(g.rng.IntN(10000)))
		b.WriteString(`, "`)
		b.WriteString(g.word())
		b.WriteString(`": "`)
		b.WriteString(g.word() + " " + g.word())
		b.WriteString(`", "ok": `)
		b.WriteString(strconv.FormatBool(g.rng.IntN(2) == 0))
		b.WriteString(`}`)
	case 1:
		b.WriteString("if ")
		b.WriteString(g.word())
		b.WriteString(" > ")
		b.WriteString(strconv.Itoa(g.rng.IntN(64)))
		b.WriteString(" { return ")
		b.WriteString(g.word())
		b.WriteByte('(')
		b.WriteString(g.word())
		b.WriteString(") }")
	default:
		for i := 0; i < 2+g.rng.IntN(3); i++ {
			b.WriteString("\n- ")
			b.WriteString(g.word())
			b.WriteByte(' ')
			b.WriteString(g.word())
			b.WriteByte(' ')
			b.WriteString(g.word())
		}
		b.WriteByte('\n')
	}
}

// gzipRatio is how many times gzip (default level) shrinks the texts, one
// after the other.
func gzipRatio(texts []string) float64 {
	var raw int
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	for _, s := range texts {
		raw += len(s)
		_, _ = zw.Write([]byte(s))
	}
	_ = zw.Close()
	if buf.Len() == 0 {
		return 0
	}
	return float64(raw) / float64(buf.Len())
}
