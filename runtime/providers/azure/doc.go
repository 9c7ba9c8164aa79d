// Package azure is the adapter for provider "azure-openai" (SPEC.md's alias cloudx): Azure OpenAI resources and
// Azure AI Foundry deployments. Both speak OpenAI's wire format, so request bodies, answers, streams and error
// bodies (Azure's are OpenAI-shaped: {"error": {"code", "message", ...}}) pass through unchanged and the package
// implements only providers.Adapter. It owns the URL, the authentication and the choice of deployment. It
// imports only the standard library, runtime/providers and runtime/gwerr.
//
// # Addresses
//
// Fields are the config's (or the stored provider's) provider fields; headers are the caller's. Wherever a field
// and a header say the same thing, the field wins: the config is written by whoever owns the target, and the
// caller's x-gateway-cloudx-* headers fill in only what it leaves open.
//
// Azure OpenAI resource (no cloudx_deployment_type / cloudx_deployment_name / cloudx_endpoint_name):
//
//	POST {base}/openai/deployments/{deployment}/chat/completions?api-version={version}   (also /completions, /embeddings,
//	     and the media endpoints Azure serves, media.go: /images/generations, /audio/speech, /audio/transcriptions,
//	     /audio/translations; an upload's model field stands for the body's "model" and the upload goes unchanged)
//	base       custom_host when given, else https://{resource}.openai.azure.com
//	resource   resource_name, else header x-gateway-cloudx-resource-name (one DNS label)
//	deployment 1. the deployments item whose alias equals the body's "model" (or, when the body has none,
//	              header x-gateway-cloudx-model-name);
//	           2. deployment_id;
//	           3. the deployments item with is_default, else the first;
//	           4. header x-gateway-cloudx-deployment-id.
//	version    the chosen deployments item's api_version, else api_version, else header
//	           x-gateway-cloudx-api-version, else DefaultAPIVersion (2024-10-21, the latest GA data-plane
//	           inference version in learn.microsoft.com/azure/ai-services/openai/reference).
//
// With version "v1" the call goes to Azure OpenAI's v1 API instead, POST {base}/openai/v1/chat/completions with no
// api-version (learn.microsoft.com/azure/ai-foundry/openai/api-version-lifecycle): there the body's "model" names
// the deployment, so a deployment chosen as above replaces it; with none, the caller's model goes as it is.
//
// Azure AI model inference endpoint: a custom_host ending in /models
// (https://{resource}.services.ai.azure.com/models, learn.microsoft.com/azure/ai-foundry/model-inference/concepts/endpoints)
// gets POST {custom_host}/chat/completions?api-version={version}, version as above but with cloudx_api_version
// first and DefaultInferenceAPIVersion (2024-05-01-preview) last. It routes on the body's "model"; a deployment
// chosen as above replaces it.
//
// Azure AI Foundry (any of cloudx_deployment_type, cloudx_deployment_name, cloudx_endpoint_name):
//
//	serverless POST https://{cloudx_deployment_name}.{cloudx_region}.models.ai.azure.com/chat/completions
//	managed    POST https://{cloudx_endpoint_name}.{cloudx_region}.inference.ml.azure.com/chat/completions
//	           with azureml-model-deployment: {cloudx_deployment_name} when given
//	query      ?api-version={cloudx_api_version, else api_version, else header x-gateway-cloudx-api-version}, none
//	           when no version is given
//
// cloudx_deployment_type defaults to managed when cloudx_endpoint_name is given, else serverless; a
// custom_host replaces the scheme and host (then name and region are not needed). The serverless host is the one
// the Azure AI Inference SDK samples document (https://<deployment-name>.<region>.models.ai.azure.com); the
// managed one is Azure Machine Learning's scoring host (endpoint-name.region.inference.ml.azure.com), where models
// served with the Azure AI model inference API answer /chat/completions. Both take the Azure AI model inference
// API, so these calls (and those to /models) carry extra-parameters: drop, which makes the service drop request
// parameters a model doesn't support instead of answering 422, unless the caller forwards its own
// extra-parameters header.
//
// Missing addressing is a 400 *gwerr.Error whose Param names what to set: x-gateway-cloudx-resource-name when
// there is no resource, custom host or Foundry field; x-gateway-cloudx-deployment-id when a dated Azure OpenAI call
// has no deployment; cloudx_deployment_name, cloudx_endpoint_name or cloudx_region for a Foundry target. Names that
// become part of a host must be one DNS label, so no field or header can move the call off Azure's domains.
//
// # Authentication
//
// Target.APIKey (the config's or stored api_key, else the caller's Bearer token) goes as api-key to Azure OpenAI
// and the model inference endpoint, and as Authorization: Bearer when it is a Microsoft Entra ID access token (a
// JWT: three base64url parts separated by dots). Foundry serverless APIs and managed online endpoints take
// Authorization: Bearer for keys and tokens alike. Only that one credential header goes upstream. Headers named by
// forward_headers / x-gateway-forward-headers (Target.Forward) are sent unchanged.
//
// Its descriptor (fields.go) declares every field and x-gateway-cloudx-* header above, the checks of deployments
// and cloudx_deployment_type, the alias cloudx, the Foundry key sets and the fields that stand in for api_key;
// the checks use runtime/jsonfield.
package azure
