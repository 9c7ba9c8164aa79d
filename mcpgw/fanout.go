package mcpgw

import (
	"context"
	"fmt"
	"sync"
)

// ListsPerWorkspace bounds the lists over every server (tools/list, resources/list, resources/templates/list,
// prompts/list) that one workspace runs at once: each asks up to MaxServers servers, so without it a caller
// sending lists in parallel would fan out without end. A list past it waits for one to end, up to
// UpstreamTimeout, then fails.
const ListsPerWorkspace = 8

// fanouts holds a semaphore per workspace that listed lately.
type fanouts struct {
	mu    sync.Mutex
	slots map[string]chan struct{}
}

// maxFanoutWorkspaces bounds the semaphores kept: past it, the idle ones are dropped.
const maxFanoutWorkspaces = 4096

// acquire takes one of the workspace's list slots; release gives it back.
func (f *fanouts) acquire(ctx context.Context, workspaceID string) (release func(), err error) {
	f.mu.Lock()
	if f.slots == nil {
		f.slots = map[string]chan struct{}{}
	}
	if len(f.slots) >= maxFanoutWorkspaces {
		for ws, ch := range f.slots {
			if len(ch) == 0 {
				delete(f.slots, ws)
			}
		}
	}
	ch := f.slots[workspaceID]
	if ch == nil {
		ch = make(chan struct{}, ListsPerWorkspace)
		f.slots[workspaceID] = ch
	}
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, UpstreamTimeout)
	defer cancel()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("mcpgw: this workspace already runs %d lists over its servers: try again when one ends", ListsPerWorkspace)
	}
}
