package storage

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// keyBytes has bytes that make '+' and '/' in standard base64 and '-' and '_' in URL-safe base64, so that the
// two alphabets are really told apart.
var keyBytes = func() []byte {
	b := make([]byte, MasterKeySize)
	for i := range b {
		b[i] = 0xf8 + byte(i%8)
	}
	b[0] = 0x00
	return b
}()

func TestParseMasterKey(t *testing.T) {
	std := base64.StdEncoding.EncodeToString(keyBytes)
	url := base64.URLEncoding.EncodeToString(keyBytes)
	if !strings.ContainsAny(std, "+/") || !strings.ContainsAny(url, "-_") || !strings.HasSuffix(std, "=") {
		t.Fatalf("test key does not exercise the alphabets: %s %s", std, url)
	}
	tests := []struct {
		name    string
		in      string
		wantErr bool
	}{
		{name: "hex lower", in: hex.EncodeToString(keyBytes)},
		{name: "hex upper", in: strings.ToUpper(hex.EncodeToString(keyBytes))},
		{name: "hex with newline", in: hex.EncodeToString(keyBytes) + "\n"},
		{name: "hex with spaces around", in: "  \t" + hex.EncodeToString(keyBytes) + " \r\n"},
		{name: "base64 std padded", in: std},
		{name: "base64 std raw", in: base64.RawStdEncoding.EncodeToString(keyBytes)},
		{name: "base64 url padded", in: url},
		{name: "base64 url raw", in: base64.RawURLEncoding.EncodeToString(keyBytes)},
		{name: "base64 with newline", in: std + "\n"},

		{name: "empty", in: "", wantErr: true},
		{name: "blank", in: "   \n", wantErr: true},
		{name: "short hex", in: "abc", wantErr: true},
		{name: "odd hex", in: hex.EncodeToString(keyBytes)[:63], wantErr: true},
		{name: "31 bytes hex", in: hex.EncodeToString(keyBytes[:31]), wantErr: true},
		{name: "33 bytes hex", in: hex.EncodeToString(append(append([]byte(nil), keyBytes...), 1)), wantErr: true},
		{name: "hex with a bad digit", in: "zz" + hex.EncodeToString(keyBytes)[2:], wantErr: true},
		{name: "hex with a space inside", in: hex.EncodeToString(keyBytes)[:32] + " " + hex.EncodeToString(keyBytes)[32:], wantErr: true},
		{name: "31 bytes base64", in: base64.StdEncoding.EncodeToString(keyBytes[:31]), wantErr: true},
		{name: "33 bytes base64", in: base64.StdEncoding.EncodeToString(append(append([]byte(nil), keyBytes...), 1)), wantErr: true},
		{name: "base64 truncated", in: std[:40], wantErr: true},
		{name: "base64 mixed alphabets", in: strings.Replace(std, "+", "-", 1), wantErr: true},
		{name: "passphrase", in: "correct horse battery staple", wantErr: true},
		{name: "32 ascii chars", in: strings.Repeat("k", 32), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMasterKey(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParseMasterKey(%q) = %x, want an error", tt.in, got)
				}
				if got != nil {
					t.Fatalf("ParseMasterKey returned a key with its error: %x", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseMasterKey(%q): %v", tt.in, err)
			}
			if !bytes.Equal(got, keyBytes) {
				t.Fatalf("ParseMasterKey(%q) = %x, want %x", tt.in, got, keyBytes)
			}
		})
	}
}

func TestLoadOrCreateMasterKeyFile(t *testing.T) {
	t.Run("create then load", func(t *testing.T) {
		dir := t.TempDir()
		key, created, err := LoadOrCreateMasterKeyFile(dir)
		if err != nil || !created {
			t.Fatalf("first call = created %v, %v", created, err)
		}
		if len(key) != MasterKeySize || bytes.Equal(key, make([]byte, MasterKeySize)) {
			t.Fatalf("key = %x", key)
		}
		path := filepath.Join(dir, MasterKeyFile)
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if perm := st.Mode().Perm(); perm != 0o600 {
			t.Fatalf("mode = %o, want 600", perm)
		}
		data, _ := os.ReadFile(path)
		if string(data) != hex.EncodeToString(key)+"\n" {
			t.Fatalf("file = %q, want the key in hex and a newline", data)
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 {
			t.Fatalf("folder holds %d entries, want only %s (temporary file left behind?)", len(entries), MasterKeyFile)
		}

		for i := range 2 {
			again, created, err := LoadOrCreateMasterKeyFile(dir)
			if err != nil || created || !bytes.Equal(again, key) {
				t.Fatalf("call %d = %x, created %v, %v; want the same key, not created", i+2, again, created, err)
			}
		}
		// The key opens a store made with it.
		s, err := Open(filepath.Join(dir, "db"), Options{MasterKey: key, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	})

	t.Run("two folders, two keys", func(t *testing.T) {
		k1, _, err1 := LoadOrCreateMasterKeyFile(t.TempDir())
		k2, _, err2 := LoadOrCreateMasterKeyFile(t.TempDir())
		if err1 != nil || err2 != nil || bytes.Equal(k1, k2) {
			t.Fatalf("keys %x, %x (%v, %v): want two different keys", k1, k2, err1, err2)
		}
	})

	files := []struct {
		name    string
		content string
		want    []byte
		wantErr bool
	}{
		{name: "operator hex", content: hex.EncodeToString(keyBytes), want: keyBytes},
		{name: "operator base64 with newline", content: base64.StdEncoding.EncodeToString(keyBytes) + "\n", want: keyBytes},
		{name: "corrupted", content: hex.EncodeToString(keyBytes)[:40] + "garbage", wantErr: true},
		{name: "truncated", content: hex.EncodeToString(keyBytes)[:63], wantErr: true},
		{name: "empty", content: "", wantErr: true},
		{name: "binary", content: string(keyBytes), wantErr: true},
	}
	for _, tt := range files {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, MasterKeyFile)
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			key, created, err := LoadOrCreateMasterKeyFile(dir)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("got key %x, want an error", key)
				}
				if !strings.Contains(err.Error(), path) {
					t.Errorf("error does not name the file: %v", err)
				}
				if data, _ := os.ReadFile(path); string(data) != tt.content {
					t.Fatalf("a corrupted key file was overwritten with %q", data)
				}
				return
			}
			if err != nil || created || !bytes.Equal(key, tt.want) {
				t.Fatalf("= %x, %v, %v; want %x", key, created, err, tt.want)
			}
		})
	}

	t.Run("key file is a folder", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, MasterKeyFile), 0o700); err != nil {
			t.Fatal(err)
		}
		if key, _, err := LoadOrCreateMasterKeyFile(dir); err == nil {
			t.Fatalf("got key %x, want an error", key)
		}
	})

	t.Run("missing folder", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "does", "not", "exist")
		if key, created, err := LoadOrCreateMasterKeyFile(dir); err == nil {
			t.Fatalf("got key %x (created %v), want an error", key, created)
		}
	})
}

