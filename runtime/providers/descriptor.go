package providers

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/llmgw/gateway/runtime/jsonfield"
)

// FieldKind is the JSON type of a provider field's value.
type FieldKind uint8

// The kinds of provider fields.
const (
	// String is a non-empty string without control characters: adapters put it in a header or a URL.
	String FieldKind = iota + 1
	Object
	Array
)

// String names the kind as jsonfield.Kind names JSON types, so that messages read one way.
func (k FieldKind) String() string {
	switch k {
	case String:
		return "string"
	case Object:
		return "object"
	case Array:
		return "array"
	}
	return "unknown"
}

// Field is a provider-specific field an adapter reads from Target.Fields: a key of a config object and of a
// stored provider.
type Field struct {
	Name string
	Kind FieldKind
	// Address marks a field that tells targets apart (a resource, a region, a project, an account): it joins
	// the target's identity, so that two targets that differ in it keep two circuit breakers.
	Address bool
	// Check, when set, validates a present value beyond its kind (an enumeration, the items of an array). o
	// holds the value under Name; errors are jsonfield.Invalid errors naming the path of what is wrong.
	Check func(o *jsonfield.Object, name string) error
}

// Validate checks the field's value in o, which holds it (null counts as absent).
func (f *Field) Validate(o *jsonfield.Object) error {
	switch f.Kind {
	case String:
		v, _, err := o.Str(f.Name, false, true)
		if err != nil {
			return err
		}
		if jsonfield.HasControl(v) {
			return jsonfield.Invalid(o.At(f.Name), "must not contain control characters such as line breaks (it is sent in an HTTP header or URL)")
		}
	case Object:
		if _, err := o.RawObject(f.Name, false); err != nil {
			return err
		}
	case Array:
		if _, err := o.Array(f.Name, false); err != nil {
			return err
		}
	}
	if f.Check != nil {
		return f.Check(o, f.Name)
	}
	return nil
}

// Header is one of the caller's request headers an adapter reads through Target.Header (lower case).
type Header struct {
	Name string
	// Address marks a header that tells targets apart, as Field.Address does.
	Address bool
}

// Descriptor is everything the gateway knows of a provider identifier, declared by the adapter that serves
// it. Config validation, the bootstrap file, the x-gateway-provider header and circuit-breaker identity read
// it from the registry; nothing outside the adapter lists a provider's fields.
type Descriptor struct {
	ID      string   // canonical identifier, the ecosystem's name: "azure-openai"
	Aliases []string // other names that stand for ID: SPEC.md's family names ("cloudx")
	// BaseURL is the default base URL, before the endpoint paths the provider documents; "" when the adapter
	// builds its URL per request (Azure, Bedrock, Vertex). custom_host replaces it.
	BaseURL string
	Fields  []Field  // provider-specific fields, in the order they are checked
	Headers []Header // caller's headers the adapter reads
	// Credentials are the fields that stand in for api_key on a stored provider: one of them is enough there,
	// since the rest may come with the request.
	Credentials []string
	// KeySets are the sets of fields that, with "provider", make a config target complete without api_key or
	// custom_host (SPEC.md's cloud key sets).
	KeySets [][]string
	// Keyless providers run locally and need no credentials at all (a stored provider may omit api_key).
	Keyless bool
	// New makes the adapter; Register calls it once.
	New func() Adapter

	adapter Adapter
}

// Adapter is the adapter New made at registration.
func (d *Descriptor) Adapter() Adapter { return d.adapter }

// Identify is the one formula of a target's identity, computed in one pass: address sums the fields and headers
// the descriptor marks as addressing t, in declaration order (adapters that build their own URL, Azure, Bedrock
// and Vertex, address the target with them); identity is "<identifier>|<base URL>|" and the same sum carried on
// over t's API key. The circuit breaker keys on identity; the response cache, which must not split answers by
// credential, on address. A caller that needs both computes them once per target.
func (d *Descriptor) Identify(t *Target) (identity, address string) {
	h := sha256.New()
	// Each value ends with a byte no JSON text or header value holds, so that "ab"+"c" and "a"+"bc" differ. The
	// first 0 stands where an API key's terminator stood before the key moved to the end: it keeps the address,
	// and the cache keys made with it, as they were.
	h.Write([]byte{0})
	for i := range d.Fields {
		if f := &d.Fields[i]; f.Address {
			h.Write(bytes.TrimSpace(t.Fields[f.Name]))
			h.Write([]byte{0})
		}
	}
	for _, hd := range d.Headers {
		if hd.Address && t.Header != nil {
			h.Write([]byte(t.Header(hd.Name)))
			h.Write([]byte{0})
		}
	}
	var sum [sha256.Size]byte
	var hexSum [16]byte
	hex.Encode(hexSum[:], h.Sum(sum[:0])[:8])
	address = string(hexSum[:])
	h.Write([]byte(t.APIKey))
	hex.Encode(hexSum[:], h.Sum(sum[:0])[:8])
	return d.ID + "|" + t.BaseURL + "|" + string(hexSum[:]), address
}

// validate reports what makes d unusable; Register panics with it.
func (d *Descriptor) validate() error {
	if d.ID == "" || d.New == nil {
		return fmt.Errorf("descriptor %q needs an ID and a constructor", d.ID)
	}
	seen := map[string]bool{}
	for _, f := range d.Fields {
		if f.Name == "" || f.Kind < String || f.Kind > Array || seen[f.Name] {
			return fmt.Errorf("descriptor %q: field %q is empty, of no kind, or declared twice", d.ID, f.Name)
		}
		seen[f.Name] = true
	}
	for _, c := range d.Credentials {
		if !seen[c] {
			return fmt.Errorf("descriptor %q: credential %q is not one of its fields", d.ID, c)
		}
	}
	for _, set := range d.KeySets {
		for _, k := range set {
			if !seen[k] {
				return fmt.Errorf("descriptor %q: key set field %q is not one of its fields", d.ID, k)
			}
		}
	}
	return nil
}

// StringField returns a string provider field, or "".
func (t *Target) StringField(name string) string {
	raw, ok := t.Fields[name]
	if !ok {
		return ""
	}
	// Most values are plain quoted text: those need no decoder (a third of a virtual key's resolution).
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' && plainJSONText(raw[1:n-1]) {
		return string(raw[1 : n-1])
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// plainJSONText reports text that reads as itself inside a JSON string: no escapes, quotes, control bytes or
// bytes beyond ASCII (whose validity json.Unmarshal would check).
func plainJSONText(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}
