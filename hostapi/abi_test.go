package hostapi

import "testing"

// TestVersion proves the version export's encoding: v1.1 is 0x00010001, and decoding inverts encoding, also for
// values a hostile guest may return.
func TestVersion(t *testing.T) {
	if v := EncodeVersion(VersionMajor, VersionMinor); v != 0x00010001 {
		t.Fatalf("EncodeVersion(1, 1) = %#x, want 0x00010001", v)
	}
	for _, c := range []struct{ major, minor int }{{1, 0}, {1, 1}, {2, 0}, {0, 7}, {0x7fff, 0xffff}} {
		if major, minor := DecodeVersion(EncodeVersion(c.major, c.minor)); major != c.major || minor != c.minor {
			t.Errorf("DecodeVersion(EncodeVersion(%d, %d)) = %d, %d", c.major, c.minor, major, minor)
		}
	}
	if major, minor := DecodeVersion(-1); major != 0xffff || minor != 0xffff {
		t.Errorf("DecodeVersion(-1) = %d, %d, want 65535, 65535", major, minor)
	}
}
