//! Write gateway plugins (hooks, guardrails, routing conditions) in Rust. A plugin is a `cdylib` built for
//! `wasm32-wasi` that speaks the gateway's ABI v1.1; this crate does the ABI (exports, host imports, wire
//! encoding), reads parameters and writes JSON data, with no dependencies. See README.md.
//!
//! ```ignore
//! use gateway_plugin_sdk::{plugin, Input, Outcome};
//!
//! fn check(input: &Input) -> Outcome {
//!     let words = input.param_strings("words").unwrap_or_default();
//!     match words.iter().find(|w| input.text.to_lowercase().contains(w.as_str())) {
//!         Some(w) => Outcome::fail("deny-listed word").with("word", w.as_str()),
//!         None => Outcome::pass(),
//!     }
//! }
//!
//! plugin!(check = check);
//! ```

mod abi;
pub mod ascii;
mod host;
mod input;
pub mod json;
mod kv;
mod outcome;
pub mod regex;
mod transform;
pub mod unicode;
pub mod wire;

pub use abi::{run, CheckFn, ConditionFn, ABI_VERSION};
pub use host::{log, now_unix_ms, request_field, Level};
pub use input::Input;
pub use json::Json;
#[cfg(not(target_arch = "wasm32"))]
pub use kv::set_kv_for_test;
pub use kv::kv_get;
pub use outcome::Outcome;
pub use transform::{run_transform, Rewrite, TransformFn};

#[doc(hidden)]
pub mod __private {
    pub use crate::abi::{alloc, call, transform};
}

/// Makes the crate a gateway plugin: generates the ABI v1.1 exports (`gateway_abi_v1`, `gateway_abi_version`,
/// `gateway_alloc`, `gateway_call`) around the handlers named. Use it once, at the crate's root:
///
/// - `plugin!(check = my_check);` with `fn my_check(input: &Input) -> Outcome`;
/// - `plugin!(condition = my_condition);` with `fn my_condition(input: &Input) -> bool`;
/// - `plugin!(check = my_check, condition = my_condition);` for both;
/// - `transform = my_transform`, alone or beside the others (in any order), with
///   `fn my_transform(input: &Input) -> Rewrite`: a mutator hook's body rewrite, exported as
///   `gateway_transform` only when named.
///
/// It also defines `run_check` and `run_condition` (natively only), which run the handlers through the wire
/// encoding as the gateway would, for the plugin's `cargo test` (and `run_transform` when a transform is named).
#[macro_export]
macro_rules! plugin {
    ($($key:ident = $value:expr),+ $(,)?) => {
        $crate::plugin!(@collect [None] [None] [None] $($key = $value,)+);
    };
    // Each handler named, in any order, goes into its slot: [check] [condition] [transform].
    (@collect [$($c:tt)*] [$($d:tt)*] [$($t:tt)*] check = $v:expr, $($rest:tt)*) => {
        $crate::plugin!(@collect [Some($v)] [$($d)*] [$($t)*] $($rest)*);
    };
    (@collect [$($c:tt)*] [$($d:tt)*] [$($t:tt)*] condition = $v:expr, $($rest:tt)*) => {
        $crate::plugin!(@collect [$($c)*] [Some($v)] [$($t)*] $($rest)*);
    };
    (@collect [$($c:tt)*] [$($d:tt)*] [$($t:tt)*] transform = $v:expr, $($rest:tt)*) => {
        $crate::plugin!(@collect [$($c)*] [$($d)*] [Some($v)] $($rest)*);
    };
    (@collect [$($c:tt)*] [$($d:tt)*] [None]) => {
        $crate::plugin!(@exports $($c)*, $($d)*);
    };
    (@collect [$($c:tt)*] [$($d:tt)*] [Some($t:expr)]) => {
        $crate::plugin!(@exports $($c)*, $($d)*);
        const _: () = {
            const TRANSFORM: $crate::TransformFn = $t;

            #[cfg(target_arch = "wasm32")]
            #[no_mangle]
            pub extern "C" fn gateway_transform(kind: i32, ptr: u32, len: u32) -> u64 {
                $crate::__private::transform(kind, ptr, len, TRANSFORM)
            }
        };

        /// Runs the plugin's transform through the wire encoding, as the gateway would (for native tests).
        #[cfg(not(target_arch = "wasm32"))]
        #[allow(dead_code)]
        pub fn run_transform(input: &$crate::wire::WireInput<'_>) -> $crate::wire::WireOutput {
            $crate::run_transform(input, $t)
        }
    };
    (@exports $check:expr, $condition:expr) => {
        const _: () = {
            const CHECK: Option<$crate::CheckFn> = $check;
            const CONDITION: Option<$crate::ConditionFn> = $condition;

            #[cfg(target_arch = "wasm32")]
            #[no_mangle]
            pub extern "C" fn gateway_abi_v1() {}

            #[cfg(target_arch = "wasm32")]
            #[no_mangle]
            pub extern "C" fn gateway_abi_version() -> i32 {
                $crate::ABI_VERSION
            }

            #[cfg(target_arch = "wasm32")]
            #[no_mangle]
            pub extern "C" fn gateway_alloc(size: i32) -> *mut u8 {
                $crate::__private::alloc(size)
            }

            #[cfg(target_arch = "wasm32")]
            #[no_mangle]
            pub extern "C" fn gateway_call(kind: i32, ptr: u32, len: u32) -> u64 {
                $crate::__private::call(kind, ptr, len, CHECK, CONDITION)
            }
        };

        /// Runs the plugin's check through the wire encoding, as the gateway would (for native tests).
        #[cfg(not(target_arch = "wasm32"))]
        #[allow(dead_code)]
        pub fn run_check(input: &$crate::wire::WireInput<'_>) -> $crate::wire::WireOutput {
            $crate::run($crate::wire::KIND_CHECK, input, $check, $condition)
        }

        /// Runs the plugin's condition through the wire encoding, as the gateway would (for native tests).
        #[cfg(not(target_arch = "wasm32"))]
        #[allow(dead_code)]
        pub fn run_condition(input: &$crate::wire::WireInput<'_>) -> $crate::wire::WireOutput {
            $crate::run($crate::wire::KIND_CONDITION, input, $check, $condition)
        }
    };
}
