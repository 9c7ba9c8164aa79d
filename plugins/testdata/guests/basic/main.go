//go:build wasip1

// Command basic is the test guest of package plugins. It implements ABI v1 by hand (raw //go:wasmexport and
// //go:wasmimport, no SDK) and chooses what to do from the input's check id, so that one module covers the round
// trip and the hostile cases (a check id "<plugin>.<name>", as WasmCheck sends it, is read as its name):
//
//	pass, fail        verdict 1 or 0
//	echo              data with every input field, transformed text = text reversed
//	field             data {"field": <request_field(text)>} (null when absent)
//	log               logs the text at the level given by param "level" (default info)
//	flood             logs the text at level error as many times as param "lines" says (default 10000)
//	now               data {"now": now_unix_ms()}
//	error             an Output error
//	version           data {"version": version}
//	regex             fails when the text holds something that looks like an e-mail address or a card number
//	noop              returns 0 (pass, no data)
//	allocs            data {"allocs": gateway_alloc calls so far, "size": the size the last one asked}
//	loop              never returns
//	bomb              allocates until memory runs out
//	panic             panics
//	file              tries os.ReadFile("/etc/passwd") and reports the outcome
//
// A call of kind 2 (condition) matches when the text contains "yes".
//
// Built with -tags abi11 it speaks ABI v1.1 (abi11.go): its gateway_alloc already keeps the buffer until the
// next gateway_alloc.
package main

import (
	"os"
	"regexp"
	"strconv"
	"unsafe"
)

// version is set with -ldflags "-X main.version=v2" to build a second, different module.
var version = "v1"

func main() {}

//go:wasmimport gateway_v1 log
func hostLog(level int32, ptr unsafe.Pointer, n uint32)

//go:wasmimport gateway_v1 now_unix_ms
func hostNow() int64

//go:wasmimport gateway_v1 request_field
func hostField(pathPtr unsafe.Pointer, pathLen uint32, outPtr unsafe.Pointer, outCap uint32) int32

//go:wasmexport gateway_abi_v1
func abiV1() {}

var (
	inBuf     []byte
	allocs    int
	allocSize uint32
)

//go:wasmexport gateway_alloc
func gatewayAlloc(size uint32) uint32 {
	allocs++
	allocSize = size
	if uint32(cap(inBuf)) < size {
		inBuf = make([]byte, size)
	}
	inBuf = inBuf[:size]
	if size == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(inBuf))))
}

var out []byte

//go:wasmexport gateway_call
func gatewayCall(kind int32, ptr, n uint32) uint64 {
	var in []byte
	if n > 0 {
		in = unsafe.Slice((*byte)(unsafe.Pointer(uintptr(ptr))), n)
	}
	r := run(kind, parse(in))
	if r == nil {
		return 0
	}
	out = r
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(out))))<<32 | uint64(len(out))
}

type input struct {
	text, model, checkID, stage, endpoint, tool, mcpServer string
	meta, params                                           [][2]string
}

// parse decodes the input without copying: its strings view the input buffer, which stays valid until
// gateway_call returns.
func parse(b []byte) input {
	var in input
	for len(b) >= 5 {
		tag := b[0]
		n := int(uint32(b[1]) | uint32(b[2])<<8 | uint32(b[3])<<16 | uint32(b[4])<<24)
		b = b[5:]
		if n > len(b) {
			break
		}
		v := unsafe.String(unsafe.SliceData(b), n) // a view of the input buffer, valid during the call
		b = b[n:]
		switch tag {
		case 1:
			in.text = v
		case 2:
			in.model = v
		case 3:
			in.meta = append(in.meta, [2]string{v, ""})
		case 4:
			if len(in.meta) > 0 {
				in.meta[len(in.meta)-1][1] = v
			}
		case 5:
			in.params = append(in.params, [2]string{v, ""})
		case 6:
			if len(in.params) > 0 {
				in.params[len(in.params)-1][1] = v
			}
		case 7:
			in.checkID = v
		case 8:
			in.stage = v
		case 9:
			in.endpoint = v
		case 10:
			in.tool = v
		case 11:
			in.mcpServer = v
		}
	}
	return in
}

func field(dst []byte, tag byte, v string) []byte {
	n := uint32(len(v))
	dst = append(dst, tag, byte(n), byte(n>>8), byte(n>>16), byte(n>>24))
	return append(dst, v...)
}

func verdict(dst []byte, pass bool) []byte {
	if pass {
		return field(dst, 1, "\x01")
	}
	return field(dst, 1, "\x00")
}

