package storage

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

func TestKey(t *testing.T) {
	tests := []struct {
		name  string
		table string
		parts []string
		want  string
	}{
		{name: "table only", table: "meta", want: "meta"},
		{name: "one part", table: tableWorkspace, parts: []string{"w1"}, want: "ws/w1"},
		{name: "two parts", table: tableAPIKeyID, parts: []string{"w1", "k1"}, want: "apikeyid/w1/k1"},
		{name: "three parts", table: "t", parts: []string{"a", "b", "c"}, want: "t/a/b/c"},
		{name: "empty part", table: "t", parts: []string{""}, want: "t/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := key(tt.table, tt.parts...)
			if string(got) != tt.want {
				t.Fatalf("key = %q, want %q", got, tt.want)
			}
			if cap(got) != len(got) {
				t.Errorf("key sized %d for %d bytes", cap(got), len(got))
			}
			p := prefix(tt.table, tt.parts...)
			if string(p) != tt.want+"/" {
				t.Fatalf("prefix = %q, want %q", p, tt.want+"/")
			}
		})
	}
	// prefix does not write into a key's backing array.
	k := key("t", "a")
	p := prefix("t", "a")
	if string(k) != "t/a" || string(p) != "t/a/" {
		t.Fatalf("key %q prefix %q", k, p)
	}
	if string(keyInitialized) != "meta/initialized" || string(keyKeyCheck) != "meta/keycheck" {
		t.Fatalf("meta keys moved: %q %q", keyInitialized, keyKeyCheck)
	}
}

func TestPrefixEnd(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want []byte // nil: no upper bound
	}{
		{name: "a/", in: []byte("a/"), want: []byte("a0")},
		{name: "table prefix", in: []byte("apikey/"), want: []byte("apikey0")},
		{name: "trailing ff", in: []byte("a\xff"), want: []byte("b")},
		{name: "trailing ffs", in: []byte("ab\xff\xff"), want: []byte("ac")},
		{name: "inner ff kept", in: []byte("\xffa"), want: []byte("\xffb")},
		{name: "all ff", in: []byte("\xff\xff\xff"), want: nil},
		{name: "single ff", in: []byte("\xff"), want: nil},
		{name: "empty", in: []byte{}, want: nil},
		{name: "zero byte", in: []byte{0}, want: []byte{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]byte(nil), tt.in...)
			got := prefixEnd(in)
			if !bytes.Equal(in, tt.in) {
				t.Fatalf("prefixEnd modified its input: %q", in)
			}
			if tt.want == nil {
				if got != nil {
					t.Fatalf("prefixEnd(%q) = %q, want nil", tt.in, got)
				}
				return
			}
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("prefixEnd(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if bytes.Compare(got, tt.in) <= 0 {
				t.Fatalf("prefixEnd(%q) = %q is not greater", tt.in, got)
			}
			// Every key that starts with in sorts below the end.
			for _, suffix := range []string{"", "x", "\xff\xff\xff\xff", "/a/b"} {
				k := append(append([]byte(nil), tt.in...), suffix...)
				if bytes.Compare(k, got) >= 0 {
					t.Fatalf("key %q is not below prefixEnd %q", k, got)
				}
			}
		})
	}
}

// TestTablesApart checks that a table's prefix range holds none of another table's keys, even where the table
// names share a beginning.
func TestTablesApart(t *testing.T) {
	tables := []string{tableMeta, tableWorkspace, tableWSSlug, tableAPIKey, tableAPIKeyID, tableProvider, tableConfig,
		tablePrompt, tableGuardrail, tablePolicy, tablePlugin, tablePluginWasm}
	for _, a := range tables {
		for _, b := range tables {
			if a == b {
				continue
			}
			lo, hi := prefix(a), prefixEnd(prefix(a))
			for _, k := range [][]byte{key(b, "x"), key(b, "w", "x"), key(b, "0"), key(b, "zzz")} {
				if bytes.Compare(k, lo) >= 0 && bytes.Compare(k, hi) < 0 {
					t.Errorf("%s's key %q falls in %s's range [%q, %q)", b, k, a, lo, hi)
				}
			}
		}
	}
	// Workspace prefixes are apart too: one workspace ID is never a prefix range of another's.
	lo, hi := prefix(tableConfig, "ws1"), prefixEnd(prefix(tableConfig, "ws1"))
	for _, k := range [][]byte{key(tableConfig, "ws10", "a"), key(tableConfig, "ws1.", "a"), key(tableConfig, "ws")} {
		if bytes.Compare(k, lo) >= 0 && bytes.Compare(k, hi) < 0 {
			t.Errorf("%q falls in ws1's range", k)
		}
	}
}

