package wasmfuel

import (
	"bytes"
	"errors"
	"fmt"
)

// The import Instrument adds. A module that imports anything from GuardModule itself is refused: the name is
// the host's.
const (
	GuardModule = "gateway_guard"
	RefuelName  = "refuel"
)

// MaxModuleBytes bounds the input of Instrument. Go guests are a few MB; nothing a plugin author ships comes
// near it.
const MaxModuleBytes = 64 << 20

// ErrReservedImport is wrapped by the *Error of a module that imports from GuardModule.
var ErrReservedImport = errors.New("the import module " + GuardModule + " is reserved for the host")

// ErrLimit is wrapped by the *Error of a valid module that goes past a bound of the host (MaxFunctionLocals,
// MaxModuleLocals).
var ErrLimit = errors.New("the module is past a bound of the host")

// Error is why a module cannot be instrumented: where (a function's index in the module's function index
// space and the byte offset in the module, or only an offset when outside code) and what.
type Error struct {
	Func   int // -1 when the problem is outside a function body
	Offset int
	Msg    string
	Err    error // a sentinel, when there is one (ErrReservedImport, ErrLimit)
}

func (e *Error) Error() string {
	if e.Func >= 0 {
		return fmt.Sprintf("plugin: function %d at byte %#x: %s", e.Func, e.Offset, e.Msg)
	}
	return fmt.Sprintf("plugin: at byte %#x: %s", e.Offset, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

// Section IDs.
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
)

// order ranks the known sections in the order a module must have them, for placing the sections Instrument
// adds when the module has none.
var order = [...]int{secType: 1, secImport: 2, secFunction: 3, secTable: 4, secMemory: 5, secGlobal: 6,
	secExport: 7, secStart: 8, secElement: 9, secDataCount: 10, secCode: 11, secData: 12}

type section struct {
	id   byte
	off  int // of the content in the module
	body []byte
}

// module is what Instrument learns of the input before rewriting it.
type module struct {
	sections      []section
	refuelType    uint32 // index of the type () -> i64, maybe a new one
	newType       bool   // refuelType must be appended to the type section
	importedFuncs uint32 // the refuel import's index; defined functions at or above it shift by one
	fuelGlobal    uint32
	typeParams    []uint32 // by type index: the number of parameters
	funcTypes     []uint32 // by defined function: its type index
	locals        uint64   // of the functions decoded so far, parameters included
}

// MaxTableElements bounds a table's declared size. Tables live in the host's heap, outside the linear memory
// that the memory limit bounds (8 bytes an element), so a guest could otherwise take 1 GiB per instance with a
// few bytes of module. Go guests declare ~6,000 elements; none of the guest languages grows a table, and
// table.grow is refused in code (code.go), so a table stays within this bound.
const MaxTableElements = 1 << 20

func tableTooLarge(at int, n uint32) error {
	return &Error{Func: -1, Offset: at, Err: ErrLimit,
		Msg: fmt.Sprintf("a table of %d elements, above the %d allowed", n, MaxTableElements)}
}

// Instrument returns wasm with a fuel counter: see the package documentation. It refuses input above
// MaxModuleBytes, input it cannot decode, and modules importing from GuardModule, with an *Error.
func Instrument(wasm []byte) ([]byte, error) {
	if len(wasm) > MaxModuleBytes {
		return nil, &Error{Func: -1, Msg: fmt.Sprintf("module of %d bytes is above the %d allowed", len(wasm), MaxModuleBytes)}
	}
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], []byte("\x00asm")) {
		return nil, &Error{Func: -1, Msg: "not a WebAssembly module (no \\0asm magic)"}
	}
	if !bytes.Equal(wasm[4:8], []byte{1, 0, 0, 0}) {
		return nil, &Error{Func: -1, Offset: 4, Msg: fmt.Sprintf("unsupported binary version % x", wasm[4:8])}
	}
	m, err := parse(wasm)
	if err != nil {
		return nil, err
	}
	return m.write(len(wasm))
}