var (
	email = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`)
	card  = regexp.MustCompile(`\b\d{4}[ -]?\d{4}[ -]?\d{4}[ -]?\d{1,4}\b`)
	sink  [][]byte
)

func pairs(ps [][2]string) string {
	s := "{"
	for i, p := range ps {
		if i > 0 {
			s += ","
		}
		s += strconv.Quote(p[0]) + ":" + strconv.Quote(p[1])
	}
	return s + "}"
}

func run(kind int32, in input) []byte {
	if kind == 2 {
		m := "\x00"
		for i := 0; i+3 <= len(in.text); i++ {
			if in.text[i:i+3] == "yes" {
				m = "\x01"
			}
		}
		return field(nil, 5, m)
	}
	name := in.checkID
	for i := 0; i < len(name); i++ {
		if name[i] == '.' {
			name = name[i+1:]
			break
		}
	}
	switch name {
	case "noop":
		return nil
	case "allocs":
		return field(verdict(nil, true), 2, `{"allocs":`+strconv.Itoa(allocs)+`,"size":`+strconv.FormatUint(uint64(allocSize), 10)+`}`)
	case "pass":
		return verdict(nil, true)
	case "fail":
		return verdict(nil, false)
	case "echo":
		rev := []rune(in.text)
		for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
			rev[i], rev[j] = rev[j], rev[i]
		}
		data := `{"text":` + strconv.Quote(in.text) + `,"model":` + strconv.Quote(in.model) +
			`,"stage":` + strconv.Quote(in.stage) + `,"endpoint":` + strconv.Quote(in.endpoint) +
			`,"tool":` + strconv.Quote(in.tool) + `,"mcp_server":` + strconv.Quote(in.mcpServer) +
			`,"check_id":` + strconv.Quote(in.checkID) +
			`,"kind":` + strconv.Itoa(int(kind)) + `,"metadata":` + pairs(in.meta) + `,"params":` + pairs(in.params) + `}`
		return field(field(verdict(nil, true), 2, data), 3, string(rev))
	case "field":
		buf := make([]byte, 4)
		path := in.text
		n := hostField(unsafe.Pointer(unsafe.StringData(path)), uint32(len(path)), unsafe.Pointer(&buf[0]), uint32(len(buf)))
		if n > int32(len(buf)) {
			buf = make([]byte, n)
			n = hostField(unsafe.Pointer(unsafe.StringData(path)), uint32(len(path)), unsafe.Pointer(&buf[0]), uint32(len(buf)))
		}
		v := "null"
		if n >= 0 {
			v = string(buf[:n])
		}
		return field(verdict(nil, true), 2, `{"field":`+v+`}`)
	case "log":
		level := int32(1)
		for _, p := range in.params {
			if p[0] == "level" {
				l, _ := strconv.Atoi(p[1])
				level = int32(l)
			}
		}
		msg := in.text
		hostLog(level, unsafe.Pointer(unsafe.StringData(msg)), uint32(len(msg)))
		return verdict(nil, true)
	case "flood":
		lines := 10000
		for _, p := range in.params {
			if p[0] == "lines" {
				lines, _ = strconv.Atoi(p[1])
			}
		}
		msg := in.text
		for range lines {
			hostLog(3, unsafe.Pointer(unsafe.StringData(msg)), uint32(len(msg)))
		}
		return verdict(nil, true)
	case "now":
		return field(verdict(nil, true), 2, `{"now":`+strconv.FormatInt(hostNow(), 10)+`}`)
	case "error":
		return field(nil, 4, "plugin says no: "+in.text)
	case "version":
		return field(verdict(nil, true), 2, `{"version":`+strconv.Quote(version)+`}`)
	case "regex":
		if loc := email.FindStringIndex(in.text); loc != nil {
			return field(verdict(nil, false), 2, `{"found":"email","at":`+strconv.Itoa(loc[0])+`}`)
		}
		if loc := card.FindStringIndex(in.text); loc != nil {
			return field(verdict(nil, false), 2, `{"found":"card","at":`+strconv.Itoa(loc[0])+`}`)
		}
		return verdict(nil, true)
	case "loop":
		for i := 0; ; i++ {
			if i < 0 {
				return nil
			}
		}
	case "bomb":
		for {
			sink = append(sink, make([]byte, 8<<20))
		}
	case "panic":
		panic("guest panics on purpose")
	case "file":
		b, err := os.ReadFile("/etc/passwd")
		if err != nil {
			return field(verdict(nil, true), 2, `{"error":`+strconv.Quote(err.Error())+`}`)
		}
		return field(verdict(nil, false), 2, `{"read":`+strconv.Itoa(len(b))+`}`)
	}
	return field(nil, 4, "unknown check id "+strconv.Quote(in.checkID))
}
