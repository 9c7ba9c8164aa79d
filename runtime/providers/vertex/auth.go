package vertex

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/llmgw/gateway/runtime/gwerr"
)

const (
	// scope is the OAuth scope Vertex AI needs.
	scope = "https://www.googleapis.com/auth/cloud-platform"
	// jwtGrant is the grant type of a JWT bearer token exchange (RFC 7523).
	jwtGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	// defaultTokenURI is Google's token endpoint, for service accounts that don't name one.
	defaultTokenURI = "https://oauth2.googleapis.com/token"
	// assertionLifetime is the lifetime of a signed JWT, the longest Google accepts.
	assertionLifetime = time.Hour
	// refreshMargin is how long before an access token expires it is replaced.
	refreshMargin = 5 * time.Minute
	// maxCachedAccounts bounds the token cache; past it, entries whose token has expired are dropped.
	maxCachedAccounts = 1024
)

// serviceAccount is the part of a Google service account key file the adapter reads.
type serviceAccount struct {
	ProjectID    string `json:"project_id"`
	PrivateKeyID string `json:"private_key_id"`
	PrivateKey   string `json:"private_key"`
	ClientEmail  string `json:"client_email"`
	TokenURI     string `json:"token_uri"`
}

// tokenCache holds one entry per service account (by the SHA-256 of its JSON), so that its key is parsed once and
// its access token reused until shortly before it expires.
type tokenCache struct {
	mu      sync.Mutex
	entries map[[sha256.Size]byte]*tokenEntry
}

// tokenEntry is one service account: its parsed key and its current access token. sem lets one exchange run at a
// time; mu guards token and refreshAt.
type tokenEntry struct {
	account serviceAccount
	key     *rsa.PrivateKey
	sem     chan struct{}

	mu        sync.Mutex
	token     string
	refreshAt time.Time
}

// entry returns the cache entry of a service account, parsing it on first use. A service account that can't be
// used is a 400 naming the field.
func (c *tokenCache) entry(raw json.RawMessage, now time.Time) (*tokenEntry, error) {
	sum := sha256.Sum256(raw)
	c.mu.Lock()
	e, ok := c.entries[sum]
	c.mu.Unlock()
	if ok {
		return e, nil
	}
	e, err := parseAccount(raw)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.entries[sum]; ok {
		return prev, nil
	}
	if c.entries == nil {
		c.entries = make(map[[sha256.Size]byte]*tokenEntry)
	}
	if len(c.entries) >= maxCachedAccounts {
		for k, old := range c.entries {
			if _, fresh := old.cached(now); !fresh {
				delete(c.entries, k)
			}
		}
	}
	c.entries[sum] = e
	return e, nil
}

func parseAccount(raw json.RawMessage) (*tokenEntry, error) {
	const param = "cloudy_service_account_json"
	var s string
	if json.Unmarshal(raw, &s) == nil { // a string that holds the key file
		raw = json.RawMessage(s)
	}
	var sa serviceAccount
	if err := json.Unmarshal(raw, &sa); err != nil {
		return nil, gwerr.BadRequest(param, "%s must be a service account key (a JSON object): %v", param, err)
	}
	if sa.ClientEmail == "" {
		return nil, gwerr.BadRequest(param+".client_email", "%s.client_email is required", param)
	}
	if sa.TokenURI == "" {
		sa.TokenURI = defaultTokenURI
	}
	if u, err := url.Parse(sa.TokenURI); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, gwerr.BadRequest(param+".token_uri", "%s.token_uri must be an https URL", param)
	}
	key, err := parseKey(sa.PrivateKey)
	if err != nil {
		return nil, gwerr.BadRequest(param+".private_key", "%s.private_key: %v", param, err)
	}
	return &tokenEntry{account: sa, key: key, sem: make(chan struct{}, 1)}, nil
}

// parseKey reads an RSA private key in PEM, PKCS #8 (as Google issues them) or PKCS #1.
func parseKey(pemText string) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode([]byte(pemText))
	if block == nil {
		return nil, errors.New("not a PEM private key")
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		rk, ok := k.(*rsa.PrivateKey)
		if !ok {
			return nil, errors.New("not an RSA key")
		}
		return rk, nil
	}
	k, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	if err != nil {
		return nil, errors.New("not a PKCS #8 or PKCS #1 RSA private key")
	}
	return k, nil
}

// cached returns the entry's token and whether it is still fresh at now.
func (e *tokenEntry) cached(now time.Time) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.token, e.token != "" && now.Before(e.refreshAt)
}

