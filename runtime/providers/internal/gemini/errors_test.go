package gemini

import "testing"

func TestError(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"gemini api key", 400,
			`{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`,
			`{"error":{"message":"API key not valid. Please pass a valid API key.","type":"invalid_request_error","code":"invalid_argument","param":null,
			  "provider_error":{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}}}`},
		{"quota, as an array", 429,
			`[{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}]`,
			`{"error":{"message":"Resource has been exhausted (e.g. check quota).","type":"rate_limit_error","code":"resource_exhausted","param":null,
			  "provider_error":[{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}]}}`},
		{"vertex not found", 404,
			`{"error":{"code":404,"message":"Publisher Model ` + "`projects/p/locations/us-central1/publishers/google/models/gemini-9`" + ` was not found.","status":"NOT_FOUND"}}`,
			`{"error":{"message":"Publisher Model ` + "`projects/p/locations/us-central1/publishers/google/models/gemini-9`" + ` was not found.","type":"not_found_error","code":"not_found","param":null,
			  "provider_error":{"error":{"code":404,"message":"Publisher Model ` + "`projects/p/locations/us-central1/publishers/google/models/gemini-9`" + ` was not found.","status":"NOT_FOUND"}}}}`},
		{"permission denied", 403,
			`{"error":{"code":403,"message":"Permission 'aiplatform.endpoints.predict' denied","status":"PERMISSION_DENIED"}}`,
			`{"error":{"message":"Permission 'aiplatform.endpoints.predict' denied","type":"permission_error","code":"permission_denied","param":null,
			  "provider_error":{"error":{"code":403,"message":"Permission 'aiplatform.endpoints.predict' denied","status":"PERMISSION_DENIED"}}}}`},
		{"oauth", 401, `{"error":"invalid_grant","error_description":"Invalid JWT Signature."}`,
			`{"error":{"message":"Invalid JWT Signature.","type":"authentication_error","code":"invalid_grant","param":null,
			  "provider_error":{"error":"invalid_grant","error_description":"Invalid JWT Signature."}}}`},
		{"html", 502, "<html><body>Bad Gateway</body></html>\n",
			`{"error":{"message":"<html><body>Bad Gateway</body></html>","type":"server_error","code":null,"param":null,
			  "provider_error":"<html><body>Bad Gateway</body></html>\n"}}`},
		{"empty", 503, "",
			`{"error":{"message":"Service Unavailable","type":"server_error","code":null,"param":null,"provider_error":""}}`},
		{"other JSON", 500, `{"oops":1}`,
			`{"error":{"message":"Internal Server Error","type":"server_error","code":null,"param":null,"provider_error":{"oops":1}}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			jsonEqual(t, Error(tc.status, []byte(tc.body)), []byte(tc.want))
		})
	}
}
