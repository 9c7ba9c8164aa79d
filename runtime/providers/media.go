package providers

// MediaEndpoints are OpenAI's inference endpoints beyond chat, completions, embeddings and responses: images,
// audio, moderations and rerank. Providers serve few of them, so an adapter serves one only when it says so
// (MediaServer); the gateway answers a call of any other with a 400 that names the endpoint and the provider.
var MediaEndpoints = []Endpoint{ImagesGenerations, ImagesEdits, AudioSpeech, AudioTranscriptions, AudioTranslations,
	Moderations, Rerank}

// IsMedia reports whether e is one of MediaEndpoints.
func (e Endpoint) IsMedia() bool { return e >= ImagesGenerations && e <= Rerank }

// Multipart reports whether the endpoint's request is a multipart/form-data upload (an image, an audio file)
// rather than a JSON body: it goes upstream as the caller sent it, boundary and all (Call.ContentType).
func (e Endpoint) Multipart() bool {
	return e == ImagesEdits || e == AudioTranscriptions || e == AudioTranslations
}

// RawAnswer reports whether the endpoint's 2xx answer is bytes to pass through as they arrive (audio), with the
// provider's content type, rather than a JSON body or an event stream.
func (e Endpoint) RawAnswer() bool { return e == AudioSpeech }

// AnyAnswer reports whether the endpoint's 2xx answer may be something other than JSON: audio, or a transcript
// as plain text, SRT or WebVTT (response_format text, srt, vtt). Such answers pass through with their content type.
func (e Endpoint) AnyAnswer() bool {
	return e == AudioSpeech || e == AudioTranscriptions || e == AudioTranslations
}

// MediaServer is implemented by adapters whose provider serves some of MediaEndpoints in OpenAI's shape.
type MediaServer interface {
	ServesMedia(ep Endpoint) bool
}

// Serves reports whether an adapter serves the endpoint: every adapter serves the endpoints that are not
// media (chat, completions, embeddings, responses, messages: translated where needed); a media endpoint only
// when the adapter implements MediaServer and says so.
func Serves(a Adapter, ep Endpoint) bool {
	if !ep.IsMedia() {
		return true
	}
	m, ok := a.(MediaServer)
	return ok && m.ServesMedia(ep)
}

// EndpointSet is a set of endpoints, for adapters to keep the media endpoints their provider serves.
type EndpointSet uint32

// NewEndpointSet is the set of the given endpoints.
func NewEndpointSet(eps ...Endpoint) EndpointSet {
	var s EndpointSet
	for _, ep := range eps {
		s |= 1 << ep
	}
	return s
}

// Has reports whether ep is in the set.
func (s EndpointSet) Has(ep Endpoint) bool { return ep < 32 && s&(1<<ep) != 0 }
