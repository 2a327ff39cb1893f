//! [`Context`], where a component is being rendered.

use std::collections::BTreeMap;

/// Where a component is being rendered (the WIT `context` record).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    /// Module name.
    pub name: String,
    /// Target namespace.
    pub namespace: String,
    /// Module version.
    pub version: String,
    /// Name of the provider doing the rendering.
    pub provider: String,
    /// Render time, RFC 3339.
    pub timestamp: String,
    /// Whether the render runs in strict mode.
    pub strict: bool,
    /// Module labels plus the tracking labels; put them on every resource's `metadata.labels`.
    pub labels: BTreeMap<String, String>,
}
