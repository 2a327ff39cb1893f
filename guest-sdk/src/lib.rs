//! The Rust SDK for opm transformers.
//!
//! Implement [`Transformer`] for a type and pass it to [`export!`]: built for
//! `wasm32-unknown-unknown`, the crate becomes a WebAssembly component that exports
//! `opm:transformer/transformer@1.2.0`, the newest version of the contract, and imports nothing
//! but `opm:transformer/log`; with the feature `contract-1-0` it is built against the frozen
//! 1.0.0 instead, for hosts that serve no newer one. Built natively, the same crate is ordinary
//! Rust, so a transform is unit-tested with `cargo test`.
//!
//! ```
//! use opm_guest::{Component, Context, TransformError, Transformer};
//! use serde_json::{json, Value};
//!
//! struct ConfigMapTransformer;
//!
//! impl Transformer for ConfigMapTransformer {
//!     fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
//!         let data: Value = component.require("configMap")?;
//!         opm_guest::log::debug(&format!("rendering config map {}", component.name()));
//!         Ok(vec![json!({
//!             "apiVersion": "v1",
//!             "kind": "ConfigMap",
//!             "metadata": {"name": component.name(), "namespace": context.namespace},
//!             "data": data["data"],
//!         })])
//!     }
//! }
//!
//! opm_guest::export!(ConfigMapTransformer);
//!
//! // Natively, the transform is a plain function call:
//! let component = Component::from_value(json!({
//!     "metadata": {"name": "settings"},
//!     "resources": ["opm.dev/resources/config@v1#ConfigMap"],
//!     "spec": {"configMap": {"data": {"mode": "fast"}}},
//! })).unwrap();
//! let out = ConfigMapTransformer::transform(&component, &Context::default()).unwrap();
//! assert_eq!(out[0]["data"]["mode"], "fast");
//! ```

// Lets the generated bindings name this crate by the same path from inside and outside it.
extern crate self as opm_guest;

#[cfg(all(target_arch = "wasm32", feature = "bump-allocator"))]
mod bump;
mod component;
mod context;
mod error;
pub mod log;
mod renderer;

pub use component::Component;
pub use context::{Context, INSTANCE_LABEL};
pub use error::TransformError;
pub use renderer::{Chunk, File, Mode, Options, RenderError, Rendered, Renderer};
pub use serde_json::{Map, Value, json};

/// A transformer: renders one component into zero or more platform resources.
///
/// The host calls `transform` once per matched component, in a fresh sandbox each time, so an
/// implementation keeps no state between calls.
pub trait Transformer {
    /// Renders `component` (the repository's `docs/module-format.md`) in `context` into platform
    /// resources, each a JSON object with `apiVersion`, `kind` and `metadata.name`.
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError>;
}

/// Exports a [`Transformer`] as this crate's WebAssembly component.
///
/// Call it once, at the top level of the transformer crate. It expands to nothing when the crate
/// is built natively, so the same crate can be unit-tested without WebAssembly.
#[macro_export]
macro_rules! export {
    ($transformer:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            struct OpmGuestExport;

            impl $crate::__private::bindings::exports::opm::transformer::transformer::Guest
                for OpmGuestExport
            {
                fn transform(
                    component: ::std::string::String,
                    context: $crate::__private::bindings::opm::transformer::types::Context,
                ) -> ::std::result::Result<
                    ::std::vec::Vec<::std::string::String>,
                    $crate::__private::bindings::opm::transformer::types::TransformError,
                > {
                    $crate::__private::call::<$transformer>(component, context)
                }
            }

            $crate::__private::bindings::export!(OpmGuestExport with_types_in $crate::__private::bindings);
        };
    };
}

#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub mod __private;

/// Every instance serves one call and is then thrown away, so the guest never needs to reuse
/// freed memory (see `bump.rs`).
#[cfg(all(target_arch = "wasm32", feature = "bump-allocator"))]
#[global_allocator]
static ALLOCATOR: bump::Bump = bump::Bump::new();
