package storage

import (
	"fmt"
)

// Key layout. Every key is ASCII: a table name, then the record's components, joined by '/'. Components are
// validated IDs (ValidID), UUIDs or lowercase hex, none of which can hold a '/', so a key never reads two ways and
// a table's records sort together, each workspace's records under one prefix.
//
//	meta/initialized                   time of the first start (RFC 3339); absent on an empty store
//	meta/keycheck                      a constant sealed with the master key: proves the key opens this store
//	ws/<workspace-id>                  Workspace
//	wsslug/<slug>                      workspace ID, the slug index
//	apikey/<hmac-hex>                  APIKey, by the keyed hash of the secret (the secret itself is never stored)
//	apikeyid/<workspace-id>/<key-id>   hmac-hex, to list and delete a workspace's keys by ID
//	provider/<workspace-id>/<slug>     Provider; its secrets sealed with AES-GCM
//	config/<workspace-id>/<id>         Config
//	prompt/<workspace-id>/<id>         Prompt with its versions
//	guardrail/<workspace-id>/<id>      Guardrail
//	policy/<workspace-id>/<id>         RateLimitPolicy
//	plugin/<workspace-id>/<id>         Plugin (metadata)
//	pluginwasm/<workspace-id>/<id>     the plugin's wasm bytes
//	mcpserver/<workspace-id>/<id>      MCPServer; its URL and headers sealed with AES-GCM
//	pluginkv/<workspace-id>/<key>      PluginKVEntry, in clear; <key> is printable ASCII without spaces or '/'
//	                                   (ValidPluginKVKey), so it cannot read two ways either
//	pluginstage/<workspace-id>/<id>    an upload's module while it is checked (shared stores only): the other
//	                                   replicas compile it meanwhile
//	counter/<workspace-id>/<policy-id>/<hex>           CounterRecord of a rate-limit policy; <hex> is the first 16
//	                                                   bytes of sha256(group), the group kept in the record
//	cache/<workspace-id>/<key-hex>                     CachedAnswer: the 32-byte exact-match key of runtime/cache
//	semcache/<workspace-id>/<partition-hex>/<key-hex>  CachedVector: a semantic-cache embedding, by its 16-byte
//	                                                   partition and the exact key of the answer it points at
//	file/<workspace-id>/<file-id>                      File: an uploaded file's or batch output's metadata, written
//	                                                   last, synced: the file exists once it is there
//	filechunk/<workspace-id>/<file-id>/<seq-hex8>      a 256 KiB chunk of its content: a codec byte (raw, zstd), then data
//	filepending/<workspace-id>/<file-id>               empty: the file is being written; at start SweepPending drops
//	                                                   the chunks of one a crash cut short
//	ftfile/<workspace-id>/<slug>/g/<gateway-file-id>/<purpose>  the provider's ID of a gateway file mirrored to
//	                                                   the stored provider <slug> for that purpose (FineTuningStore)
//	ftfile/<workspace-id>/<slug>/p/<provider-file-id>  the gateway file that mirrors the provider's file; an ID
//	                                                   that is not a ValidID stands as "sha256:<hex>"
//	ftjob/<workspace-id>/<slug>/<job-id>               FineTuningJob made through the stored provider <slug>
//	batch/<workspace-id>/<batch-id>                    Batch; its request (the caller's headers) sealed with AES-GCM
//	batchopen/<workspace-id>/<batch-id>                empty: the batch is not final yet (resumed at start)
//	batchline/<workspace-id>/<batch-id>/<line-hex8>    a line's result: a LineKind byte, then its output or
//	                                                   error file line (or a refused line's BatchError)
//	batchcid/<workspace-id>/<batch-id>/<hex32>         during validation: the first line of a custom_id, by the
//	                                                   first 16 bytes of sha256(custom_id)
//	response/<workspace-id>/<response-id>              StoredResponse: a stored response object (responses API)
//	responseinput/<workspace-id>/<response-id>         its input items (JSON array), previous turns included;
//	                                                   written and deleted with the response, synced
//
// Values are JSON, except the cache's (binary, versioned, zstd-compressed: see CacheStore). Tables whose names share a beginning ("apikey", "apikeyid") cannot collide: the table name is
// always followed by '/'.
const (
	tableMeta       = "meta"
	tableWorkspace  = "ws"
	tableWSSlug     = "wsslug"
	tableAPIKey     = "apikey"
	tableAPIKeyID   = "apikeyid"
	tableProvider   = "provider"
	tableConfig     = "config"
	tablePrompt     = "prompt"
	tableGuardrail  = "guardrail"
	tablePolicy     = "policy"
	tablePlugin     = "plugin"
	tablePluginWasm = "pluginwasm"
	tableMCPServer  = "mcpserver"
	tablePluginKV   = "pluginkv"
)

var (
	keyInitialized = []byte("meta/initialized")
	keyKeyCheck    = []byte("meta/keycheck")
)

// key joins a table name and components with '/'. Callers pass validated components.
func key(table string, parts ...string) []byte {
	n := len(table)
	for _, p := range parts {
		n += 1 + len(p)
	}
	return appendKey(make([]byte, 0, n), table, parts...)
}

// appendKey appends the key of table and parts to b, for writers that reuse one buffer across records.
func appendKey(b []byte, table string, parts ...string) []byte {
	b = append(b, table...)
	for _, p := range parts {
		b = append(b, '/')
		b = append(b, p...)
	}
	return b
}

// prefix is the key prefix under which every record of table below parts sorts, ending in '/'.
func prefix(table string, parts ...string) []byte {
	return append(key(table, parts...), '/')
}

// prefixEnd is the smallest key greater than every key that starts with p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// ValidID reports whether s can name a stored thing: 1 to 128 characters, letters, digits and . _ : -, starting
// with a letter or digit. IDs, slugs and key components all obey it, which keeps the key layout unambiguous.
// It runs on every request (a cache read checks its workspace), so it is a loop over a table, not a regexp.
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > 128 || !idChars[s[0]] || s[0] == '.' || s[0] == '_' || s[0] == ':' || s[0] == '-' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !idChars[s[i]] {
			return false
		}
	}
	return true
}

// idChars are the bytes an ID may hold.
var idChars = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "._:-" {
		t[c] = true
	}
	return t
}()

// CheckID returns an error that names field when id is not a ValidID.
func CheckID(field, id string) error {
	if id == "" {
		return fmt.Errorf("%s is required", field)
	}
	if !ValidID(id) {
		return fmt.Errorf("%s %q is not a valid identifier (1-128 characters: letters, digits, '.', '_', ':' or '-', starting with a letter or digit)", field, id)
	}
	return nil
}
