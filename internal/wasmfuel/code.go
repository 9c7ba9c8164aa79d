package wasmfuel

// code rewrites the code section: each body gets a charge at its entry and at the start of each loop body,
// and its function indices renumbered.
func (m *module) code(r *reader) ([]byte, error) {
	n := r.count(2)
	out := appendU32(make([]byte, 0, len(r.b)+len(r.b)/8+16), n)
	var c coder
	for i := uint32(0); i < n && r.err == nil; i++ {
		size := r.u32()
		bodyAt := r.pos
		body := r.bytes(int(size))
		if r.err != nil {
			break
		}
		fr := &reader{b: body, base: r.base + bodyAt, fn: int(m.importedFuncs+i) + 1}
		c.body = c.body[:0]
		if err := c.function(m, fr, i); err != nil {
			return nil, err
		}
		out = appendU32(out, uint32(len(c.body)))
		out = append(out, c.body...)
	}
	if r.err == nil && r.pos != len(r.b) {
		r.fail("%d bytes left at the end of the code section", len(r.b)-r.pos)
	}
	if r.err != nil {
		return nil, r.err
	}
	return out, nil
}

// coder instruments one function body at a time; its slices are reused from one body to the next.
type coder struct {
	body   []byte  // the new body
	edits  []edit  // in body order
	cost   []int64 // per region: the function (0), then each loop in order of its opcode
	blocks []int   // control stack: the region of each open loop, or -1 for a block or if
	open   []int   // stack of open regions

	// The function's local declarations, which gain a group of one i32 (the scratch local that bulk charges
	// keep the length in) when the body has a bulk instruction: their count, the end of the count and the end
	// of the declarations, and the index of the scratch local.
	groups               uint32
	groupsEnd, localsEnd int
	scratch              uint32
	needScratch          bool
}

// Bounds of locals: wazero's compiler spends ~30 bytes and ~20 ns per local (and each call zeroes the
// callee's), so that a function of a few bytes declaring 2^32-1 locals stops the process with a fatal out of
// memory, and 100k functions of 65k locals each would take 200 GB. A 3 MB Go guest has at most 18 locals in a
// function and 10k in all; the bounds leave room for unoptimised Rust builds.
const (
	MaxFunctionLocals = 1 << 16
	MaxModuleLocals   = 1 << 22
)

// Bounds of one function's body, which bound what instrumenting it holds at once (an edit is 32 bytes; a
// crafted 32 MiB function of calls would otherwise take gigabytes): the calls, loops and bulk instructions it
// has (the edits), and how deep its blocks nest. The largest function of a 3 MB Go guest has a few thousand
// calls and nests a few dozen deep.
const (
	MaxFunctionEdits = 1 << 20
	MaxNesting       = 1 << 16
)

// Bulk instructions (memory.fill, memory.copy, memory.init, table.fill, table.copy, table.init, table.grow)
// do work in proportion to their last operand, an i32 length, so each is charged that length, shifted right
// by its shift, before it runs: without that, a loop of them would be charged a few instructions per
// iteration for megabytes of work, and run for minutes on one stretch of fuel. A memory byte is charged a
// sixteenth of an instruction (memset and memmove move 16 bytes or more per cycle), a table element one.
const (
	memoryByteShift = 4
	tableElemShift  = 0
	editBulk        = -2 // edit.region of a bulk charge; edit.fn holds the shift
	editFuncIndex   = -1
)

// edit is where the new body departs from the old: a charge inserted after at (the end of a loop's block
// type, or of the locals for the function's entry), a bulk charge inserted before the instruction at at, or a
// function index at [at, end) replaced.
type edit struct {
	at, end int
	region  int    // a charge of this region, or editFuncIndex, or editBulk
	fn      uint32 // the new function index (editFuncIndex), or the shift (editBulk)
}

