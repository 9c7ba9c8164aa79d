//! The host functions of module gateway_v1. Natively (tests), `log` writes to standard error, `now_unix_ms`
//! reads the system clock and `request_field` finds nothing.

/// Log levels of `log`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum Level {
    Debug = 0,
    Info = 1,
    Warn = 2,
    Error = 3,
}

#[cfg(target_arch = "wasm32")]
pub(crate) mod imports {
    #[link(wasm_import_module = "gateway_v1")]
    extern "C" {
        pub fn log(level: i32, ptr: *const u8, len: u32);
        pub fn now_unix_ms() -> i64;
        pub fn request_field(path_ptr: *const u8, path_len: u32, out_ptr: *mut u8, out_cap: u32) -> i32;
        pub fn kv_get(key_ptr: *const u8, key_len: u32, out_ptr: *mut u8, out_cap: u32) -> i32; // kv.rs
    }
}

/// Writes `msg` to the request's log (the host keeps 4 KiB of a line and limits lines per call and second).
pub fn log(level: Level, msg: &str) {
    #[cfg(target_arch = "wasm32")]
    unsafe {
        imports::log(level as i32, msg.as_ptr(), msg.len() as u32)
    }
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("{level:?}: {msg}");
}

/// The host's clock, in milliseconds since the Unix epoch (a guest has no other clock).
pub fn now_unix_ms() -> i64 {
    #[cfg(target_arch = "wasm32")]
    unsafe {
        imports::now_unix_ms()
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        use std::time::{SystemTime, UNIX_EPOCH};
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
    }
}

/// One field of the request as JSON text, by path: "params.temperature", "params.messages.0.role",
/// "metadata.user", "url.pathname". None when the request has no such field.
pub fn request_field(path: &str) -> Option<String> {
    #[cfg(target_arch = "wasm32")]
    {
        ask_host(512, |out, cap| unsafe { imports::request_field(path.as_ptr(), path.len() as u32, out, cap) })
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = path;
        None
    }
}

/// The guest side of the protocol request_field and kv_get share: `ask` fills the buffer when the value fits
/// and answers its length (-1: absent); a longer value gets a buffer of that length and another ask, a few times
/// at most (a value can change between two asks, and a misbehaving host must not keep us looping).
#[cfg(target_arch = "wasm32")]
pub(crate) fn ask_host(first: usize, ask: impl Fn(*mut u8, u32) -> i32) -> Option<String> {
    let mut buf = vec![0u8; first];
    for _ in 0..3 {
        let n = ask(buf.as_mut_ptr(), buf.len() as u32);
        if n < 0 {
            return None;
        }
        let n = n as usize;
        if n <= buf.len() {
            buf.truncate(n);
            return Some(String::from_utf8_lossy(&buf).into_owned());
        }
        buf = vec![0u8; n];
    }
    None
}
