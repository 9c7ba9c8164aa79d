package gwerr

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

func TestType(t *testing.T) {
	tests := []struct {
		status int
		want   string
	}{
		{400, "invalid_request_error"},
		{401, "authentication_error"},
		{403, "permission_error"},
		{404, "not_found_error"},
		{405, "invalid_request_error"},
		{408, "timeout_error"},
		{413, "invalid_request_error"},
		{415, "invalid_request_error"},
		{429, "rate_limit_error"},
		{446, "hooks_failed"},
		{500, "server_error"},
		{502, "server_error"},
	}
	for _, tc := range tests {
		if got := (&Error{Status: tc.status}).Type(); got != tc.want {
			t.Errorf("Type of %d = %q, want %q", tc.status, got, tc.want)
		}
	}
}

func TestWrapping(t *testing.T) {
	e := Internal(io.ErrUnexpectedEOF)
	wrapped := fmt.Errorf("runtime: call: %w", e)
	var ge *Error
	if !errors.As(wrapped, &ge) || ge.Status != 500 || ge.Message != "internal error" {
		t.Fatalf("errors.As through a wrap: %v", ge)
	}
	if !errors.Is(wrapped, io.ErrUnexpectedEOF) {
		t.Error("the cause is not reachable with errors.Is")
	}
	if b := BadRequest("targets[1].retry.attempts", "must be at most %d", 5); b.Param != "targets[1].retry.attempts" || b.Message != "must be at most 5" || b.Status != 400 {
		t.Errorf("BadRequest = %+v", b)
	}
}