// token returns a fresh access token of the entry's service account, exchanging a new JWT when the cached token
// is missing or about to expire. Exchanges of one account never overlap: callers that find the token stale wait
// for the one exchange under way (or for ctx) and then use its token.
func (a *Adapter) token(ctx context.Context, client *http.Client, e *tokenEntry) (string, error) {
	if tok, ok := e.cached(a.now()); ok {
		return tok, nil
	}
	select {
	case e.sem <- struct{}{}:
	case <-ctx.Done():
		return "", timeoutError(ctx.Err())
	}
	defer func() { <-e.sem }()
	if tok, ok := e.cached(a.now()); ok {
		return tok, nil // another caller refreshed it while this one waited
	}
	issued := a.now()
	tok, lifetime, err := exchange(ctx, client, e, issued)
	if err != nil {
		return "", err
	}
	margin := min(refreshMargin, lifetime/2)
	e.mu.Lock()
	e.token, e.refreshAt = tok, issued.Add(lifetime-margin)
	e.mu.Unlock()
	return tok, nil
}

func timeoutError(err error) *gwerr.Error {
	return &gwerr.Error{Status: http.StatusRequestTimeout, Code: gwerr.CodeRequestTimeout, Err: err,
		Message: "vertex-ai: the request timed out while getting an access token for the service account"}
}

// signJWT builds the RS256-signed assertion of a service account: iss = client_email, scope = cloud-platform,
// aud = token_uri, iat = now, exp = now + 1h.
func signJWT(e *tokenEntry, now time.Time) (string, error) {
	header := struct {
		Alg string `json:"alg"`
		Typ string `json:"typ"`
		Kid string `json:"kid,omitempty"`
	}{"RS256", "JWT", e.account.PrivateKeyID}
	claims := struct {
		Iss   string `json:"iss"`
		Scope string `json:"scope"`
		Aud   string `json:"aud"`
		Iat   int64  `json:"iat"`
		Exp   int64  `json:"exp"`
	}{e.account.ClientEmail, scope, e.account.TokenURI, now.Unix(), now.Add(assertionLifetime).Unix()}
	h, err := json.Marshal(header)
	if err != nil {
		return "", err
	}
	c, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString(h) + "." + enc.EncodeToString(c)
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, e.key, crypto.SHA256, sum[:])
	if err != nil {
		return "", err
	}
	return signing + "." + enc.EncodeToString(sig), nil
}

// exchange trades a signed JWT for an access token at the service account's token_uri.
func exchange(ctx context.Context, client *http.Client, e *tokenEntry, now time.Time) (string, time.Duration, error) {
	if client == nil {
		return "", 0, gwerr.Internal(errors.New("vertex-ai: no HTTP client for the token exchange"))
	}
	assertion, err := signJWT(e, now)
	if err != nil {
		return "", 0, gwerr.Internal(fmt.Errorf("vertex-ai: sign JWT: %w", err))
	}
	form := url.Values{"grant_type": {jwtGrant}, "assertion": {assertion}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.account.TokenURI, strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, gwerr.Internal(fmt.Errorf("vertex-ai: token request: %w", err))
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		var ge *gwerr.Error
		switch {
		case errors.As(err, &ge):
			return "", 0, ge // the client's host policy refused the address
		case ctx.Err() != nil:
			return "", 0, timeoutError(err)
		}
		return "", 0, &gwerr.Error{Status: http.StatusBadGateway, Code: gwerr.CodeUpstream, Err: err,
			Message: "vertex-ai: could not reach the service account's token_uri " + e.account.TokenURI}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		if ctx.Err() != nil {
			return "", 0, timeoutError(err)
		}
		return "", 0, &gwerr.Error{Status: http.StatusBadGateway, Code: gwerr.CodeUpstream, Err: err,
			Message: "vertex-ai: the token exchange broke off"}
	}
	var tr struct {
		AccessToken      string  `json:"access_token"`
		ExpiresIn        float64 `json:"expires_in"`
		Error            string  `json:"error"`
		ErrorDescription string  `json:"error_description"`
	}
	decodeErr := json.Unmarshal(body, &tr)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := strings.TrimSpace(tr.Error + ": " + tr.ErrorDescription)
		if decodeErr != nil || tr.Error == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		if resp.StatusCode >= 400 && resp.StatusCode < 500 {
			return "", 0, &gwerr.Error{Status: http.StatusUnauthorized, Code: gwerr.CodeInvalidAPIKey, Param: "cloudy_service_account_json",
				Message: fmt.Sprintf("vertex-ai: the token endpoint refused the service account %s (%d %s)", e.account.ClientEmail, resp.StatusCode, msg)}
		}
		return "", 0, &gwerr.Error{Status: http.StatusBadGateway, Code: gwerr.CodeUpstream,
			Message: fmt.Sprintf("vertex-ai: the token endpoint answered %d %s", resp.StatusCode, msg)}
	}
	if decodeErr != nil || tr.AccessToken == "" {
		return "", 0, &gwerr.Error{Status: http.StatusBadGateway, Code: gwerr.CodeUpstream, Err: decodeErr,
			Message: "vertex-ai: the token endpoint's answer holds no access_token"}
	}
	lifetime := time.Duration(tr.ExpiresIn * float64(time.Second))
	if lifetime <= 0 {
		lifetime = time.Hour
	}
	return tr.AccessToken, lifetime, nil
}
