package catalog

import "testing"

func TestMaxPrice(t *testing.T) {
	c, err := parse([]byte(`{"models": [
		{"provider": "a", "id": "m", "context_window": 1000, "max_output_tokens": 100, "input_per_mtok": 1, "output_per_mtok": 8},
		{"provider": "b", "id": "m-2024-08-06", "context_window": 1000, "max_output_tokens": 300, "input_per_mtok": 3, "output_per_mtok": 4},
		{"provider": "c", "id": "m", "context_window": 1000, "max_output_tokens": 0, "input_per_mtok": null, "output_per_mtok": null},
		{"provider": "c", "id": "free", "context_window": 1000, "max_output_tokens": 50, "input_per_mtok": null, "output_per_mtok": null}]}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		model   string
		in, out float64
		maxOut  int
		ok      bool
	}{
		{"highest of each price across providers, base names included", "m", 3, 8, 300, true},
		{"a dated name finds the same entries", "m-2024-08-06", 3, 8, 300, true},
		{"unpriced everywhere keeps its output cap", "free", 0, 0, 50, false},
		{"unknown", "nope", 0, 0, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := c.MaxPrice(tc.model)
			if ok != tc.ok || m.InputPerMTok != tc.in || m.OutputPerMTok != tc.out || m.MaxOutputTokens != tc.maxOut {
				t.Fatalf("MaxPrice(%q) = %+v, %v; want in %v out %v max %d ok %v", tc.model, m, ok, tc.in, tc.out, tc.maxOut, tc.ok)
			}
		})
	}
	// The embedded catalogue: gpt-4o is priced by openai (2.5/10); azure-openai lists it without prices.
	m, ok := MaxPrice("gpt-4o")
	if !ok || m.InputPerMTok != 2.5 || m.OutputPerMTok != 10 || m.MaxOutputTokens != 16384 {
		t.Fatalf("MaxPrice(gpt-4o) = %+v, %v", m, ok)
	}
}