// function decodes the body in r once, counting each region's instructions and noting the edits, then
// writes it with them.
func (c *coder) function(m *module, r *reader, defined uint32) *Error {
	c.edits, c.cost, c.blocks, c.open = c.edits[:0], c.cost[:0], c.blocks[:0], c.open[:0]
	c.needScratch = false
	c.groups = r.count(2)
	c.groupsEnd = r.pos
	locals := uint64(0)
	if int(defined) < len(m.funcTypes) && int(m.funcTypes[defined]) < len(m.typeParams) {
		locals = uint64(m.typeParams[m.funcTypes[defined]])
	}
	for i := uint32(0); i < c.groups && r.err == nil; i++ {
		locals += uint64(r.u32())
		r.byte()
	}
	c.localsEnd = r.pos
	m.locals += locals
	switch {
	case r.err != nil:
	case locals > MaxFunctionLocals:
		r.failAt(0, "%d locals, parameters included, above the %d allowed in a function", locals, MaxFunctionLocals)
		r.err.Err = ErrLimit
	case m.locals > MaxModuleLocals:
		r.failAt(0, "the module's functions have more than %d locals together, parameters included", MaxModuleLocals)
		r.err.Err = ErrLimit
	}
	c.scratch = uint32(min(locals, MaxFunctionLocals)) // the next local: MaxFunctionLocals leaves room for it
	c.cost = append(c.cost, 0)
	c.open = append(c.open, 0)
	c.blocks = append(c.blocks, 0) // the function's own block, ended by its last end
	c.edits = append(c.edits, edit{at: r.pos, end: r.pos, region: 0})
	for r.err == nil && len(c.blocks) > 0 {
		at := r.pos
		if len(c.edits) > MaxFunctionEdits || len(c.blocks) > MaxNesting {
			r.failAt(at, "more than %d calls, loops and bulk instructions, or blocks nested more than %d deep, in one function",
				MaxFunctionEdits, MaxNesting)
			r.err.Err = ErrLimit
			break
		}
		c.cost[c.open[len(c.open)-1]]++
		switch op := r.byte(); op {
		case 0x00, 0x01, 0x05, 0x0f, 0x1a, 0x1b, 0xd1: // unreachable, nop, else, return, drop, select, ref.is_null
		case 0x02, 0x04: // block, if
			r.s33()
			c.blocks = append(c.blocks, -1)
		case 0x03: // loop
			r.s33()
			region := len(c.cost)
			c.cost = append(c.cost, 0)
			c.open = append(c.open, region)
			c.blocks = append(c.blocks, region)
			c.edits = append(c.edits, edit{at: r.pos, end: r.pos, region: region})
		case 0x0b: // end
			if c.blocks[len(c.blocks)-1] > 0 {
				c.open = c.open[:len(c.open)-1]
			}
			c.blocks = c.blocks[:len(c.blocks)-1]
		case 0x0c, 0x0d, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26: // br, br_if, local.*, global.*, table.get/set
			r.u32()
		case 0x0e: // br_table
			targets := r.count(1)
			for j := uint32(0); j <= targets && r.err == nil; j++ {
				r.u32()
			}
		case 0x10, 0x12, 0xd2: // call, return_call, ref.func
			c.funcIndex(m, r)
		case 0x11, 0x13: // call_indirect, return_call_indirect: type, table
			r.u32()
			r.u32()
		case 0x1c: // select with types
			types := r.count(1)
			r.bytes(int(types))
		case 0x3f, 0x40: // memory.size, memory.grow: memory index
			r.u32()
		case 0x41:
			r.s32()
		case 0x42:
			r.s64()
		case 0x43:
			r.bytes(4)
		case 0x44:
			r.bytes(8)
		case 0xd0: // ref.null: reference type
			r.byte()
		case 0xfc:
			c.misc(r, at)
		case 0xfd:
			c.simd(r, at)
		default:
			switch {
			case op >= 0x28 && op <= 0x3e: // loads and stores: memarg
				r.u32()
				r.u32()
			case op >= 0x45 && op <= 0xc4: // numeric, no immediates
			default:
				if r.err == nil {
					r.failAt(at, "unknown opcode %#x", op)
				}
			}
		}
	}
	if r.err == nil && r.pos != len(r.b) {
		r.fail("%d bytes after the function's end", len(r.b)-r.pos)
	}
	if r.err != nil {
		return r.err
	}
	c.write(m, r.b)
	return nil
}

func (c *coder) funcIndex(m *module, r *reader) {
	at := r.pos
	idx := r.u32()
	if r.err == nil {
		c.edits = append(c.edits, edit{at: at, end: r.pos, region: editFuncIndex, fn: m.fn(idx)})
	}
}

// misc decodes the immediates of a 0xfc instruction: saturating truncations, bulk memory and table ops.
func (c *coder) misc(r *reader, at int) {
	sub := r.u32()
	switch {
	case r.err != nil:
	case sub <= 7: // trunc_sat
	case sub == 15: // table.grow: see MaxTableElements
		r.failAt(at, "table.grow: a plugin's tables keep the size they declare (at most %d elements)", MaxTableElements)
		r.err.Err = ErrLimit
	case sub == 9 || sub == 11 || sub == 13 || sub == 16 || sub == 17: // data.drop, memory.fill, elem.drop, table.size/fill
		r.u32()
	case sub == 8 || sub == 10 || sub == 12 || sub == 14: // memory.init, memory.copy, table.init, table.copy
		r.u32()
		r.u32()
	default:
		r.failAt(at, "unknown opcode 0xfc %#x", sub)
	}
	if r.err != nil {
		return
	}
	switch sub {
	case 8, 10, 11: // memory.init, memory.copy, memory.fill
		c.edits = append(c.edits, edit{at: at, end: at, region: editBulk, fn: memoryByteShift})
		c.needScratch = true
	case 12, 14, 17: // table.init, table.copy, table.fill
		c.edits = append(c.edits, edit{at: at, end: at, region: editBulk, fn: tableElemShift})
		c.needScratch = true
	}
}

