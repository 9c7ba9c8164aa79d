package bedrock

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// An independent SigV4 implementation, written from AWS's "Create a signed AWS API request" steps, used to
// check the signatures the adapter (through the SDK's signer) puts on its requests.

type signedHeader struct{ name, value string }

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// uriEncode encodes every byte but the unreserved ones (and '/' when keepSlash), as SigV4's canonical request
// does.
func uriEncode(s string, keepSlash bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.~", c) >= 0 || keepSlash && c == '/' {
			b.WriteByte(c)
		} else {
			b.WriteString("%" + strings.ToUpper(hex.EncodeToString([]byte{c})))
		}
	}
	return b.String()
}

// sigV4Signature computes the signature of a request. path is the path as sent (already escaped once): for
// every service but S3 the canonical URI encodes it once more. headers are the signed headers, any case.
func sigV4Signature(method, path, query string, headers []signedHeader, payloadHash, amzDate, region, service, secret string) string {
	sort.Slice(headers, func(i, j int) bool { return strings.ToLower(headers[i].name) < strings.ToLower(headers[j].name) })
	var canonHeaders strings.Builder
	names := make([]string, len(headers))
	for i, h := range headers {
		names[i] = strings.ToLower(h.name)
		canonHeaders.WriteString(names[i] + ":" + strings.Join(strings.Fields(h.value), " ") + "\n")
	}
	canonical := strings.Join([]string{method, uriEncode(path, true), query, canonHeaders.String(), strings.Join(names, ";"), payloadHash}, "\n")
	date := amzDate[:8]
	scope := date + "/" + region + "/" + service + "/aws4_request"
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + sha256Hex([]byte(canonical))
	key := hmacSHA256([]byte("AWS4"+secret), date)
	key = hmacSHA256(key, region)
	key = hmacSHA256(key, service)
	key = hmacSHA256(key, "aws4_request")
	return hex.EncodeToString(hmacSHA256(key, toSign))
}

// TestSigV4Reference checks the independent implementation against AWS's published test vector (SigV4 test
// suite, "get-vanilla") and the SDK's signer against the same vector.
func TestSigV4Reference(t *testing.T) {
	const (
		secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
		want   = "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
	)
	emptyHash := sha256Hex(nil)
	got := sigV4Signature("GET", "/", "", []signedHeader{{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}},
		emptyHash, "20150830T123600Z", "us-east-1", "service", secret)
	if got != want {
		t.Fatalf("independent signature %s, want %s", got, want)
	}
	req, _ := http.NewRequest("GET", "https://example.amazonaws.com/", nil)
	when, _ := time.Parse("20060102T150405Z", "20150830T123600Z")
	err := v4.NewSigner().SignHTTP(t.Context(), aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: secret}, req, emptyHash, "service", "us-east-1", when)
	if err != nil {
		t.Fatal(err)
	}
	wantAuth := "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=" + want
	if a := req.Header.Get("Authorization"); a != wantAuth {
		t.Fatalf("SDK Authorization %s\nwant %s", a, wantAuth)
	}
}

// verifySigV4 recomputes the signature of a request as the server received it and compares it with its
// Authorization header; it returns the signed header names.
func verifySigV4(t *testing.T, r *http.Request, body []byte, keyID, secret, region string) []string {
	t.Helper()
	authz := r.Header.Get("Authorization")
	rest, ok := strings.CutPrefix(authz, "AWS4-HMAC-SHA256 ")
	if !ok {
		t.Fatalf("Authorization %q is not SigV4", authz)
	}
	fields := map[string]string{}
	for _, part := range strings.Split(rest, ", ") {
		k, v, _ := strings.Cut(part, "=")
		fields[k] = v
	}
	amzDate := r.Header.Get("X-Amz-Date")
	if amzDate != testTime.Format("20060102T150405Z") {
		t.Errorf("X-Amz-Date %q, want the signing time %s", amzDate, testTime.Format("20060102T150405Z"))
	}
	wantCred := keyID + "/" + amzDate[:8] + "/" + region + "/bedrock/aws4_request"
	if fields["Credential"] != wantCred {
		t.Errorf("Credential %q, want %q", fields["Credential"], wantCred)
	}
	names := strings.Split(fields["SignedHeaders"], ";")
	var headers []signedHeader
	for _, n := range names {
		switch n {
		case "host":
			headers = append(headers, signedHeader{n, r.Host})
		case "content-length":
			headers = append(headers, signedHeader{n, strconv.FormatInt(r.ContentLength, 10)})
		default:
			headers = append(headers, signedHeader{n, strings.Join(r.Header.Values(n), ",")})
		}
	}
	path, query, _ := strings.Cut(r.RequestURI, "?")
	want := sigV4Signature(r.Method, path, query, headers, sha256Hex(body), amzDate, region, "bedrock", secret)
	if fields["Signature"] != want {
		t.Errorf("signature %s, recomputed %s (signed headers %v, path %s)", fields["Signature"], want, names, path)
	}
	return names
}
