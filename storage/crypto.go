package storage

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// MasterKeySize is the length of the master key in bytes (AES-256).
const MasterKeySize = 32

// MasterKeyFile is the name of the key file created in the data folder when GATEWAY_MASTER_KEY is not set.
const MasterKeyFile = "master.key"

// ParseMasterKey decodes a master key given as 64 hex digits or as standard or URL-safe base64 of 32 bytes.
func ParseMasterKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil && len(b) == MasterKeySize {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == MasterKeySize {
			return b, nil
		}
	}
	return nil, fmt.Errorf("master key must be %d bytes written as 64 hex digits or base64 (make one with: openssl rand -hex 32)", MasterKeySize)
}

// LoadOrCreateMasterKeyFile reads the master key from dir/master.key, creating the file with a new random key
// and mode 0600 when it does not exist. created tells whether it was made now.
func LoadOrCreateMasterKeyFile(dir string) (key []byte, created bool, err error) {
	path := filepath.Join(dir, MasterKeyFile)
	data, err := os.ReadFile(path)
	if err == nil {
		key, err := ParseMasterKey(string(data))
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", path, err)
		}
		return key, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, false, fmt.Errorf("read master key: %w", err)
	}
	key = make([]byte, MasterKeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, false, fmt.Errorf("generate master key: %w", err)
	}
	if err := writeFileAtomic(path, []byte(hex.EncodeToString(key)+"\n"), 0o600); err != nil {
		return nil, false, fmt.Errorf("write master key: %w", err)
	}
	return key, true, nil
}

// writeFileAtomic writes data to a temporary file, syncs it, renames it over path and syncs the folder, so that
// a crash leaves either no file or the whole file.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// keyring holds the keys derived from the master key: one to seal secrets, one to hash gateway API keys. Deriving
// them apart keeps a leak of one use from helping the other.
type keyring struct {
	aead     cipher.AEAD
	hashPool sync.Pool // of *keyHasher
}

// keyHasher is an HMAC-SHA256 keyed with the API key pepper and a scratch buffer, pooled so that hashing a key
// on every request allocates nothing.
type keyHasher struct {
	mac hash.Hash
	buf []byte
}

func newKeyring(master []byte) (*keyring, error) {
	if len(master) != MasterKeySize {
		return nil, fmt.Errorf("master key is %d bytes, want %d", len(master), MasterKeySize)
	}
	block, err := aes.NewCipher(derive(master, "gateway/v1/secrets"))
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	pepper := derive(master, "gateway/v1/api-key-hash")
	k := &keyring{aead: aead}
	k.hashPool.New = func() any { return &keyHasher{mac: hmac.New(sha256.New, pepper), buf: make([]byte, 0, 128)} }
	return k, nil
}

func derive(master []byte, label string) []byte {
	m := hmac.New(sha256.New, master)
	m.Write([]byte(label))
	return m.Sum(nil)
}

// seal encrypts plaintext with AES-256-GCM; aad binds the ciphertext to its record's key so that a sealed value
// copied under another key does not open. The result is nonce || ciphertext.
func (k *keyring) seal(plaintext, aad []byte) []byte {
	nonce := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(plaintext)+k.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		panic("storage: crypto/rand failed: " + err.Error()) // crypto/rand never fails on supported systems
	}
	return k.aead.Seal(nonce, nonce, plaintext, aad)
}

// open reverses seal.
func (k *keyring) open(sealed, aad []byte) ([]byte, error) {
	n := k.aead.NonceSize()
	if len(sealed) < n+k.aead.Overhead() {
		return nil, errors.New("sealed value too short")
	}
	return k.aead.Open(nil, sealed[:n], sealed[n:], aad)
}

// apiKeyHash is the keyed hash under which an API key is stored.
type apiKeyHash [sha256.Size]byte

func (h apiKeyHash) hex() string { return hex.EncodeToString(h[:]) }

// hashAPIKey computes the keyed hash of a gateway API key without allocating.
func (k *keyring) hashAPIKey(secret string) apiKeyHash {
	h := k.hashPool.Get().(*keyHasher)
	h.mac.Reset()
	h.buf = append(h.buf[:0], secret...)
	h.mac.Write(h.buf)
	h.buf = h.mac.Sum(h.buf[:0]) // into the pooled buffer: summing into out would move out to the heap
	var out apiKeyHash
	copy(out[:], h.buf)
	k.hashPool.Put(h)
	return out
}
