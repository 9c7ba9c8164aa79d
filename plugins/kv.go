package plugins

import (
	"context"
	"fmt"

	"github.com/tetratelabs/wazero/api"

	"github.com/llmgw/gateway/hostapi"
)

// maxKVKeyLen is the longest key the plugin key-value store holds (control.MaxPluginKVKey): a longer one is
// absent without being looked up, so that a guest cannot make the host copy megabytes of its memory per call.
const maxKVKeyLen = 256

// hostKVGet copies the value of one key of the workspace's plugin key-value store into the guest (ABI v1.1,
// hostapi.ImportKVGet), with request_field's protocol: -1 when absent, else the value's length, the value
// written only when it fits in out_cap. The values come from Options.KV.
func hostKVGet(ctx context.Context, mod api.Module, stack []uint64) {
	hostLookup(ctx, mod, stack, hostapi.ImportKVGet, "key", func(c *callCtx, key []byte) ([]byte, bool) {
		if c.v.e.opts.KV == nil || len(key) == 0 || len(key) > maxKVKeyLen {
			return nil, false
		}
		c.stopIfOver()
		// The key is copied: it is a view of the guest's memory, and KV may keep it (in an error, say).
		val, found, err := c.v.e.opts.KV(c.v.ws.id, string(key))
		if err != nil {
			// A store that cannot answer fails the call rather than answering "absent": a deny list that
			// silently empties would let everything through.
			panic(fmt.Errorf("%s: %w", hostapi.ImportKVGet, err))
		}
		return val, found
	})
}