// parse splits the module into sections and reads what the rewrite needs from the type, import and global
// sections.
func parse(wasm []byte) (*module, error) {
	m := &module{}
	r := &reader{b: wasm, pos: 8}
	var types, globals, importedGlobals uint32
	last := 0
	for r.pos < len(r.b) && r.err == nil {
		start := r.pos
		id := r.byte()
		n := r.u32()
		body := r.bytes(int(n))
		if r.err != nil {
			break
		}
		if id != secCustom {
			if int(id) >= len(order) || order[id] == 0 {
				return nil, &Error{Func: -1, Offset: start, Msg: fmt.Sprintf("unknown section id %d", id)}
			}
			if order[id] <= last {
				return nil, &Error{Func: -1, Offset: start, Msg: fmt.Sprintf("section %d out of order or repeated", id)}
			}
			last = order[id]
		}
		s := section{id: id, off: r.pos - len(body), body: body}
		m.sections = append(m.sections, s)
		sr := &reader{b: body, base: s.off}
		switch id {
		case secType:
			types = sr.count(3)
			found := false
			for i := uint32(0); i < types && sr.err == nil; i++ {
				if form := sr.byte(); form != 0x60 && sr.err == nil {
					return nil, &Error{Func: -1, Offset: sr.abs(), Msg: fmt.Sprintf("type %d has form %#x, not a function type", i, form)}
				}
				np := sr.count(1)
				params := sr.bytes(int(np))
				m.typeParams = append(m.typeParams, np)
				nr := sr.count(1)
				results := sr.bytes(int(nr))
				if !found && len(params) == 0 && len(results) == 1 && results[0] == 0x7e {
					m.refuelType, found = i, true
				}
			}
			if !found {
				m.refuelType, m.newType = types, true
			}
		case secImport:
			n := sr.count(4)
			for i := uint32(0); i < n && sr.err == nil; i++ {
				at := sr.abs()
				mod := sr.name()
				name := sr.name()
				if mod == GuardModule && sr.err == nil {
					return nil, &Error{Func: -1, Offset: at, Err: ErrReservedImport,
						Msg: fmt.Sprintf("imports %q.%q, but %v", mod, name, ErrReservedImport)}
				}
				switch kind := sr.byte(); kind {
				case 0x00: // function: type index
					sr.u32()
					m.importedFuncs++
				case 0x01: // table: reference type, limits
					sr.byte()
					if n := sr.limits(); n > MaxTableElements && sr.err == nil {
						return nil, tableTooLarge(at, n)
					}
				case 0x02: // memory: limits
					sr.limits()
				case 0x03: // global: value type, mutability
					sr.byte()
					sr.byte()
					importedGlobals++
				default:
					if sr.err == nil {
						return nil, &Error{Func: -1, Offset: sr.abs() - 1, Msg: fmt.Sprintf("import %q.%q of unknown kind %#x", mod, name, kind)}
					}
				}
			}
		case secFunction:
			n := sr.count(1)
			m.funcTypes = make([]uint32, n)
			for i := range m.funcTypes {
				m.funcTypes[i] = sr.u32()
			}
		case secTable:
			n := sr.count(3)
			for i := uint32(0); i < n && sr.err == nil; i++ {
				at := sr.abs()
				sr.byte()
				if n := sr.limits(); n > MaxTableElements && sr.err == nil {
					return nil, tableTooLarge(at, n)
				}
			}
		case secGlobal:
			globals = sr.count(3)
		}
		if sr.err != nil {
			return nil, sr.err
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if m.newType && types == ^uint32(0) || m.importedFuncs == ^uint32(0) || importedGlobals+globals < importedGlobals {
		return nil, &Error{Func: -1, Msg: "too many types, imports or globals"}
	}
	m.fuelGlobal = importedGlobals + globals
	return m, nil
}

// write builds the instrumented module.
func (m *module) write(size int) ([]byte, error) {
	out := make([]byte, 0, size+size/8+64)
	out = append(out, "\x00asm\x01\x00\x00\x00"...)
	pending := []byte{secType, secImport, secGlobal} // sections to add if the module has none
	for _, s := range m.sections {
		if s.id != secCustom {
			for len(pending) > 0 && order[pending[0]] < order[s.id] {
				out = appendSection(out, pending[0], m.added(pending[0]))
				pending = pending[1:]
			}
			if len(pending) > 0 && pending[0] == s.id {
				pending = pending[1:]
			}
		}
		body, err := m.rewrite(s)
		if err != nil {
			return nil, err
		}
		out = appendSection(out, s.id, body)
	}
	for _, id := range pending {
		out = appendSection(out, id, m.added(id))
	}
	return out, nil
}

// added is the content of a section the module lacks: only what Instrument adds.
func (m *module) added(id byte) []byte {
	var b []byte
	switch id {
	case secType:
		b = append(b, 1, 0x60, 0, 1, 0x7e)
	case secImport:
		b = m.appendRefuelImport(append(b, 1))
	case secGlobal:
		b = appendFuelGlobal(append(b, 1))
	}
	return b
}

func (m *module) appendRefuelImport(b []byte) []byte {
	b = appendName(b, GuardModule)
	b = appendName(b, RefuelName)
	return appendU32(append(b, 0x00), m.refuelType)
}

// appendFuelGlobal appends (global (mut i64) (i64.const 0)): the first charge calls refuel, so the host sees
// every instance's first stretch too.
func appendFuelGlobal(b []byte) []byte { return append(b, 0x7e, 0x01, 0x42, 0x00, 0x0b) }

func appendSection(out []byte, id byte, body []byte) []byte {
	out = append(out, id)
	out = appendU32(out, uint32(len(body)))
	return append(out, body...)
}

// rewrite returns the new content of one section.
func (m *module) rewrite(s section) ([]byte, error) {
	r := &reader{b: s.body, base: s.off}
	var out []byte
	switch s.id {
	case secType:
		if !m.newType {
			return s.body, nil
		}
		n := r.count(3)
		out = appendU32(nil, n+1)
		out = append(out, r.rest()...)
		out = append(out, 0x60, 0, 1, 0x7e)
	case secImport:
		n := r.count(4)
		out = append(appendU32(nil, n+1), r.rest()...)
		out = m.appendRefuelImport(out)
	case secGlobal:
		n := r.count(3)
		out = appendU32(nil, n+1)
		for i := uint32(0); i < n && r.err == nil; i++ {
			out = append(out, r.byte(), r.byte()) // value type, mutability
			out = m.constExpr(r, out)
		}
		out = appendFuelGlobal(out)
	case secExport:
		n := r.count(2)
		out = appendU32(nil, n)
		for i := uint32(0); i < n && r.err == nil; i++ {
			out = appendName(out, r.name())
			kind := r.byte()
			idx := r.u32()
			if kind == 0x00 {
				idx = m.fn(idx)
			}
			out = appendU32(append(out, kind), idx)
		}
	case secStart:
		out = appendU32(nil, m.fn(r.u32()))
	case secElement:
		out = m.elements(r)
	case secCode:
		return m.code(r)
	case secCustom:
		return m.custom(s), nil
	default:
		return s.body, nil
	}
	if r.err == nil && r.pos != len(r.b) {
		r.fail("%d bytes left at the end of section %d", len(r.b)-r.pos, s.id)
	}
	if r.err != nil {
		return nil, r.err
	}
	return out, nil
}

// fn is the new index of function idx.
func (m *module) fn(idx uint32) uint32 {
	if idx >= m.importedFuncs {
		return idx + 1
	}
	return idx
}

// constExpr copies a constant expression (a global's initialiser, an element's item or offset) up to its
// end, renumbering ref.func.
func (m *module) constExpr(r *reader, out []byte) []byte {
	for r.err == nil {
		at := r.pos
		op := r.byte()
		switch op {
		case 0x0b: // end
			return append(out, op)
		case 0x41: // i32.const
			r.s32()
		case 0x42: // i64.const
			r.s64()
		case 0x43: // f32.const
			r.bytes(4)
		case 0x44: // f64.const
			r.bytes(8)
		case 0x23: // global.get
			r.u32()
		case 0xd0: // ref.null
			r.byte()
		case 0xd2: // ref.func
			out = appendU32(append(out, op), m.fn(r.u32()))
			continue
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // extended constant expressions: add, sub, mul
		case 0xfd:
			if sub := r.u32(); sub != 0x0c && r.err == nil {
				r.failAt(at, "opcode 0xfd %#x in a constant expression", sub)
				return out
			}
			r.bytes(16)
		default:
			if r.err == nil {
				r.failAt(at, "opcode %#x in a constant expression", op)
			}
			return out
		}
		out = append(out, r.b[at:r.pos]...)
	}
	return out
}

// elements rewrites the element section: function indices of every segment form and ref.func in its
// expressions.
func (m *module) elements(r *reader) []byte {
	n := r.count(2)
	out := appendU32(nil, n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		at := r.pos
		form := r.u32()
		if form > 7 {
			r.failAt(at, "element segment %d has unknown form %d", i, form)
			break
		}
		out = appendU32(out, form)
		active, explicitTable, exprs := form&1 == 0, form&3 == 2, form&4 != 0
		if explicitTable {
			out = appendU32(out, r.u32())
		}
		if active {
			out = m.constExpr(r, out)
		}
		if form&3 != 0 { // element kind (0x00, funcref) or reference type
			out = append(out, r.byte())
		}
		items := r.count(1)
		out = appendU32(out, items)
		for j := uint32(0); j < items && r.err == nil; j++ {
			if exprs {
				out = m.constExpr(r, out)
			} else {
				out = appendU32(out, m.fn(r.u32()))
			}
		}
	}
	return out
}

// custom renumbers the function and local name maps of the name section and keeps every other custom section
// as it is. A name section it cannot read is kept too: wazero treats names as debug information only.
func (m *module) custom(s section) []byte {
	r := &reader{b: s.body, base: s.off}
	if r.name() != "name" || r.err != nil {
		return s.body
	}
	out := append([]byte(nil), s.body[:r.pos]...)
	for r.pos < len(r.b) && r.err == nil {
		id := r.byte()
		n := r.u32()
		sub := &reader{b: r.bytes(int(n))}
		if r.err != nil {
			break
		}
		if id != 1 && id != 2 {
			out = appendSection(out, id, sub.b)
			continue
		}
		var body []byte
		count := sub.count(2)
		body = appendU32(body, count)
		for i := uint32(0); i < count && sub.err == nil; i++ {
			body = appendU32(body, m.fn(sub.u32()))
			if id == 1 {
				body = appendName(body, sub.name())
				continue
			}
			locals := sub.count(2)
			body = appendU32(body, locals)
			for j := uint32(0); j < locals && sub.err == nil; j++ {
				body = appendU32(body, sub.u32())
				body = appendName(body, sub.name())
			}
		}
		if sub.err != nil || sub.pos != len(sub.b) {
			return s.body
		}
		out = appendSection(out, id, body)
	}
	if r.err != nil {
		return s.body
	}
	return out
}

func appendName(b []byte, s string) []byte {
	return append(appendU32(b, uint32(len(s))), s...)
}

func appendU32(b []byte, v uint32) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func appendS64(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
