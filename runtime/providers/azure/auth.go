package azure

import (
	"net/http"
	"strings"
)

// setAuth puts the credential on the request. Azure OpenAI and the model inference endpoint take a key in
// api-key and a Microsoft Entra ID access token as Authorization: Bearer; Foundry serverless APIs and managed online
// endpoints take either as Authorization: Bearer. Only one credential header goes upstream: a forwarded copy of the
// other is removed.
func setAuth(h http.Header, r route, key string) {
	key = strings.TrimSpace(key)
	if len(key) > 7 && strings.EqualFold(key[:7], "bearer ") {
		key = strings.TrimSpace(key[7:])
	}
	if key == "" {
		return
	}
	if r == routeServerless || r == routeManaged || isJWT(key) {
		h.Del("Api-Key")
		h.Set("Authorization", "Bearer "+key)
		return
	}
	h.Del("Authorization")
	h.Set("Api-Key", key)
}

// isJWT reports whether key looks like a JSON Web Token, as Entra ID access tokens are: three non-empty base64url
// parts separated by dots, the first a JSON object (so it starts with "eyJ", base64url of `{"`). Azure API keys
// are 32 hex digits or 84 base62 characters and never match.
func isJWT(key string) bool {
	if !strings.HasPrefix(key, "eyJ") {
		return false
	}
	dots, last := 0, -1
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c == '.':
			if i == last+1 { // empty part
				return false
			}
			dots, last = dots+1, i
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return dots == 2 && last < len(key)-1
}
