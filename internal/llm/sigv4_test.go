package llm

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// AWS's Signature Version 4 test suite, case get-vanilla: the signer
// matches AWS's published signature, not only the local fake.
func TestSignV4Vanilla(t *testing.T) {
	r, err := http.NewRequest(http.MethodGet, "https://example.amazonaws.com/", nil)
	require.NoError(t, err)
	signV4(r, nil, awsKeys{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}, "us-east-1", "service",
		time.Date(2015, 8, 30, 12, 36, 0, 0, time.UTC))
	assert.Equal(t, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, "+
		"Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31", r.Header.Get("Authorization"))
	assert.Equal(t, "20150830T123600Z", r.Header.Get("X-Amz-Date"))
}
