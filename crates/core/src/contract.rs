//! The host–guest contract beyond the WIT types (`docs/host-guest-contract.md`): what a transformer
//! component must export and what it may import. Both the bundle checks
//! ([`crate::bundle::component`]), which refuse a component at load, and the sandbox (the crate
//! `opm-sandbox`), which links its imports, read it from here, so the two can never disagree.
//!
//! A transformer may import opm's own `log` and `types` interfaces, and the WASI 0.2 interfaces
//! other toolchains' components import (componentize-js, componentize-py, `wasm32-wasip2`,
//! wasi-libc through the preview-1 adapter). Those are satisfied by a context that grants
//! nothing (`crates/sandbox/src/wasi.rs`). Anything else — `wasi:http`, WASI 0.3, a host function of
//! another runtime — is refused when the bundle is loaded.
//!
//! ```
//! use opm_core::contract::is_allowed_import;
//! assert!(is_allowed_import("opm:transformer/log@1.0.0"));
//! assert!(is_allowed_import("opm:transformer/log@1.1.0"));
//! assert!(is_allowed_import("opm:transformer/log@1.2.0"));
//! assert!(is_allowed_import("wasi:cli/stdout@0.2.3"));
//! assert!(!is_allowed_import("wasi:http/outgoing-handler@0.2.0"));
//! assert!(!is_allowed_import("wasi:cli/stdout@0.3.0"));
//! ```

/// A version of the contract the host serves (`docs/host-guest-contract.md#versions-of-the-contract`).
/// A component says which it was built for by the version of the interface it exports, and
/// each call passes it the context of that version: the WIT of every version served is kept in
/// `wit/` (the newest `wit/transformer.wit`, each older one in `wit/VERSION/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Version {
    /// `opm:transformer@1.0.0`, the first: the context of seven fields.
    V1_0,
    /// `opm:transformer@1.1.0`: the context adds the module's name, the platform, the
    /// provider's version and the transformer's FQN.
    V1_1,
    /// `opm:transformer@1.2.0`: a renderer's file adds its mode.
    V1_2,
}

impl Version {
    /// Every version the host serves, oldest first.
    pub const SERVED: [Version; 3] = [Version::V1_0, Version::V1_1, Version::V1_2];

    /// The newest version, which the SDK builds against.
    pub const NEWEST: Version = Version::V1_2;

    /// Its semantic version, as the WIT package names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V1_0 => "1.0.0",
            Self::V1_1 => "1.1.0",
            Self::V1_2 => "1.2.0",
        }
    }

    /// The version at which `exports` holds the interface of `role`, the newest if it holds
    /// several.
    pub fn exported(exports: &[String], role: Role) -> Option<Version> {
        Self::SERVED
            .into_iter()
            .rev()
            .find(|version| exports.iter().any(|name| name == version.export(role)))
    }

    /// The interface a component of `role` exports at this version.
    pub fn export(self, role: Role) -> &'static str {
        match (role, self) {
            (Role::Transformer, Self::V1_0) => "opm:transformer/transformer@1.0.0",
            (Role::Transformer, Self::V1_1) => "opm:transformer/transformer@1.1.0",
            (Role::Renderer, Self::V1_0) => "opm:transformer/renderer@1.0.0",
            (Role::Renderer, Self::V1_1) => "opm:transformer/renderer@1.1.0",
            (Role::Transformer, Self::V1_2) => "opm:transformer/transformer@1.2.0",
            (Role::Renderer, Self::V1_2) => "opm:transformer/renderer@1.2.0",
        }
    }

    /// The versions served, in words: `1.0.0, 1.1.0 and 1.2.0`.
    pub fn served_summary() -> String {
        let versions: Vec<&str> = Self::SERVED.iter().map(|v| v.as_str()).collect();
        match versions.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => versions.join(""),
        }
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for Version {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// What a component is to a provider: one of its transformers, or its renderer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Exports `transformer`.
    Transformer,
    /// Exports `renderer`.
    Renderer,
}