func TestKeyringHashAPIKey(t *testing.T) {
	k1, _ := newKeyring(testMasterKey(1))
	k1b, _ := newKeyring(testMasterKey(1))
	k2, _ := newKeyring(testMasterKey(2))
	tests := []struct {
		name string
		a, b apiKeyHash
		same bool
	}{
		{name: "deterministic", a: k1.hashAPIKey("gw-abc"), b: k1.hashAPIKey("gw-abc"), same: true},
		{name: "same master key, other keyring", a: k1.hashAPIKey("gw-abc"), b: k1b.hashAPIKey("gw-abc"), same: true},
		{name: "other secret", a: k1.hashAPIKey("gw-abc"), b: k1.hashAPIKey("gw-abd"), same: false},
		{name: "other master key", a: k1.hashAPIKey("gw-abc"), b: k2.hashAPIKey("gw-abc"), same: false},
		{name: "long then short (pooled buffer reuse)", a: func() apiKeyHash {
			k1.hashAPIKey(strings.Repeat("x", 500))
			return k1.hashAPIKey("x")
		}(), b: k1b.hashAPIKey("x"), same: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if (tt.a == tt.b) != tt.same {
				t.Fatalf("%s vs %s: same=%v, want %v", tt.a.hex(), tt.b.hex(), tt.a == tt.b, tt.same)
			}
		})
	}
	h := k1.hashAPIKey("gw-abc").hex()
	if len(h) != 64 || strings.ToLower(h) != h {
		t.Fatalf("hex = %q, want 64 lowercase hex digits", h)
	}
	if _, err := newKeyring(make([]byte, 16)); err == nil {
		t.Fatal("newKeyring accepted a 16-byte key")
	}
}

func TestNewAPIKeySecret(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		s := NewAPIKeySecret()
		if !strings.HasPrefix(s, APIKeyPrefix) {
			t.Fatalf("%q lacks the prefix", s)
		}
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(s, APIKeyPrefix))
		if err != nil || len(raw) != 32 {
			t.Fatalf("%q: body is not 32 bytes of raw URL base64 (%v)", s, err)
		}
		if seen[s] {
			t.Fatalf("duplicate secret %q", s)
		}
		seen[s] = true
	}
}

// TestKeyDerivationStable pins the derivations to their definitions: a change would orphan every stored API key
// hash and make every sealed secret unreadable.
func TestKeyDerivationStable(t *testing.T) {
	master := testMasterKey(3)
	mac := func(key []byte, msg string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	kr, err := newKeyring(master)
	if err != nil {
		t.Fatal(err)
	}
	pepper := mac(master, "gateway/v1/api-key-hash")
	for _, secret := range []string{"gw-abc", "", strings.Repeat("s", 300), NewAPIKeySecret()} {
		got := kr.hashAPIKey(secret)
		if want := mac(pepper, secret); !bytes.Equal(got[:], want) {
			t.Fatalf("hashAPIKey(%q) = %x, want HMAC-SHA256(pepper, secret) = %x", secret, got, want)
		}
	}

	block, err := aes.NewCipher(mac(master, "gateway/v1/secrets"))
	if err != nil {
		t.Fatal(err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	aad := []byte("provider/w/s")
	sealed := kr.seal([]byte("plain"), aad)
	n := gcm.NonceSize()
	plain, err := gcm.Open(nil, sealed[:n], sealed[n:], aad)
	if err != nil || string(plain) != "plain" {
		t.Fatalf("seal is not nonce || AES-256-GCM under the derived key: %q, %v", plain, err)
	}
}
