package azure

import (
	"github.com/llmgw/gateway/runtime/jsonfield"
	"github.com/llmgw/gateway/runtime/providers"
)

// Descriptor is what the gateway knows of azure-openai: the fields and headers resolve reads (see doc.go),
// every one of which picks the resource, deployment, endpoint or API version, so all address the target.
var Descriptor = providers.Descriptor{
	ID:      ID,
	Aliases: []string{"cloudx"},
	Fields: []providers.Field{
		{Name: "resource_name", Kind: providers.String, Address: true},
		{Name: "deployment_id", Kind: providers.String, Address: true},
		{Name: "api_version", Kind: providers.String, Address: true},
		{Name: "deployments", Kind: providers.Array, Address: true, Check: checkDeployments},
		{Name: "cloudx_region", Kind: providers.String, Address: true},
		{Name: "cloudx_deployment_name", Kind: providers.String, Address: true},
		{Name: "cloudx_endpoint_name", Kind: providers.String, Address: true},
		{Name: "cloudx_api_version", Kind: providers.String, Address: true},
		{Name: "cloudx_deployment_type", Kind: providers.String, Address: true, Check: checkDeploymentType},
	},
	Headers: []providers.Header{
		{Name: headerResource, Address: true},
		{Name: headerDeployment, Address: true},
		{Name: headerAPIVersion},
		{Name: headerModelName},
	},
	Credentials: []string{"cloudx_deployment_name", "cloudx_endpoint_name"},
	KeySets: [][]string{
		{"cloudx_deployment_name", "cloudx_deployment_type", "cloudx_region", "cloudx_api_version"},
		{"cloudx_endpoint_name", "cloudx_deployment_type"},
	},
	New: func() providers.Adapter { return Adapter{} },
}

func checkDeploymentType(o *jsonfield.Object, name string) error {
	s, _, err := o.Str(name, false, true)
	if err != nil {
		return err
	}
	if s != "serverless" && s != "managed" {
		return jsonfield.Invalid(o.At(name), "must be \"serverless\" or \"managed\", not %q", s)
	}
	return nil
}

// checkDeployments checks the deployments list that resolve picks from by alias: aliases unique, at most one
// default.
func checkDeployments(o *jsonfield.Object, name string) error {
	list, err := o.Array(name, false)
	if err != nil {
		return err
	}
	defaultAt := ""
	aliases := map[string]string{}
	for i, raw := range list {
		d, err := jsonfield.NewObject(raw, jsonfield.Index(o.At(name), i))
		if err != nil {
			return err
		}
		if err := d.OnlyKeys("deployment_id", "alias", "api_version", "is_default"); err != nil {
			return err
		}
		if _, _, err := d.Str("deployment_id", true, true); err != nil {
			return err
		}
		alias, _, err := d.Str("alias", true, true)
		if err != nil {
			return err
		}
		if prev, dup := aliases[alias]; dup {
			return jsonfield.Invalid(d.At("alias"), "alias %q is used twice (also at %s); aliases must be unique", alias, prev)
		}
		aliases[alias] = d.At("alias")
		if _, _, err := d.Str("api_version", true, true); err != nil {
			return err
		}
		isDefault, err := d.Boolean("is_default")
		if err != nil {
			return err
		}
		if isDefault != nil && *isDefault {
			if defaultAt != "" {
				return jsonfield.Invalid(d.At("is_default"), "only one deployment may be the default (%s is already)", defaultAt)
			}
			defaultAt = d.Path
		}
	}
	return nil
}