// simdNone marks the 0xfd opcodes without immediates (WebAssembly 2.0's 236 SIMD instructions less those
// with a memarg, lane or 16-byte immediate).
var simdNone = func() (t [256]bool) {
	for op := 0x0e; op <= 0xff; op++ {
		t[op] = true
	}
	for _, op := range []int{0x0c, 0x0d, 0x5c, 0x5d, 0x9a, 0xa2, 0xa5, 0xa6, 0xaf, 0xb0, 0xb2, 0xb3, 0xb4, 0xbb, 0xc2, 0xc5,
		0xc6, 0xcf, 0xd0, 0xd2, 0xd3, 0xd4, 0xe2, 0xee} {
		t[op] = false
	}
	for op := 0x15; op <= 0x22; op++ { // extract and replace lane
		t[op] = false
	}
	for op := 0x54; op <= 0x5b; op++ { // load and store lane
		t[op] = false
	}
	return t
}()

// simd decodes the immediates of a 0xfd instruction.
func (c *coder) simd(r *reader, at int) {
	sub := r.u32()
	switch {
	case r.err != nil:
	case sub <= 0x0b || sub == 0x5c || sub == 0x5d: // loads, store, load zero: memarg
		r.u32()
		r.u32()
	case sub == 0x0c || sub == 0x0d: // v128.const, i8x16.shuffle
		r.bytes(16)
	case sub >= 0x15 && sub <= 0x22: // extract and replace lane
		r.byte()
	case sub >= 0x54 && sub <= 0x5b: // load and store lane: memarg, lane
		r.u32()
		r.u32()
		r.byte()
	case sub < 256 && simdNone[sub]:
	default:
		r.failAt(at, "unknown opcode 0xfd %#x", sub)
	}
}

// write appends the body with its edits to c.body.
func (c *coder) write(m *module, body []byte) {
	from := 0
	if c.needScratch {
		c.body = appendU32(c.body, c.groups+1)
		c.body = append(c.body, body[c.groupsEnd:c.localsEnd]...)
		c.body = append(c.body, 1, 0x7f) // one i32
		from = c.localsEnd
	}
	for _, e := range c.edits {
		c.body = append(c.body, body[from:e.at]...)
		from = e.end
		switch e.region {
		case editFuncIndex:
			c.body = appendU32(c.body, e.fn)
		case editBulk:
			c.body = m.appendBulkCharge(c.body, c.scratch, e.fn)
		default:
			c.body = m.appendCharge(c.body, max(c.cost[e.region], 1))
		}
	}
	c.body = append(c.body, body[from:]...)
}

// appendBulkCharge appends the charge of a bulk instruction, whose length is on top of the stack (and stays
// there), kept in the local scratch:
//
//	local.tee $scratch; global.get $fuel; local.get $scratch; i64.extend_i32_u; i64.const shift; i64.shr_u
//	i64.sub; global.set $fuel; and the test of appendCharge
//
// refuel resets the counter rather than adding to it, so an instruction charged more than a stretch's fuel
// costs one refuel, which looks at the deadline before the instruction runs.
func (m *module) appendBulkCharge(b []byte, scratch, shift uint32) []byte {
	b = appendU32(append(b, 0x22), scratch)
	b = appendU32(append(b, 0x23), m.fuelGlobal)
	b = appendU32(append(b, 0x20), scratch)
	b = append(b, 0xad)
	if shift > 0 {
		b = appendS64(append(b, 0x42), int64(shift))
		b = append(b, 0x88)
	}
	b = appendU32(append(b, 0x7d, 0x24), m.fuelGlobal)
	return m.appendTest(b)
}

// appendCharge appends the charge of a stretch of cost instructions:
//
//	global.get $fuel; i64.const cost; i64.sub; global.set $fuel
//	global.get $fuel; i64.const 0; i64.lt_s; if; call $refuel; global.set $fuel; end
func (m *module) appendCharge(b []byte, cost int64) []byte {
	b = appendU32(append(b, 0x23), m.fuelGlobal)
	b = appendS64(append(b, 0x42), cost)
	b = appendU32(append(b, 0x7d, 0x24), m.fuelGlobal)
	return m.appendTest(b)
}

// appendTest appends the call of refuel when the counter is below zero.
func (m *module) appendTest(b []byte) []byte {
	b = appendU32(append(b, 0x23), m.fuelGlobal)
	b = append(b, 0x42, 0x00, 0x53, 0x04, 0x40, 0x10)
	b = appendU32(b, m.importedFuncs)
	b = appendU32(append(b, 0x24), m.fuelGlobal)
	return append(b, 0x0b)
}
