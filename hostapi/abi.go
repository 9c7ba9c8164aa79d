package hostapi

// Version is the ABI's major version; the host module is named ModuleName.
const Version = 1

// The ABI version this package describes, major.minor: v1.1. A minor version only adds to the ones before it,
// so a host of v1.1 serves guests of v1.0 and v1.1; a new major version is a new ABI.
const (
	VersionMajor = 1
	VersionMinor = 1
)

// EncodeVersion returns what ExportVersion returns for major.minor: major<<16 | minor.
func EncodeVersion(major, minor int) int32 { return int32(major)<<16 | int32(minor&0xffff) }

// DecodeVersion splits what ExportVersion returned into major and minor.
func DecodeVersion(v int32) (major, minor int) { return int(uint32(v) >> 16), int(uint32(v) & 0xffff) }

// ModuleName is the import module of the host functions of ABI v1.
const ModuleName = "gateway_v1"

// Guest exports of ABI v1.
const (
	ExportMarker = "gateway_abi_v1"
	ExportAlloc  = "gateway_alloc"
	ExportCall   = "gateway_call"
)

// Guest exports added by ABI v1.1.
const (
	// ExportVersion is a function () -> i32 returning EncodeVersion(major, minor) of the ABI the guest speaks.
	// A guest without it speaks v1.0.
	ExportVersion = "gateway_abi_version"
	// ExportMemory is the name a v1.1 guest must export its linear memory under.
	ExportMemory = "memory"
	// ExportTransform is the optional gateway_transform(kind i32, ptr i32, len i32) -> i64 of a guest that
	// rewrites bodies (mutator hooks): called with KindTransform, the same buffers and return value as
	// ExportCall. A guest without it is refused only where a mutator names it.
	ExportTransform = "gateway_transform"
)

// Host functions of ModuleName.
const (
	ImportLog          = "log"
	ImportNowUnixMs    = "now_unix_ms"
	ImportRequestField = "request_field"
	// ImportKVGet (ABI v1.1) is kv_get(key_ptr, key_len, out_ptr, out_cap) -> i32: a value of the workspace's
	// plugin key-value store, as request_field answers a request field. A guest that imports it needs a v1.1 host.
	ImportKVGet = "kv_get"
)

// Kind says what a call asks of the plugin.
type Kind int32

// Call kinds.
const (
	KindCheck     Kind = 1
	KindCondition Kind = 2
	// KindTransform is a call of ExportTransform: Input.Body is the body to rewrite, Output.Body the new one.
	KindTransform Kind = 3
)

// Log levels of the log host function.
const (
	LevelDebug int32 = 0
	LevelInfo  int32 = 1
	LevelWarn  int32 = 2
	LevelError int32 = 3
)

// Input field tags.
const (
	TagText          byte = 1
	TagModel         byte = 2
	TagMetadataKey   byte = 3
	TagMetadataValue byte = 4
	TagParamName     byte = 5
	TagParamValue    byte = 6
	TagCheckID       byte = 7
	TagStage         byte = 8
	TagEndpoint      byte = 9
	TagTool          byte = 10
	TagMCPServer     byte = 11
	TagBody          byte = 12 // ABI v1.1: the JSON body a transform call rewrites
)

// Output field tags.
const (
	TagVerdict         byte = 1
	TagData            byte = 2
	TagTransformedText byte = 3
	TagError           byte = 4
	TagMatch           byte = 5
	TagTransformedBody byte = 6 // ABI v1.1: a transform's replacement body, one JSON object
)

// RequestView reads fields of the request being checked by path ("params.temperature", "metadata.user",
// "url.pathname"), as JSON text. The host parses the request once per request and shares the view between
// checks; native and wasm checks both read it.
type RequestView interface {
	Field(path string) (json []byte, ok bool)
}
