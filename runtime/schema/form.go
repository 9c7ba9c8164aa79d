package schema

// FormBody is the body view of a multipart/form-data upload (images/edits, audio/transcriptions and
// audio/translations) whose parts routes has read: fields are its text fields (model, prompt, language, ...;
// never a file's bytes). They stand in for a JSON body's members: Model is the model field, Params the fields as
// strings (for conditions and checks), Stream the stream field. Raw stays the upload as the caller sent it,
// which goes upstream unchanged. Chat and Responses decode Raw, which is no JSON: they fail, as they should for
// an upload.
func FormBody(raw []byte, fields map[string]string) Body {
	params := make(map[string]any, len(fields))
	for k, v := range fields {
		params[k] = v
	}
	return Body{raw: raw, scanned: true, model: fields["model"], stream: fields["stream"] == "true",
		params: params, decoded: true}
}