impl Role {
    /// The interface a component of this role exports, without its version.
    pub fn interface(self) -> &'static str {
        match self {
            Self::Transformer => "opm:transformer/transformer",
            Self::Renderer => "opm:transformer/renderer",
        }
    }
}

/// Why a component that exports `exports` is not one of `role`, in words.
pub fn not_exported(role: Role, exports: &[String]) -> String {
    format!(
        "it does not export {} (at a version this opm serves, {}; it exports: {})",
        role.interface(),
        Version::served_summary(),
        if exports.is_empty() {
            "nothing".to_owned()
        } else {
            exports.join(", ")
        }
    )
}

/// opm's own interfaces a component may import, at each version served: `log`, and `types`,
/// which holds only types.
pub const OPM_IMPORTS: &[&str] = &[
    "opm:transformer/log@1.0.0",
    "opm:transformer/types@1.0.0",
    "opm:transformer/log@1.1.0",
    "opm:transformer/types@1.1.0",
    "opm:transformer/log@1.2.0",
    "opm:transformer/types@1.2.0",
];

/// The WASI 0.2 interfaces a transformer may import, as `package/interface`. Each is linked to
/// the deny-all context: no files, sockets, environment or arguments; fixed clocks; seeded
/// randomness; stdout and stderr captured as logs.
pub const WASI_INTERFACES: &[&str] = &[
    "wasi:cli/environment",
    "wasi:cli/exit",
    "wasi:cli/stdin",
    "wasi:cli/stdout",
    "wasi:cli/stderr",
    "wasi:cli/terminal-input",
    "wasi:cli/terminal-output",
    "wasi:cli/terminal-stdin",
    "wasi:cli/terminal-stdout",
    "wasi:cli/terminal-stderr",
    "wasi:clocks/monotonic-clock",
    "wasi:clocks/wall-clock",
    "wasi:filesystem/types",
    "wasi:filesystem/preopens",
    "wasi:io/error",
    "wasi:io/poll",
    "wasi:io/streams",
    "wasi:random/random",
    "wasi:random/insecure",
    "wasi:random/insecure-seed",
    "wasi:sockets/network",
    "wasi:sockets/instance-network",
    "wasi:sockets/tcp",
    "wasi:sockets/tcp-create-socket",
    "wasi:sockets/udp",
    "wasi:sockets/udp-create-socket",
    "wasi:sockets/ip-name-lookup",
];

/// The newest WASI 0.2 patch release the sandbox implements; any `0.2.z` up to it is accepted
/// (the linker satisfies an older patch release with the newer definitions).
pub const WASI_NEWEST_PATCH: u64 = 12;

/// Whether a component may import `name` (`package:namespace/interface@version`).
pub fn is_allowed_import(name: &str) -> bool {
    if OPM_IMPORTS.contains(&name) {
        return true;
    }
    let Some((interface, version)) = name.split_once('@') else {
        return false;
    };
    WASI_INTERFACES.contains(&interface)
        && semver::Version::parse(version).is_ok_and(|v| {
            v.major == 0 && v.minor == 2 && v.patch <= WASI_NEWEST_PATCH && v.pre.is_empty()
        })
}

/// The imports of `imports` that a transformer may not have, in order.
pub fn disallowed_imports<'a>(imports: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    imports
        .into_iter()
        .filter(|name| !is_allowed_import(name))
        .map(str::to_owned)
        .collect()
}

/// What a transformer may import, in words, for error messages.
pub fn allowed_imports_summary() -> String {
    format!(
        "{} and WASI 0.2.0–0.2.{WASI_NEWEST_PATCH} interfaces of wasi:cli, wasi:clocks, wasi:filesystem, wasi:io, wasi:random and wasi:sockets",
        OPM_IMPORTS.join(", ")
    )
}

