//! [`Context`], where a component is being rendered.

use std::collections::BTreeMap;

/// Where a component is being rendered (the WIT `context` record).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    /// Instance name: the module's name, unless the render names another instance
    /// (`opm mod build --instance`).
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
    /// The module's name (`name` is the instance's). Since contract 1.1.0: empty in a
    /// component built with the `contract-1-0` feature.
    pub module: String,
    /// The platform the render is for (`kubernetes`, `compose`), or empty when the providers
    /// name none. Since contract 1.1.0.
    pub platform: String,
    /// The version of the provider that holds this component. Since contract 1.1.0.
    pub provider_version: String,
    /// The FQN of the transformer called, so that a component several transformers name knows
    /// which it serves; empty in a renderer. Since contract 1.1.0.
    pub transformer: String,
}

/// The tracking label the host adds when the instance is not the module's own name.
pub const INSTANCE_LABEL: &str = "module.opmodel.dev/instance";

impl Context {
    /// What goes before the names of the objects rendered for this instance, so that two
    /// instances of a module in one namespace never share a name: nothing for the module's own
    /// instance (its objects keep their names), else the instance's name and `-`, as Helm puts
    /// the release's name before a chart's. It is what modules see as `${instance.prefix}`.
    pub fn name_prefix(&self) -> String {
        if self.labels.contains_key(INSTANCE_LABEL) {
            format!("{}-", self.name)
        } else {
            String::new()
        }
    }

    /// The name of the object `name` for this instance: `name` with the [`Self::name_prefix`].
    ///
    /// ```
    /// use opm_guest::Context;
    /// let own = Context { name: "shop".into(), ..Context::default() };
    /// assert_eq!(own.object_name("api"), "api");
    /// let mut second = Context { name: "shop-eu".into(), ..Context::default() };
    /// second.labels.insert("module.opmodel.dev/instance".into(), "shop-eu".into());
    /// assert_eq!(second.object_name("api"), "shop-eu-api");
    /// ```
    pub fn object_name(&self, name: &str) -> String {
        let mut prefixed = self.name_prefix();
        prefixed.push_str(name);
        prefixed
    }
}
