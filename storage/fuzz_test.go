package storage

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
)

func FuzzParseMasterKey(f *testing.F) {
	key := bytes.Repeat([]byte{0xfb, 0xef, 0x01}, 11)[:MasterKeySize]
	for _, seed := range []string{
		hex.EncodeToString(key),
		strings.ToUpper(hex.EncodeToString(key)) + "\n",
		base64.StdEncoding.EncodeToString(key),
		base64.URLEncoding.EncodeToString(key),
		base64.RawStdEncoding.EncodeToString(key),
		base64.RawURLEncoding.EncodeToString(key),
		"",
		"abc",
		strings.Repeat("0", 63),
		strings.Repeat("=", 44),
		"\x00\xff",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseMasterKey(s)
		if err != nil {
			if k != nil {
				t.Fatalf("ParseMasterKey(%q) returned a key with its error", s)
			}
			return
		}
		if len(k) != MasterKeySize {
			t.Fatalf("ParseMasterKey(%q) = %d bytes, want %d", s, len(k), MasterKeySize)
		}
		// Deterministic, and its canonical form (hex) parses to the same key.
		again, err := ParseMasterKey(s)
		if err != nil || !bytes.Equal(again, k) {
			t.Fatalf("second parse of %q = %x, %v; first %x", s, again, err, k)
		}
		if back, err := ParseMasterKey(hex.EncodeToString(k)); err != nil || !bytes.Equal(back, k) {
			t.Fatalf("hex round trip of %x = %x, %v", k, back, err)
		}
		if _, err := newKeyring(k); err != nil {
			t.Fatalf("a parsed key does not make a keyring: %v", err)
		}
	})
}

func FuzzValidID(f *testing.F) {
	for _, seed := range []string{"default", "cfg-a", "a.b_c:d-1", "", "-a", "a/b", "a b", "é", strings.Repeat("a", 128),
		strings.Repeat("a", 129), "a\n", "a/", "/a", "0:0"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		valid := ValidID(s)
		if (CheckID("f", s) == nil) != valid {
			t.Fatalf("CheckID and ValidID disagree on %q", s)
		}
		if !valid {
			return
		}
		if len(s) == 0 || len(s) > 128 || strings.ContainsAny(s, "/ \t\r\n") {
			t.Fatalf("ValidID(%q) but it is empty, too long or holds a separator or space", s)
		}
		for _, r := range s {
			if r > 0x7f {
				t.Fatalf("ValidID(%q) but it is not ASCII", s)
			}
		}
		// Keys made of valid components read one way only.
		k := key(tableProvider, s, s)
		parts := strings.Split(string(k), "/")
		if len(parts) != 3 || parts[0] != tableProvider || parts[1] != s || parts[2] != s {
			t.Fatalf("key %q splits into %q", k, parts)
		}
		// A workspace's prefix range holds its own keys and not those of a workspace whose ID extends it.
		lo, hi := prefix(tableConfig, s), prefixEnd(prefix(tableConfig, s))
		in := key(tableConfig, s, "x")
		if bytes.Compare(in, lo) < 0 || (hi != nil && bytes.Compare(in, hi) >= 0) {
			t.Fatalf("%q not in its own range [%q, %q)", in, lo, hi)
		}
		out := key(tableConfig, s+"0", "x")
		if bytes.Compare(out, lo) >= 0 && (hi == nil || bytes.Compare(out, hi) < 0) {
			t.Fatalf("%q falls in the range of %q", out, s)
		}
	})
}
