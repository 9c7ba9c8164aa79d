package bedrock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
)

// signingService is the SigV4 service name of bedrock-runtime.
const signingService = "bedrock"

// Config fields and the caller headers that stand in for them.
const (
	fieldAccessKeyID     = "cloudz_access_key_id"
	fieldSecretAccessKey = "cloudz_secret_access_key"
	fieldSessionToken    = "cloudz_session_token"
	fieldRegion          = "cloudz_region"

	headerAccessKeyID     = "x-gateway-cloudz-access-key-id"
	headerSecretAccessKey = "x-gateway-cloudz-secret-access-key"
	headerSessionToken    = "x-gateway-cloudz-session-token"
	headerRegion          = "x-gateway-cloudz-region"
)

// auth is how one request is authenticated: SigV4 credentials, or a Bedrock API key sent as a Bearer token.
type auth struct {
	creds  aws.Credentials
	bearer string
	region string
}

// resolveAuth finds the credentials and region of a target.
//
// Credentials come from the config's cloudz_access_key_id, cloudz_secret_access_key and cloudz_session_token
// when the config sets cloudz_access_key_id, else from the caller's x-gateway-cloudz-access-key-id,
// x-gateway-cloudz-secret-access-key and x-gateway-cloudz-session-token headers: the set is taken whole from
// one place, so a header never adds a session token to the config's keys. The region is the config's
// cloudz_region, else the x-gateway-cloudz-region header. Config wins because it is the operator's choice.
//
// Without SigV4 credentials the target's api_key (or the caller's Bearer token) is sent as a Bedrock API key
// (Authorization: Bearer). With neither, or without a region where one is needed, the answer is a 400 naming
// the missing field. The region is needed to sign, and to build the default host when there is no custom_host.
func resolveAuth(t *providers.Target) (auth, error) {
	header := t.Header
	if header == nil {
		header = func(string) string { return "" }
	}
	var a auth
	keyID, secret, token := t.StringField(fieldAccessKeyID), t.StringField(fieldSecretAccessKey), t.StringField(fieldSessionToken)
	if keyID == "" && secret == "" {
		keyID, secret, token = header(headerAccessKeyID), header(headerSecretAccessKey), header(headerSessionToken)
	}
	a.region = t.StringField(fieldRegion)
	if a.region == "" {
		a.region = header(headerRegion)
	}
	switch {
	case keyID == "" && secret == "" && t.APIKey != "":
		a.bearer = t.APIKey
	case keyID == "":
		return a, missing(fieldAccessKeyID, headerAccessKeyID)
	case secret == "":
		return a, missing(fieldSecretAccessKey, headerSecretAccessKey)
	default:
		a.creds = aws.Credentials{AccessKeyID: keyID, SecretAccessKey: secret, SessionToken: token, Source: "gateway"}
	}
	if a.region == "" && (a.bearer == "" || t.BaseURL == "") {
		return a, missing(fieldRegion, headerRegion)
	}
	if a.region != "" && !validRegion(a.region) {
		return a, gwerr.BadRequest(fieldRegion, "%s %q is not an AWS region name (such as us-east-1)", fieldRegion, a.region)
	}
	return a, nil
}

func missing(field, header string) *gwerr.Error {
	return gwerr.BadRequest(field, "bedrock needs %s in the config or the %s header", field, header)
}

// validRegion accepts region names (letters, digits and dashes), which also keeps a region from changing the
// default host it is part of.
func validRegion(r string) bool {
	if len(r) > 64 {
		return false
	}
	for i := 0; i < len(r); i++ {
		c := r[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// authorize signs req (whose body is body) with SigV4 for service "bedrock", or sets the Bearer API key. The
// signature covers the final URL with its path escaped exactly as it is sent, the host, the content headers,
// X-Amz-Date, X-Amz-Security-Token when there is a session token, and the body's SHA-256.
func (a *Adapter) authorize(ctx context.Context, req *http.Request, body []byte, au auth) error {
	if au.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+au.bearer)
		return nil
	}
	sum := sha256.Sum256(body)
	if err := a.signer.SignHTTP(ctx, au.creds, req, hex.EncodeToString(sum[:]), signingService, au.region, a.now()); err != nil {
		return fmt.Errorf("bedrock: sign request: %w", err)
	}
	return nil
}
