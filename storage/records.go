package storage

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"

	"github.com/google/uuid"
)

// Workspace isolates everything else: keys, providers, configs, prompts, guardrails, policies and plugins all
// belong to one workspace, and a key of one workspace never reaches another's.
type Workspace struct {
	ID             string `json:"id"`   // UUID
	Slug           string `json:"slug"` // unique; a ValidID
	OrganisationID string `json:"organisation_id"`
	Name           string `json:"name,omitempty"`
	// SemanticCache configures the semantic cache of the workspace's requests; nil means the defaults.
	SemanticCache *SemanticCacheSettings `json:"semantic_cache,omitempty"`
	Stamps
}

// SemanticCacheSettings choose how a workspace's semantic cache embeds requests and when two requests are
// close enough to share an answer.
type SemanticCacheSettings struct {
	// EmbeddingProvider is a stored provider ("@slug") that computes the embeddings. Empty: the provider of the
	// request's own target.
	EmbeddingProvider string `json:"embedding_provider,omitempty"`
	// EmbeddingModel is the embeddings model. Empty: the provider's usual embeddings model.
	EmbeddingModel string `json:"embedding_model,omitempty"`
	// Threshold is the least cosine similarity of a semantic hit, in (0, 1]. Zero: 0.95.
	Threshold float64 `json:"threshold,omitempty"`
}

// APIKey is a gateway API key as stored: never the secret, only what it grants. Values returned by the store
// are shared and must not be modified.
type APIKey struct {
	ID          string `json:"id"` // UUID, public; names the key in lists and deletes
	WorkspaceID string `json:"workspace_id"`
	Name        string `json:"name,omitempty"`
	Admin       bool   `json:"admin"`
	// OrganisationAdmin is the right to manage workspaces (and to make keys in any of them).
	OrganisationAdmin bool `json:"organisation_admin"`
	// Hint is the secret's last four characters, so that people can tell their keys apart in a list.
	Hint string `json:"hint"`
	Stamps
}

// Provider is a stored provider (a virtual key), reached as x-gateway-virtual-key: <slug>, config
// "virtual_key": "<slug>" or provider "@<slug>". Fields holds the config fields it stands for ("api_key",
// "custom_host", "resource_name", "cloudz_region", ...), secrets included in clear: the store seals the
// SecretFields at rest and opens them on read.
type Provider struct {
	WorkspaceID string                     `json:"workspace_id"`
	Slug        string                     `json:"slug"`
	Provider    string                     `json:"provider"` // provider identifier, e.g. "openai"
	Name        string                     `json:"name,omitempty"`
	Fields      map[string]json.RawMessage `json:"fields,omitempty"`
	Stamps
}

// SecretFields are the provider fields encrypted at rest. custom_host is one because its userinfo may hold an
// upstream's password (http://user:password@host/v1); records an older gateway wrote with it in clear are
// sealed when the store opens.
var SecretFields = map[string]bool{
	"api_key":                     true,
	"custom_host":                 true,
	"cloudz_access_key_id":        true,
	"cloudz_secret_access_key":    true,
	"cloudz_session_token":        true,
	"cloudy_service_account_json": true,
}

// Config is a saved routing config, named in x-gateway-config by its ID.
type Config struct {
	ID          string          `json:"id"`
	WorkspaceID string          `json:"workspace_id"`
	Config      json.RawMessage `json:"config"`
	Stamps
}

// Prompt is a prompt template with its numbered versions (from 1, in the order they were created).
type Prompt struct {
	ID          string          `json:"id"`
	WorkspaceID string          `json:"workspace_id"`
	Name        string          `json:"name,omitempty"`
	Versions    []PromptVersion `json:"versions"`
	Stamps
}

// PromptVersion is one version of a prompt. At most one version of a prompt is published.
type PromptVersion struct {
	Version   int             `json:"version"`
	Published bool            `json:"published"`
	Template  json.RawMessage `json:"template"`
}

// Guardrail is a saved guardrail object (SPEC.md's shape), named by its ID in config guardrail lists.
type Guardrail struct {
	ID          string          `json:"id"`
	WorkspaceID string          `json:"workspace_id"`
	Guardrail   json.RawMessage `json:"guardrail"` // the object without id and workspace
	Stamps
}

// RateLimitPolicy is a rate-limit policy of a workspace.
type RateLimitPolicy struct {
	ID             string        `json:"id"` // UUID
	WorkspaceID    string        `json:"workspace_id"`
	OrganisationID string        `json:"organisation_id"`
	Type           string        `json:"type"`   // requests | tokens
	Unit           string        `json:"unit"`   // rpm | rph | rpd
	Value          float64       `json:"value"`  // limit per unit
	Status         string        `json:"status"` // active | archived
	Name           *string       `json:"name"`
	Conditions     []PolicyMatch `json:"conditions"`
	GroupBy        []PolicyGroup `json:"group_by"`
	Stamps
}

// PolicyMatch selects the requests a policy applies to.
type PolicyMatch struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// PolicyGroup splits a policy's counters by a request attribute.
type PolicyGroup struct {
	Key string `json:"key"`
}

// Plugin describes a stored wasm module; its bytes are kept apart (PluginStore.Wasm) so that lists stay cheap.
type Plugin struct {
	ID          string `json:"id"`
	WorkspaceID string `json:"workspace_id"`
	SHA256      string `json:"sha256"` // hex digest of the wasm bytes
	Size        int    `json:"size"`
	// LoadError, when set, is why these bytes failed to load at a start; starts skip such a plugin rather than
	// compile it again. Put clears it.
	LoadError string `json:"load_error,omitempty"`
	Stamps
}

// NewUUID returns a random (version 4) UUID.
func NewUUID() string { return uuid.NewString() }

// APIKeyPrefix starts every generated gateway API key, so that leaked keys are easy to recognise and scan for.
const APIKeyPrefix = "gw-"

// NewAPIKeySecret returns a new random gateway API key: the prefix and 32 random bytes in URL-safe base64.
func NewAPIKeySecret() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("storage: crypto/rand failed: " + err.Error())
	}
	return APIKeyPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}
