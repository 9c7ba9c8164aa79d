package azure

// deployment is one item of the config's "deployments" field (SPEC.md: deployment_id, alias and api_version
// required, is_default optional). The gateway's config validator has already checked the shape when it came
// from a config; a stored provider's copy is decoded leniently and bad items are skipped.
type deployment struct {
	DeploymentID string `json:"deployment_id"`
	Alias        string `json:"alias"`
	APIVersion   string `json:"api_version"`
	IsDefault    bool   `json:"is_default"`
}

// bodyModel is the part of an OpenAI request the adapter reads: the model, which names a deployment alias (and,
// on the v1 and model-inference routes, the deployment itself).
type bodyModel struct {
	Model string `json:"model"`
}
