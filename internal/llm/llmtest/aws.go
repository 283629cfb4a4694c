package llmtest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"net/http"
	"slices"
	"strings"
	"time"
)

type awsAccount struct{ keyID, secret, sessionToken, region string }

// AWS makes the server accept Bedrock calls signed (SigV4) with these keys
// for region, and returns the connection secret that holds them. Without
// it every Bedrock call is refused.
func (s *Server) AWS(keyID, secret, sessionToken, region string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.aws = &awsAccount{keyID: keyID, secret: secret, sessionToken: sessionToken, region: region}
	out, _ := json.Marshal(map[string]string{"accessKeyId": keyID, "secretAccessKey": secret, "sessionToken": sessionToken})
	return string(out)
}

// verifyAWS checks r's Signature Version 4 as AWS does: the credential
// scope, the signed headers, a fresh date, and the signature over the
// canonical request rebuilt from what arrived.
func (s *Server) verifyAWS(r *http.Request, body []byte) (int, string) {
	s.mu.Lock()
	acct := s.aws
	s.mu.Unlock()
	if acct == nil {
		return http.StatusForbidden, "no AWS account"
	}
	auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ")
	if !ok {
		return http.StatusForbidden, "missing SigV4 authorization"
	}
	fields := map[string]string{}
	for part := range strings.SplitSeq(auth, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		fields[k] = v
	}
	scope := strings.Split(fields["Credential"], "/")
	amzDate := r.Header.Get("X-Amz-Date")
	when, err := time.Parse("20060102T150405Z", amzDate)
	switch {
	case len(scope) != 5 || scope[0] != acct.keyID:
		return http.StatusForbidden, "The security token included in the request is invalid."
	case err != nil || time.Since(when).Abs() > 5*time.Minute || scope[1] != amzDate[:8]:
		return http.StatusForbidden, "Signature expired or date mismatch"
	case scope[2] != acct.region || scope[3] != "bedrock" || scope[4] != "aws4_request":
		return http.StatusForbidden, "Credential should be scoped to a valid region and service bedrock: " + fields["Credential"]
	case acct.sessionToken != "" && r.Header.Get("X-Amz-Security-Token") != acct.sessionToken:
		return http.StatusForbidden, "The security token included in the request is invalid."
	}
	signed := strings.Split(fields["SignedHeaders"], ";")
	if !slices.IsSorted(signed) || !slices.Contains(signed, "host") || !slices.Contains(signed, "x-amz-date") ||
		(acct.sessionToken != "" && !slices.Contains(signed, "x-amz-security-token")) {
		return http.StatusForbidden, "SignedHeaders must be sorted and include host and x-amz-date: " + fields["SignedHeaders"]
	}
	var headers strings.Builder
	for _, h := range signed {
		v := r.Header.Get(h)
		if h == "host" {
			v = r.Host
		}
		headers.WriteString(h + ":" + strings.Join(strings.Fields(v), " ") + "\n")
	}
	var segments []string
	for seg := range strings.SplitSeq(r.URL.EscapedPath(), "/") {
		segments = append(segments, uriEncode(seg))
	}
	query := r.URL.Query()
	keys := make([]string, 0, len(query))
	for k := range query {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var params []string
	for _, k := range keys {
		vs := slices.Sorted(slices.Values(query[k]))
		for _, v := range vs {
			params = append(params, uriEncode(k)+"="+uriEncode(v))
		}
	}
	bodyHash := sha256.Sum256(body)
	canonical := r.Method + "\n" + strings.Join(segments, "/") + "\n" + strings.Join(params, "&") + "\n" + headers.String() + "\n" +
		fields["SignedHeaders"] + "\n" + hex.EncodeToString(bodyHash[:])
	canonicalHash := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + strings.Join(scope[1:], "/") + "\n" + hex.EncodeToString(canonicalHash[:])
	key := []byte("AWS4" + acct.secret)
	for _, part := range scope[1:] {
		key = mac(key, part)
	}
	if !hmac.Equal([]byte(hex.EncodeToString(mac(key, toSign))), []byte(fields["Signature"])) {
		return http.StatusForbidden, "The request signature we calculated does not match the signature you provided. Canonical request:\n" + canonical
	}
	return 0, ""
}

func mac(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// uriEncode is RFC 3986 percent-encoding of all but the unreserved bytes.
func uriEncode(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if strings.IndexByte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// EncodeEvent frames one AWS event stream message with string headers;
// names are at most 255 bytes, values 65535.
func EncodeEvent(headers map[string]string, payload []byte) []byte {
	var hb []byte
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range headers {
			if !yield(k) {
				return
			}
		}
	}) {
		if len(name) > 255 || len(headers[name]) > 0xffff {
			panic("event header too long")
		}
		hb = append(hb, byte(len(name))) //nolint:gosec // checked above
		hb = append(hb, name...)
		hb = append(hb, 7)
		hb = binary.BigEndian.AppendUint16(hb, uint16(len(headers[name]))) //nolint:gosec // checked above
		hb = append(hb, headers[name]...)
	}
	total := 12 + len(hb) + len(payload) + 4
	msg := binary.BigEndian.AppendUint32(nil, uint32(total))  //nolint:gosec // test messages are small
	msg = binary.BigEndian.AppendUint32(msg, uint32(len(hb))) //nolint:gosec // as total
	msg = binary.BigEndian.AppendUint32(msg, crc32.ChecksumIEEE(msg))
	msg = append(append(msg, hb...), payload...)
	return binary.BigEndian.AppendUint32(msg, crc32.ChecksumIEEE(msg))
}
