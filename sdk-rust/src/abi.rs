//! The guest's side of a call: the buffers behind gateway_alloc and gateway_call, and the dispatch to the
//! handlers. The exports themselves are generated in the plugin's crate by `plugin!`, so that a plugin names its
//! handlers in one place and the SDK needs no global registration.

use crate::input::Input;
use crate::json::write_object;
use crate::outcome::Outcome;
use crate::wire::{self, WireInput, WireOutput};

/// A check handler: guardrail, hook check or transformer.
pub type CheckFn = fn(&Input<'_>) -> Outcome;
/// A routing condition: true when the request matches.
pub type ConditionFn = fn(&Input<'_>) -> bool;

/// ABI v1.1 (major<<16 | minor), returned by gateway_abi_version.
pub const ABI_VERSION: i32 = 0x0001_0001;

/// The smallest input buffer, so that small inputs reuse one buffer from the first call on.
const MIN_INPUT_BUFFER: usize = 1024;

// A wasm instance runs one call at a time, on one thread: these are touched only from the exports, never
// concurrently.
static mut INPUT_BUFFER: Vec<u8> = Vec::new();
static mut OUTPUT_BUFFER: Vec<u8> = Vec::new();
static mut PANIC_HOOK_SET: bool = false;

/// gateway_alloc: the buffer for the next input. ABI v1.1: it stays valid, untouched by the guest, until the
/// next gateway_alloc, so the host may write every input that fits there and call only gateway_call. A larger
/// request replaces it (the old one is freed: the host no longer uses it).
#[doc(hidden)]
pub fn alloc(size: i32) -> *mut u8 {
    if size < 0 {
        return std::ptr::null_mut();
    }
    let size = (size as usize).max(MIN_INPUT_BUFFER);
    unsafe {
        if size > INPUT_BUFFER.len() {
            INPUT_BUFFER = Vec::new(); // free the old buffer before asking for the new one
            INPUT_BUFFER = vec![0; size];
        }
        INPUT_BUFFER.as_mut_ptr()
    }
}

/// gateway_call: decodes the input at ptr, runs the handler for kind and returns the encoded output as
/// (out_ptr<<32 | out_len). The output stays valid until the next call.
#[doc(hidden)]
pub fn call(kind: i32, ptr: u32, len: u32, check: Option<CheckFn>, condition: Option<ConditionFn>) -> u64 {
    set_panic_hook();
    unsafe {
        let base = INPUT_BUFFER.as_ptr() as usize;
        let (ptr, len) = (ptr as usize, len as usize);
        OUTPUT_BUFFER.clear();
        if ptr >= base && ptr.checked_add(len).map_or(false, |end| end <= base + INPUT_BUFFER.len()) {
            dispatch(kind, &INPUT_BUFFER[ptr - base..ptr - base + len], check, condition, &mut OUTPUT_BUFFER);
        } else {
            error_output(&mut OUTPUT_BUFFER, "sdk: the input is not in the buffer gateway_alloc returned");
        }
        (OUTPUT_BUFFER.as_ptr() as u64) << 32 | OUTPUT_BUFFER.len() as u64
    }
}

/// gateway_transform: as gateway_call, for the transform handler (`plugin!(transform = ...)`).
#[doc(hidden)]
pub fn transform(kind: i32, ptr: u32, len: u32, transform: crate::transform::TransformFn) -> u64 {
    set_panic_hook();
    unsafe {
        let base = INPUT_BUFFER.as_ptr() as usize;
        let (ptr, len) = (ptr as usize, len as usize);
        OUTPUT_BUFFER.clear();
        if ptr >= base && ptr.checked_add(len).map_or(false, |end| end <= base + INPUT_BUFFER.len()) {
            crate::transform::dispatch_transform(kind, &INPUT_BUFFER[ptr - base..ptr - base + len], transform, &mut OUTPUT_BUFFER);
        } else {
            error_output(&mut OUTPUT_BUFFER, "sdk: the input is not in the buffer gateway_alloc returned");
        }
        (OUTPUT_BUFFER.as_ptr() as u64) << 32 | OUTPUT_BUFFER.len() as u64
    }
}

/// A panic aborts the instance (wasm has no unwinding here), which the gateway reports as a check error and
/// replaces the instance; the hook puts the panic's message into the request's log first.
fn set_panic_hook() {
    unsafe {
        if PANIC_HOOK_SET {
            return;
        }
        PANIC_HOOK_SET = true;
    }
    std::panic::set_hook(Box::new(|info| crate::host::log(crate::host::Level::Error, &format!("panic: {info}"))));
}

pub(crate) fn error_output(dst: &mut Vec<u8>, msg: &str) {
    wire::append_flag(dst, wire::TAG_VERDICT, true);
    wire::append_field(dst, wire::TAG_ERROR, msg.as_bytes());
}

/// Runs the handler for `kind` on the encoded input `b` and appends the encoded Output to `out`.
pub fn dispatch(kind: i32, b: &[u8], check: Option<CheckFn>, condition: Option<ConditionFn>, out: &mut Vec<u8>) {
    let decoded = match wire::decode_input(b) {
        Ok(d) => d,
        Err(e) => return error_output(out, &format!("sdk: {e}")),
    };
    let input = Input::new(&decoded);
    match (kind, check, condition) {
        (wire::KIND_CHECK, Some(check), _) => write_outcome(out, &check(&input)),
        (wire::KIND_CHECK, None, _) => error_output(out, "sdk: the plugin registers no check (name one in plugin!(check = ...))"),
        (wire::KIND_CONDITION, _, Some(condition)) => {
            let matched = condition(&input);
            wire::append_flag(out, wire::TAG_VERDICT, true);
            if matched {
                wire::append_flag(out, wire::TAG_MATCH, true);
            }
        }
        (wire::KIND_CONDITION, _, None) => {
            error_output(out, "sdk: the plugin registers no condition (name one in plugin!(condition = ...))")
        }
        _ => error_output(out, &format!("sdk: unknown call kind {kind}")),
    }
}

/// Encodes an Outcome, writing the data's JSON straight into the field (its length is patched afterwards).
pub(crate) fn write_outcome(out: &mut Vec<u8>, o: &Outcome) {
    let start = out.len();
    wire::append_flag(out, wire::TAG_VERDICT, o.pass);
    if let Some(data) = &o.data {
        let header = out.len();
        out.extend_from_slice(&[wire::TAG_DATA, 0, 0, 0, 0]);
        if let Err(e) = write_object(out, data, "") {
            out.truncate(start);
            return error_output(out, &format!("sdk: encode the data: {e}"));
        }
        let n = (out.len() - header - wire::HEADER_SIZE) as u32;
        out[header + 1..header + 5].copy_from_slice(&n.to_le_bytes());
    }
    if let Some(t) = &o.transformed_text {
        wire::append_field(out, wire::TAG_TRANSFORMED_TEXT, t.as_bytes());
    }
    if let Some(e) = &o.error {
        wire::append_field(out, wire::TAG_ERROR, e.as_bytes());
    }
}

/// Runs a handler exactly as gateway_call does (encoding `input`, decoding it, encoding the result) and returns
/// the Output decoded: for native tests of a plugin (`cargo test`).
pub fn run(kind: i32, input: &WireInput<'_>, check: Option<CheckFn>, condition: Option<ConditionFn>) -> WireOutput {
    let mut b = Vec::new();
    wire::encode_input(&mut b, input);
    let mut out = Vec::new();
    dispatch(kind, &b, check, condition, &mut out);
    wire::decode_output(&out).expect("the SDK's own encoding decodes")
}
