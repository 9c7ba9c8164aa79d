package storage

// BatchStore keeps batches: their records, the progress of their lines and each line's result.
type BatchStore struct {
	s *Store
}
