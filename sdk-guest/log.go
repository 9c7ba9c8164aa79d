package sdk

import (
	"fmt"
	"time"

	"github.com/llmgw/gateway/sdk-guest/internal/hostapi"
)

// Level is the level of a log message.
type Level int32

// Log levels, as the gateway_v1 log host function numbers them.
const (
	LevelDebug = Level(hostapi.LevelDebug)
	LevelInfo  = Level(hostapi.LevelInfo)
	LevelWarn  = Level(hostapi.LevelWarn)
	LevelError = Level(hostapi.LevelError)
)

// String returns "debug", "info", "warn" or "error".
func (l Level) String() string {
	switch l {
	case LevelDebug:
		return "debug"
	case LevelInfo:
		return "info"
	case LevelWarn:
		return "warn"
	case LevelError:
		return "error"
	}
	return "level(" + fmt.Sprint(int32(l)) + ")"
}

// Log writes msg into the request's log at level (host function log). Natively it writes to standard error.
func Log(level Level, msg string) { hostLog(level, msg) }

// Logf formats its arguments as fmt.Sprintf does and logs the result at level.
func Logf(level Level, format string, args ...any) { hostLog(level, fmt.Sprintf(format, args...)) }

// Now returns the current time from the host (host function now_unix_ms), to the millisecond. A guest has no
// other clock: time.Now in a guest is not the wall clock.
func Now() time.Time { return time.UnixMilli(hostNowUnixMs()) }

// RequestField returns one field of the request as JSON text, by path: "params.temperature",
// "params.messages.0.role", "metadata.user", "url.pathname" (host function request_field). ok is false when the
// field is absent. Natively there is no request: ok is always false.
func RequestField(path string) (json string, ok bool) { return hostRequestField(path) }