/// The WebAssembly features the sandbox's engine enables, so a bundle's components are
/// validated at load exactly as the engine will compile them. Pinned here rather than asked of
/// an engine, so that checking a bundle needs no engine (the fuzz targets build without one);
/// a test fails the day the engine's features and these part.
pub fn wasm_features() -> wasmparser::WasmFeatures {
    use wasmparser::WasmFeatures as F;
    // What `wasmtime::Engine::new(&engine_config())` enables on wasmtime 48.
    const ENGINE: F = F::empty()
        .union(F::MUTABLE_GLOBAL)
        .union(F::SATURATING_FLOAT_TO_INT)
        .union(F::SIGN_EXTENSION)
        .union(F::REFERENCE_TYPES)
        .union(F::MULTI_VALUE)
        .union(F::BULK_MEMORY)
        .union(F::SIMD)
        .union(F::RELAXED_SIMD)
        .union(F::TAIL_CALL)
        .union(F::FLOATS)
        .union(F::MULTI_MEMORY)
        .union(F::MEMORY64)
        .union(F::EXTENDED_CONST)
        .union(F::COMPONENT_MODEL)
        .union(F::FUNCTION_REFERENCES)
        .union(F::GC)
        .union(F::CALL_INDIRECT_OVERLONG)
        .union(F::BULK_MEMORY_OPT);
    ENGINE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wasi_is_allowed_only_at_a_0_2_version_the_sandbox_implements() {
        assert!(is_allowed_import("wasi:io/streams@0.2.0"));
        assert!(is_allowed_import("wasi:io/streams@0.2.12"));
        assert!(!is_allowed_import("wasi:io/streams@0.2.13"));
        assert!(!is_allowed_import("wasi:io/streams@0.2.0-rc-2023-11-10"));
        assert!(!is_allowed_import("wasi:io/streams"));
        assert!(!is_allowed_import("wasi:io/streams@1.0.0"));
        assert!(!is_allowed_import("wasi:http/types@0.2.0"));
        assert!(!is_allowed_import("opm:transformer/log@2.0.0"));
        assert!(!is_allowed_import("opm:transformer/transformer@1.0.0"));
        assert!(!is_allowed_import("opm:transformer/log@1.3.0"));
    }

    #[test]
    fn a_component_is_of_the_newest_version_it_exports() {
        let exports = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let both = exports(&[
            "opm:transformer/transformer@1.0.0",
            "opm:transformer/transformer@1.1.0",
        ]);
        assert_eq!(
            Version::exported(&both, Role::Transformer),
            Some(Version::V1_1)
        );
        let all = exports(&[
            "opm:transformer/transformer@1.1.0",
            "opm:transformer/transformer@1.2.0",
        ]);
        assert_eq!(
            Version::exported(&all, Role::Transformer),
            Some(Version::V1_2)
        );
        assert_eq!(Version::exported(&both, Role::Renderer), None);
        let old = exports(&["opm:transformer/renderer@1.0.0"]);
        assert_eq!(Version::exported(&old, Role::Renderer), Some(Version::V1_0));
        let newer = exports(&["opm:transformer/transformer@1.3.0"]);
        assert_eq!(Version::exported(&newer, Role::Transformer), None);
        assert_eq!(Version::served_summary(), "1.0.0, 1.1.0 and 1.2.0");
        for role in [Role::Transformer, Role::Renderer] {
            for version in Version::SERVED {
                let export = version.export(role);
                assert_eq!(export, format!("{}@{version}", role.interface()));
            }
        }
    }

    #[test]
    fn disallowed_imports_keep_their_order() {
        let imports = [
            "evil:host/escape",
            "wasi:cli/stdout@0.2.0",
            "wasi:http/outgoing-handler@0.2.0",
        ];
        assert_eq!(
            disallowed_imports(imports),
            ["evil:host/escape", "wasi:http/outgoing-handler@0.2.0"]
        );
    }
}
