// Package upstream is the gateway's client of providers' management APIs (files, batches, fine-tuning), for a
// workspace's stored providers (virtual keys). It owns three things:
//   - resolving a virtual key into a callable management target: the stored provider's URL, credentials and
//     address policy are the engine's to resolve (runtime.Engine.ResolveVirtualKey), the URLs and
//     authentication of the management API its adapter's (providers.Manager); a provider whose adapter has no
//     Manager (anthropic, bedrock, vertex-ai, google) is ErrUnsupported, a 400 that says so;
//   - bounded calls: every answer is read whole up to MaxAnswer, every call has a time limit, transport
//     failures become *gwerr.Error values with redacted URLs (runtime.ManagementCallError);
//   - mirroring files both ways, streamed, never held whole in memory: a gateway file uploaded to a provider
//     once (UploadFile), a provider's file copied into a gateway file once (ImportFile), the mapping kept per
//     workspace and virtual key in storage.FineTuningStore, so that callers of the gateway only see gateway IDs.
//
// The control plane's fine-tuning operations and the batch runner's 24h batches use it. It imports runtime,
// runtime/providers, runtime/gwerr, runtime/netguard and storage; nothing of routes or control. A *Client and
// its *Target values are safe for concurrent use.
package upstream
