//! The plugin key-value store of the plugin's workspace (ABI v1.1's `kv_get`): text values the gateway's admins
//! set through its admin API (`PUT /v1/plugin-kv/{key}`), so that a plugin's data (a deny list, say) changes
//! without a new module. Natively (tests) there is no host: `kv_get` answers what `set_kv_for_test` set.

/// The value stored under `key` in the workspace's plugin key-value store, or None when the key is absent. It
/// asks the host on every call (the host answers from memory), so a value changed through the admin API is
/// seen by the next check: read it per call rather than keeping it. Keys are 1 to 256 bytes of printable ASCII
/// without spaces or '/'; values are at most 1 MiB of text. A plugin that uses it needs a gateway speaking ABI
/// v1.1 (an older one refuses to load it: the import is missing there).
pub fn kv_get(key: &str) -> Option<String> {
    #[cfg(target_arch = "wasm32")]
    {
        crate::host::ask_host(4096, |out, cap| unsafe { crate::host::imports::kv_get(key.as_ptr(), key.len() as u32, out, cap) })
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        native::VALUES.lock().ok()?.as_ref()?.get(key).cloned()
    }
}

/// Makes `kv_get` answer from `values` (key, value) in a native build, for a plugin's tests; None makes every
/// key absent, as it is by default. It exists only outside wasm, where `kv_get` has no host to ask.
#[cfg(not(target_arch = "wasm32"))]
pub fn set_kv_for_test(values: Option<&[(&str, &str)]>) {
    let map = values.map(|vs| vs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
    if let Ok(mut guard) = native::VALUES.lock() {
        *guard = map;
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use std::collections::HashMap;
    use std::sync::Mutex;

    pub static VALUES: Mutex<Option<HashMap<String, String>>> = Mutex::new(None);
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    #[test]
    fn native_values() {
        assert_eq!(kv_get("banned"), None);
        set_kv_for_test(Some(&[("banned", "alpha\nbeta")]));
        assert_eq!(kv_get("banned").as_deref(), Some("alpha\nbeta"));
        assert_eq!(kv_get("other"), None);
        set_kv_for_test(None);
        assert_eq!(kv_get("banned"), None);
    }
}
