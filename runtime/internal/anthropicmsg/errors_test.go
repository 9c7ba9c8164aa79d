package anthropicmsg

import "testing"

func TestError(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"invalid request", 400,
			`{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`,
			`{"error":{"message":"max_tokens: Field required","type":"invalid_request_error","code":"invalid_request_error","param":null,
			  "provider_error":{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}}}`},
		{"authentication", 401,
			`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`,
			`{"error":{"message":"invalid x-api-key","type":"authentication_error","code":"authentication_error","param":null,
			  "provider_error":{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}}}`},
		{"rate limit", 429,
			`{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`,
			`{"error":{"message":"Number of request tokens has exceeded your per-minute rate limit","type":"rate_limit_error","code":"rate_limit_error","param":null,
			  "provider_error":{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}}}`},
		{"overloaded", 529,
			`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			`{"error":{"message":"Overloaded","type":"server_error","code":"overloaded_error","param":null,
			  "provider_error":{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}}}`},
		{"api error", 500,
			`{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`,
			`{"error":{"message":"Internal server error","type":"server_error","code":"api_error","param":null,
			  "provider_error":{"type":"error","error":{"type":"api_error","message":"Internal server error"}}}}`},
		{"not JSON (request too large from the proxy)", 413, "<html>413 Request Entity Too Large</html>\n",
			`{"error":{"message":"the provider answered 413: <html>413 Request Entity Too Large</html>","type":"invalid_request_error","code":"invalid_request_error","param":null,
			  "provider_error":"<html>413 Request Entity Too Large</html>"}}`},
		{"empty", 503, "",
			`{"error":{"message":"the provider answered 503 Service Unavailable","type":"server_error","code":"server_error","param":null,"provider_error":null}}`},
		{"Google shape from Vertex", 404,
			`{"error":{"code":404,"message":"Publisher Model claude-x was not found.","status":"NOT_FOUND"}}`,
			`{"error":{"message":"Publisher Model claude-x was not found.","type":"not_found_error","code":"NOT_FOUND","param":null,
			  "provider_error":{"error":{"code":404,"message":"Publisher Model claude-x was not found.","status":"NOT_FOUND"}}}}`},
		{"Google array", 429,
			`[{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}]`,
			`{"error":{"message":"Quota exceeded","type":"rate_limit_error","code":"RESOURCE_EXHAUSTED","param":null,
			  "provider_error":[{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}]}}`},
		{"JSON without message", 500, `{"oops":true}`,
			`{"error":{"message":"the provider answered 500 Internal Server Error","type":"server_error","code":"server_error","param":null,"provider_error":{"oops":true}}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			jsonEqual(t, Error(tc.status, []byte(tc.body)), []byte(tc.want))
		})
	}
}
