package schema

import "encoding/json"

// Model is one entry of OpenAI's model list (GET /v1/models).
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"` // always "model"
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// ModelList is OpenAI's answer of GET /v1/models.
type ModelList struct {
	Object string  `json:"object"` // always "list"
	Data   []Model `json:"data"`
}

// EncodeModels encodes models as OpenAI's model list, filling in each entry's object; an empty list is
// {"object":"list","data":[]}.
func EncodeModels(models []Model) ([]byte, error) {
	if models == nil {
		models = []Model{}
	}
	for i := range models {
		models[i].Object = "model"
	}
	return json.Marshal(ModelList{Object: "list", Data: models})
}