func TestValidID(t *testing.T) {
	tests := []struct {
		id   string
		want bool
	}{
		{"default", true},
		{"cfg-a", true},
		{"a.b_c:d-1", true},
		{"a", true},
		{"0", true},
		{"Z9", true},
		{"123e4567-e89b-12d3-a456-426614174000", true},
		{strings.Repeat("a", 128), true},
		{"a" + strings.Repeat("-", 127), true},

		{"", false},
		{"-a", false},
		{".a", false},
		{"_a", false},
		{":a", false},
		{"a/b", false},
		{"/", false},
		{"a b", false},
		{" a", false},
		{"a ", false},
		{"a\n", false},
		{"a\x00", false},
		{strings.Repeat("a", 129), false},
		{"é", false},
		{"aé", false},
		{"日本", false},
		{"a\\b", false},
		{"a+b", false},
		{"a%2Fb", false},
	}
	for _, tt := range tests {
		name := tt.id
		if len(name) > 20 {
			name = name[:20] + "..."
		}
		t.Run(name, func(t *testing.T) {
			if got := ValidID(tt.id); got != tt.want {
				t.Fatalf("ValidID(%q) = %v, want %v", tt.id, got, tt.want)
			}
			err := CheckID("provider slug", tt.id)
			if (err == nil) != tt.want {
				t.Fatalf("CheckID(%q) = %v, want valid=%v", tt.id, err, tt.want)
			}
		})
	}
}

func TestCheckID(t *testing.T) {
	tests := []struct {
		name     string
		field    string
		id       string
		wantErr  bool
		contains []string
	}{
		{name: "valid", field: "workspace id", id: "ok-1"},
		{name: "empty", field: "workspace id", id: "", wantErr: true, contains: []string{"workspace id", "required"}},
		{name: "slash", field: "plugin id", id: "a/b", wantErr: true, contains: []string{"plugin id", `"a/b"`}},
		{name: "too long", field: "id", id: strings.Repeat("x", 129), wantErr: true, contains: []string{"id ", "128"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckID(tt.field, tt.id)
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("CheckID = %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("CheckID = nil, want an error")
			}
			if !strings.HasPrefix(err.Error(), tt.field) {
				t.Errorf("error %q does not start with the field name %q", err, tt.field)
			}
			for _, c := range tt.contains {
				if !strings.Contains(err.Error(), c) {
					t.Errorf("error %q lacks %q", err, c)
				}
			}
		})
	}
}

// TestValidIDAgreesWithItsPattern checks the hand-written ValidID against the pattern it replaced.
func TestValidIDAgreesWithItsPattern(t *testing.T) {
	pattern := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)
	cases := []string{"", "a", "A9", "9", ".a", "_a", ":a", "-a", "a.b_c:d-e", "a b", "a/b", "é", "a\x00",
		strings.Repeat("a", 128), strings.Repeat("a", 129), "ab\n", "0-", "Z~"}
	for c := 0; c < 256; c++ {
		cases = append(cases, string([]byte{byte(c)}), "a"+string([]byte{byte(c)}))
	}
	for _, s := range cases {
		if got, want := ValidID(s), pattern.MatchString(s); got != want {
			t.Errorf("ValidID(%q) = %v, the pattern says %v", s, got, want)
		}
	}
}
