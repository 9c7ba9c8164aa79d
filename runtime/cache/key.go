package cache

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/llmgw/gateway/internal/jsonstr"
)

// Target is the resolved provider of a request: the provider identifier (openai, anthropic, ...) and the base
// URL the call goes to (custom_host or the provider's default). Two targets that differ in either never share
// answers.
type Target struct {
	Provider string
	BaseURL  string
}

// Key is the exact-match key of a cached answer: a SHA-256 over the workspace, the target, the endpoint, the
// cache scope (namespace, or else metadata) and the canonical request body. See KeyOf.
type Key [sha256.Size]byte

// String returns the key in lowercase hex, as it appears in storage keys and logs.
func (k Key) String() string { return hex.EncodeToString(k[:]) }

// PartitionKey names a set of semantic-cache entries that may answer one another: see Partition.
type PartitionKey [16]byte

// String returns the partition in lowercase hex.
func (p PartitionKey) String() string { return hex.EncodeToString(p[:]) }

// Domain separators: a key and a partition never hash the same input, and a change of either format (a new
// version) starts a fresh cache rather than reading old entries wrongly.
const (
	keyDomain       = "llmgw cache key v1\x00"
	partitionDomain = "llmgw cache partition v1\x00"
)

var canonPool = sync.Pool{New: func() any { return &canon{out: make([]byte, 0, 4<<10)} }}

func getCanon() *canon {
	c := canonPool.Get().(*canon)
	c.out = c.out[:0]
	return c
}

// putCanon returns c to the pool unless a huge body made its buffer too big to keep.
func putCanon(c *canon) {
	if cap(c.out) > 1<<20 {
		return
	}
	canonPool.Put(c)
}

// KeyOf returns the exact-match cache key of a request. It covers:
//
//   - the workspace, the target (provider and base URL) and the endpoint ("chat/completions", ...);
//   - the body without "stream" and "stream_options", canonicalised (members sorted at every level, white
//     space removed, values as written), so a streamed and a non-streamed request share one answer and key
//     order or formatting never matter. The model is in the body;
//   - the namespace when it is not empty; otherwise the metadata (every key=value pair, in key order). A
//     namespace replaces the metadata: callers that vary metadata per request (trace tags, user IDs) set one
//     to share answers.
//
// Every field is length-prefixed, so no two inputs hash the same bytes. KeyOf fails when the body is not a JSON
// object (or nests deeper than 256 levels); such a request is not cached. It is safe for concurrent use and
// allocates nothing in the steady state.
func KeyOf(workspaceID string, t Target, endpoint string, body []byte, namespace string, metadata map[string]string) (Key, error) {
	c := getCanon()
	defer putCanon(c)
	c.header(keyDomain, workspaceID, t, endpoint, namespace, metadata)
	if err := c.topObject(body, skipStream); err != nil {
		return Key{}, err
	}
	return sha256.Sum256(c.out), nil
}

