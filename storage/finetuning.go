package storage

// FineTuningStore keeps the gateway's view of fine-tuning jobs forwarded to providers and the files it mirrored
// to providers for them.
type FineTuningStore struct {
	s *Store
}
