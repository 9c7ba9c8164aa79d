package azure

import "github.com/llmgw/gateway/runtime/providers"

var _ providers.MediaServer = Adapter{}

// media are the media endpoints Azure OpenAI serves below a deployment
// ({base}/openai/deployments/{deployment}/images/generations?api-version=..., and /audio/speech,
// /audio/transcriptions, /audio/translations; learn.microsoft.com/azure/ai-services/openai/reference).
var media = providers.NewEndpointSet(providers.ImagesGenerations, providers.AudioSpeech, providers.AudioTranscriptions,
	providers.AudioTranslations)

// ServesMedia reports whether Azure OpenAI serves ep: image generation and audio.
func (Adapter) ServesMedia(ep providers.Endpoint) bool { return media.Has(ep) }

// callModel is the call's model, which may name a deployment's alias: the JSON body's "model", or a multipart
// upload's model field (which routes read into the request's body view).
func callModel(c *providers.Call) string {
	if c.ContentType != "" {
		if c.Request != nil {
			return c.Request.Model()
		}
		return ""
	}
	return modelOf(c.Body)
}
