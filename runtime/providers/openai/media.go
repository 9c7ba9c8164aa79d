package openai

import "github.com/llmgw/gateway/runtime/providers"

var _ providers.MediaServer = Adapter{}

// ServesMedia reports whether the provider serves ep (Compatible's Media).
func (a Adapter) ServesMedia(ep providers.Endpoint) bool { return a.media.Has(ep) }

// The media endpoints each OpenAI-compatible provider serves at its base URL, in OpenAI's shape, as its API
// reference documents them. openai serves them all. deepseek, perplexity-ai and lm-studio document none;
// fireworks-ai's image models are called at workflow URLs of their own and its audio API on another host, so
// neither is OpenAI's /images/generations or /audio/* below its base URL (a custom_host may point at its audio
// host).
var (
	// console.groq.com/docs: speech to text (whisper, /audio/transcriptions and /audio/translations) and text to
	// speech (/audio/speech).
	groqMedia = []providers.Endpoint{providers.AudioSpeech, providers.AudioTranscriptions, providers.AudioTranslations}
	// docs.mistral.ai: /v1/moderations and Voxtral's /v1/audio/transcriptions.
	mistralMedia = []providers.Endpoint{providers.Moderations, providers.AudioTranscriptions}
	// docs.together.ai API reference: images, audio (speech, transcriptions, translations) and rerank.
	togetherMedia = []providers.Endpoint{providers.ImagesGenerations, providers.AudioSpeech, providers.AudioTranscriptions,
		providers.AudioTranslations, providers.Rerank}
	// openrouter.ai/docs: the speech-to-text API, /api/v1/audio/transcriptions.
	openrouterMedia = []providers.Endpoint{providers.AudioTranscriptions}
	// docs.ollama.com/api/openai-compatibility: /v1/images/generations (experimental).
	ollamaMedia = []providers.Endpoint{providers.ImagesGenerations}
	// docs.vllm.ai "OpenAI-Compatible Server": transcriptions and translations for speech recognition models, and
	// the rerank API (/v1/rerank, Jina's and Cohere's shape).
	vllmMedia = []providers.Endpoint{providers.AudioTranscriptions, providers.AudioTranslations, providers.Rerank}
	// docs.x.ai: image generation, /v1/images/generations.
	xaiMedia = []providers.Endpoint{providers.ImagesGenerations}
)