// Partition returns the semantic-cache partition of a chat request and its query text: the text of the last
// message whose role is "user" (its string content, or the "text" parts of an array content joined with
// newlines). ok is false, and the request is not semantically cached, when there is no such message, its text
// is empty, its content has parts other than text (an image must not match a lookalike text), or the body is
// not a JSON object.
//
// The partition covers what KeyOf covers, except the query text itself: the workspace, target, endpoint,
// scope, every body member other than "messages" (the model, temperature, tools, ...), and every message but
// the content of the query message. A semantic hit therefore only ever replaces the wording of the last user
// turn: a different system prompt, history or tool result is a different partition, never a lookalike.
func Partition(workspaceID string, t Target, endpoint string, body []byte, namespace string, metadata map[string]string) (partition PartitionKey, query string, ok bool) {
	c := getCanon()
	defer putCanon(c)
	c.header(partitionDomain, workspaceID, t, endpoint, namespace, metadata)
	if err := c.topObject(body, skipStreamAndMessages); err != nil {
		return PartitionKey{}, "", false
	}
	top := jsonstr.SkipSpace(body, 0)
	m0, m1 := -1, -1
	if _, err := eachMember(body, top, 0, func(k0, k1, v0, v1 int) error {
		if string(body[k0:k1]) == `"messages"` {
			m0, m1 = v0, v1 // the last one wins, as in encoding/json
		}
		return nil
	}); err != nil || m0 < 0 || body[m0] != '[' {
		return PartitionKey{}, "", false
	}
	msgs := body[:m1]
	user := -1 // start of the last user message
	eachElement(msgs, m0, 1, func(v0, v1 int) error {
		if msgs[v0] == '{' && memberValue(msgs, v0, `"role"`) == `"user"` {
			user = v0
		}
		return nil
	})
	if user < 0 {
		return PartitionKey{}, "", false
	}
	query, ok = queryText(memberValue(msgs, user, `"content"`))
	if !ok {
		return PartitionKey{}, "", false
	}
	c.out = append(c.out, '[')
	first := true
	eachElement(msgs, m0, 1, func(v0, v1 int) error {
		if !first {
			c.out = append(c.out, ',')
		}
		first = false
		if v0 == user {
			_, err := c.object(msgs, v0, 2, skipContent)
			return err
		}
		_, err := c.value(msgs, v0, 2)
		return err
	})
	c.out = append(c.out, ']')
	sum := sha256.Sum256(c.out)
	copy(partition[:], sum[:])
	return partition, query, true
}

// header writes the length-prefixed fields that come before the body.
func (c *canon) header(domain, workspaceID string, t Target, endpoint, namespace string, metadata map[string]string) {
	c.out = append(c.out, domain...)
	c.str(workspaceID)
	c.str(t.Provider)
	c.str(t.BaseURL)
	c.str(endpoint)
	if namespace != "" {
		c.out = append(c.out, 'n')
		c.str(namespace)
		return
	}
	c.out = append(c.out, 'm')
	c.out = binary.AppendUvarint(c.out, uint64(len(metadata)))
	c.keys = c.keys[:0]
	for k := range metadata {
		c.keys = append(c.keys, k)
	}
	slices.Sort(c.keys)
	for _, k := range c.keys {
		c.str(k)
		c.str(metadata[k])
	}
	clear(c.keys) // let the strings go
}

func (c *canon) str(s string) {
	c.out = append(binary.AppendUvarint(c.out, uint64(len(s))), s...)
}

func skipStream(k []byte) bool { return string(k) == `"stream"` || string(k) == `"stream_options"` }

func skipStreamAndMessages(k []byte) bool { return skipStream(k) || string(k) == `"messages"` }

func skipContent(k []byte) bool { return string(k) == `"content"` }

// memberValue returns the raw value of the last member named key (with quotes) of the valid object at b[i], or
// "" when there is none.
func memberValue(b []byte, i int, key string) string {
	var v string
	eachMember(b, i, 1, func(k0, k1, v0, v1 int) error {
		if string(b[k0:k1]) == key {
			v = string(b[v0:v1])
		}
		return nil
	})
	return v
}

// queryText is the text of a user message's content: a string, or an array of text parts.
func queryText(content string) (string, bool) {
	var text string
	switch {
	case strings.HasPrefix(content, `"`):
		if json.Unmarshal([]byte(content), &text) != nil {
			return "", false
		}
	case strings.HasPrefix(content, `[`):
		var parts []struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		}
		if json.Unmarshal([]byte(content), &parts) != nil {
			return "", false
		}
		var sb strings.Builder
		for i, p := range parts {
			if p.Type != "text" || p.Text == nil {
				return "", false
			}
			if i > 0 {
				sb.WriteByte('\n')
			}
			sb.WriteString(*p.Text)
		}
		text = sb.String()
	default:
		return "", false
	}
	if strings.TrimSpace(text) == "" {
		return "", false
	}
	return text, true
}
