//! Checks a transformer's component without compiling it: that it is a WebAssembly component
//! (not a core module, not precompiled native code), that it validates, that it exports
//! `opm:transformer/transformer` at a version of the contract the host serves, with the
//! `transform` signature of that version's WIT, and that it imports nothing the sandbox does
//! not offer
//! (`docs/host-guest-contract.md#what-a-component-must-be`).
//!
//! ```
//! use opm_core::bundle::component::{self, ComponentError};
//! let core_module = b"\0asm\x01\0\0\0";
//! assert!(matches!(component::check(core_module), Err(ComponentError::CoreModule)));
//! ```

use wasmparser::component_types::{ComponentDefinedType, ComponentEntityType, ComponentValType};
use wasmparser::{
    FuncValidatorAllocations, Parser, Payload, PrimitiveValType, ValidPayload, Validator,
};

use crate::contract::{self, Role, Version};

/// The context record of `version`, as [`describe`] writes it.
fn context_type(version: Version) -> &'static str {
    match version {
        Version::V1_0 => {
            "record { name: string, namespace: string, version: string, provider: string, timestamp: string, strict: bool, labels: list<tuple<string, string>> }"
        }
        Version::V1_1 | Version::V1_2 => {
            "record { name: string, namespace: string, version: string, provider: string, timestamp: string, strict: bool, labels: list<tuple<string, string>>, module: string, platform: string, provider-version: string, transformer: string }"
        }
    }
}

/// The signature `transform` must have at `version`, as [`describe`] writes it.
pub fn transform_signature(version: Version) -> String {
    format!(
        "func(component: string, context: {}) -> result<list<string>, variant {{ invalid-component(string), failed(string) }}>",
        context_type(version)
    )
}

/// The type `render` must have at `version`, as [`describe`] words it.
pub fn render_signature(version: Version) -> String {
    // 1.2.0 gave a file its mode.
    let mode = match version {
        Version::V1_0 | Version::V1_1 => "",
        Version::V1_2 => ", mode: enum { regular, private, executable }",
    };
    format!(
        "func(resources: list<record {{ component: string, transformer: string, api-version: string, kind: string, name: string, namespace: string, value: string }}>, context: {}, options: record {{ format: string, split: bool, directory: bool }}) -> result<list<record {{ path: string, content: list<variant {{ bytes(list<u8>), yaml(u32) }}>{mode} }}>, variant {{ refused(list<tuple<u32, string>>), failed(string) }}>",
        context_type(version)
    )
}

/// What a checked component imports and exports, and what made it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ComponentInfo {
    /// Its size in bytes.
    pub size: usize,
    /// The names it imports (interfaces with versions).
    pub imports: Vec<String>,
    /// The names it exports.
    pub exports: Vec<String>,
    /// The version of the contract it was built for: that of the interface it exports.
    pub contract: Version,
    /// What its producers sections say made it.
    pub producers: Producers,
}

/// The `producers` custom sections of a component and every module and component inside it
/// (the tool conventions' record of source languages and tools), each entry `NAME VERSION`,
/// without repeats, in the order found.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Producers {
    /// Source languages (`Rust`, `C11`, …).
    pub language: Vec<String>,
    /// Tools that produced or transformed it (`rustc`, `clang`, `wit-component`, …).
    pub processed_by: Vec<String>,
    /// SDKs it was built with.
    pub sdk: Vec<String>,
    /// Shared libraries its modules import from (`libpython3.14.so`), as dynamically linked
    /// components (componentize-py's) name them.
    pub linked: Vec<String>,
}

impl Producers {
    /// The language the component's transformer was written in, as a person names it. An
    /// interpreter's component names the interpreter's own languages too (CPython is C,
    /// SpiderMonkey is C++, their glue is Rust), so the interpreted language wins: Python when
    /// it links `libpython3.N.so` (componentize-py), JavaScript when a producer says so
    /// (componentize-js); then the language of the wit-bindgen generator that made the
    /// bindings; then Rust, whose standard library links C; then the first named.
    pub fn source_language(&self) -> Option<String> {
        if let Some(python) = self.linked.iter().find_map(|lib| {
            lib.strip_prefix("libpython")
                .and_then(|rest| rest.strip_suffix(".so"))
        }) {
            return Some(format!("Python {python}"));
        }
        let named = |prefix: &str| self.language.iter().any(|l| l.starts_with(prefix));
        if named("JavaScript") {
            return Some("JavaScript".into());
        }
        // The bindings generator names the guest's language; the WASI adapter a C guest links
        // is Rust, so `language` alone would say Rust.
        let generator = self.processed_by.iter().find_map(|tool| {
            let name = tool.split(' ').next()?;
            name.strip_prefix("wit-bindgen-")
        });
        if let Some(generator) = generator {
            return Some(
                match generator {
                    "c" => "C",
                    "cpp" => "C++",
                    "rust" => "Rust",
                    "go" => "Go",
                    "csharp" => "C#",
                    "moonbit" => "MoonBit",
                    other => other,
                }
                .to_owned(),
            );
        }
        if named("Rust") {
            return Some("Rust".into());
        }
        let first = self.language.first()?;
        let first = first.split(' ').next().unwrap_or(first);
        Some(if first.starts_with("C_plus_plus") {
            "C++".into()
        } else if first.starts_with('C') && first[1..].chars().all(|c| c.is_ascii_digit()) {
            "C".into()
        } else {
            first.to_owned()
        })
    }

    /// The tools, for a person: the processed-by and SDK entries, comma-separated, without the
    /// parenthesized commit details some versions carry.
    pub fn toolchain(&self) -> String {
        let tools: Vec<&str> = self
            .processed_by
            .iter()
            .chain(&self.sdk)
            .map(|tool| tool.split(" (").next().unwrap_or(tool))
            .collect();
        tools.join(", ")
    }

    fn add(&mut self, reader: wasmparser::ProducersSectionReader<'_>) -> wasmparser::Result<()> {
        for field in reader {
            let field = field?;
            let list = match field.name {
                "language" => &mut self.language,
                "processed-by" => &mut self.processed_by,
                "sdk" => &mut self.sdk,
                _ => continue,
            };
            for value in field.values {
                let value = value?;
                let entry = format!("{} {}", value.name, value.version)
                    .trim()
                    .to_owned();
                if !list.contains(&entry) {
                    list.push(entry);
                }
            }
        }
        Ok(())
    }
}

/// Why a component is not one opm runs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ComponentError {
    /// The bytes are native code, such as a module precompiled by wasmtime.
    #[error(
        "it is a precompiled artifact ({0}), not a WebAssembly component; opm never loads compiled code from a bundle"
    )]
    Precompiled(&'static str),
    /// The bytes are not WebAssembly at all.
    #[error("it is not WebAssembly (it does not start with \\0asm)")]
    NotWasm,
    /// A core module, not a component.
    #[error(
        "it is a core WebAssembly module, not a component; `opm provider pack` turns core modules built with wit-bindgen into components"
    )]
    CoreModule,
    /// The component does not validate.
    #[error("it is not a valid WebAssembly component: {0}")]
    Invalid(String),
    /// It does not export the transformer interface at all.
    #[error("{}", contract::not_exported(Role::Transformer, exports))]
    MissingExport {
        /// What it exports instead.
        exports: Vec<String>,
    },
    /// It exports the transformer interface at a version the host does not serve.
    #[error("{}", unserved(found))]
    WrongVersion {
        /// The export it has.
        found: String,
    },
    /// `transform` has the wrong type.
    #[error(
        "its {} export has transform: {found}, but version {version} of the contract says transform: {}",
        version.export(Role::Transformer),
        transform_signature(*version)
    )]
    WrongSignature {
        /// The version it exports.
        version: Version,
        /// The type it has.
        found: String,
    },
    /// It is not a renderer: it lacks the renderer export, or `render` has the wrong type.
    #[error("{0}")]
    NotRenderer(String),
    /// A function's code is larger than a compiler is given.
    #[error(
        "its function #{index} is {size} bytes of code, over the limit of {MAX_FUNCTION_BYTES} \
         bytes per function (a compiler's memory grows with a function's size: 3 MB took \
         Cranelift past 10 GB)"
    )]
    FunctionTooLarge {
        /// The function's position among all the component's function bodies.
        index: usize,
        /// Its code's size.
        size: usize,
    },
    /// It imports interfaces the sandbox does not offer.
    #[error("it imports {}, which the sandbox does not offer (allowed: {})", .imports.join(", "), contract::allowed_imports_summary())]
    DisallowedImports {
        /// The offending imports.
        imports: Vec<String>,
    },
}

/// Why the export `found` (`package/interface@version`), at a version not served, is refused:
/// a newer minor version of the host's major one is one a newer opm may serve.
fn unserved(found: &str) -> String {
    let version = |text: &str| semver::Version::parse(text).ok();
    let newer = match (
        found.split_once('@').and_then(|(_, v)| version(v)),
        version(Version::NEWEST.as_str()),
    ) {
        (Some(found), Some(newest)) => found.major == newest.major && found > newest,
        _ => false,
    };
    format!(
        "it exports {found}, a version of the contract this opm does not serve (it serves {}{})",
        Version::served_summary(),
        if newer { "; a newer opm may" } else { "" }
    )
}

/// Checks `bytes`, a provider's renderer, and returns what it imports and exports: a
/// component, importing only what the sandbox offers, exporting `render` with the contract's
/// signature.
pub fn check_renderer(bytes: &[u8]) -> Result<ComponentInfo, ComponentError> {
    renderer_with(bytes, Bodies::Validate)
}

/// [`check_renderer`] but for the function bodies, which compiling validates.
pub fn check_renderer_structure(bytes: &[u8]) -> Result<ComponentInfo, ComponentError> {
    renderer_with(bytes, Bodies::Skip)
}

/// Whether a check validates the code of every function, or leaves it to the compiler: what
/// takes most of a check's time, and what compiling a component does anyway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bodies {
    Validate,
    Skip,
}

fn renderer_with(bytes: &[u8], bodies: Bodies) -> Result<ComponentInfo, ComponentError> {
    let (scan, size) = scan_checked(bytes, bodies)?;
    let Some(version) = Version::exported(&scan.exports, Role::Renderer) else {
        return Err(ComponentError::NotRenderer(
            match other_version(&scan.exports, Role::Renderer) {
                Some(found) => unserved(found),
                None => contract::not_exported(Role::Renderer, &scan.exports),
            },
        ));
    };
    let item = scan
        .types
        .component_item_for_export(version.export(Role::Renderer))
        .expect("an export found by name has a type");
    let found = signature(&scan.types, item.ty, "render");
    if found != render_signature(version) {
        return Err(ComponentError::NotRenderer(format!(
            "its {} export has render: {found}, but version {version} of the contract says render: {}",
            version.export(Role::Renderer),
            render_signature(version)
        )));
    }
    Ok(scan.info(size, version))
}

/// The export of `exports` that is the interface of `role` at some version, if any.
fn other_version(exports: &[String], role: Role) -> Option<&String> {
    exports
        .iter()
        .find(|e| e.split('@').next() == Some(role.interface()))
}

/// The type of the function `name` of the exported instance `ty`, in words.
fn signature(types: &wasmparser::types::Types, ty: ComponentEntityType, name: &str) -> String {
    match ty {
        ComponentEntityType::Instance(id) => match types[id].exports.get(name) {
            Some(function) => match function.ty {
                ComponentEntityType::Func(func) => {
                    let func = &types[func];
                    let params: Vec<String> = func
                        .params
                        .iter()
                        .map(|(name, ty)| format!("{}: {}", name.as_str(), describe(types, *ty)))
                        .collect();
                    let result = func
                        .result
                        .map(|ty| format!(" -> {}", describe(types, ty)))
                        .unwrap_or_default();
                    format!("func({}){result}", params.join(", "))
                }
                _ => "not a function".into(),
            },
            None => format!("nothing (no {name} function)"),
        },
        _ => "not an instance".into(),
    }
}

/// What [`check`] and [`check_renderer`] check alike: native code, not a component, a
/// component that does not validate or imports what the sandbox does not offer.
fn scan_checked(bytes: &[u8], bodies: Bodies) -> Result<(Scan, usize), ComponentError> {
    if let Some(kind) = native_code(bytes) {
        return Err(ComponentError::Precompiled(kind));
    }
    if !bytes.starts_with(b"\0asm") {
        return Err(ComponentError::NotWasm);
    }
    if Parser::is_core_wasm(bytes) {
        return Err(ComponentError::CoreModule);
    }
    let scan = scan(bytes, bodies)?;
    let disallowed = contract::disallowed_imports(scan.imports.iter().map(String::as_str));
    if !disallowed.is_empty() {
        return Err(ComponentError::DisallowedImports {
            imports: disallowed,
        });
    }
    Ok((scan, bytes.len()))
}

/// Checks `bytes` and returns what the component imports and exports.
pub fn check(bytes: &[u8]) -> Result<ComponentInfo, ComponentError> {
    check_with(bytes, Bodies::Validate)
}

/// [`check`] but for the function bodies, which compiling validates: what a render checks of
/// each component it is about to compile or load.
pub fn check_structure(bytes: &[u8]) -> Result<ComponentInfo, ComponentError> {
    check_with(bytes, Bodies::Skip)
}

fn check_with(bytes: &[u8], bodies: Bodies) -> Result<ComponentInfo, ComponentError> {
    let (scan, size) = scan_checked(bytes, bodies)?;
    let Some(version) = Version::exported(&scan.exports, Role::Transformer) else {
        if let Some(found) = other_version(&scan.exports, Role::Transformer) {
            return Err(ComponentError::WrongVersion {
                found: found.clone(),
            });
        }
        return Err(ComponentError::MissingExport {
            exports: scan.exports,
        });
    };
    let item = scan
        .types
        .component_item_for_export(version.export(Role::Transformer))
        .expect("an export found by name has a type");
    let found = signature(&scan.types, item.ty, "transform");
    if found != transform_signature(version) {
        return Err(ComponentError::WrongSignature { version, found });
    }
    Ok(scan.info(size, version))
}

/// The module WASI preview1 imports come from, which the adapter turns into WASI 0.2.
const WASI_PREVIEW1: &str = "wasi_snapshot_preview1";

/// Turns a core module built with wit-bindgen (which embeds its WIT world) into a component.
/// A module that imports WASI preview1 — a C guest built against wasi-libc, say — gets the
/// preview1 reactor adapter of the host's wasmtime line, which turns those imports into WASI
/// 0.2 ones that the sandbox's deny-all WASI serves.
pub fn componentize(core: &[u8]) -> anyhow::Result<Vec<u8>> {
    use wasi_preview1_component_adapter_provider as adapter;
    let mut encoder = wit_component::ComponentEncoder::default().module(core)?;
    if imports_module(core, WASI_PREVIEW1)? {
        encoder = encoder.adapter(
            adapter::WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME,
            adapter::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
        )?;
    }
    encoder.validate(true).encode()
}

/// Whether the core module `core` imports anything from `module`.
fn imports_module(core: &[u8], module: &str) -> wasmparser::Result<bool> {
    for payload in Parser::new(0).parse_all(core) {
        if let Payload::ImportSection(section) = payload? {
            for import in section.into_imports() {
                if import?.module == module {
                    return Ok(true);
                }
            }
        }
    }
    Ok(false)
}

/// The outermost component's types, imports and exports, and every producers section.
struct Scan {
    types: wasmparser::types::Types,
    imports: Vec<String>,
    exports: Vec<String>,
    producers: Producers,
}

impl Scan {
    /// What a check returns of a component of `size` bytes built for `contract`.
    fn info(self, size: usize, contract: Version) -> ComponentInfo {
        ComponentInfo {
            size,
            imports: self.imports,
            exports: self.exports,
            contract,
            producers: self.producers,
        }
    }
}

/// The largest function body a component may have, in bytes of code: 2.4 times the largest
/// seen in a real component (CPython's interpreter loop in componentize-py's, 427 KB; the
/// largest of componentize-js's is 172 KB, of Rust transformers' 33 KB). The compilers'
/// memory and time grow with a function's size, and a function of 3 MB took Winch to 1.7 GB
/// and Cranelift past 10 GB.
pub const MAX_FUNCTION_BYTES: usize = 1 << 20;

/// Validates the whole component — structure, types and, with [`Bodies::Validate`], every
/// function body — with exactly the WebAssembly features the sandbox's engine enables, and
/// collects the names of the outermost component's imports and exports. What passes here
/// compiles: a component that needs a feature the engine lacks (shared memory, say) is refused
/// before it is compiled, not halfway through a render.
fn scan(bytes: &[u8], bodies: Bodies) -> Result<Scan, ComponentError> {
    let invalid = |e: wasmparser::BinaryReaderError| ComponentError::Invalid(e.to_string());
    let mut validator = Validator::new_with_features(contract::wasm_features());
    let mut allocations = FuncValidatorAllocations::default();
    let (mut imports, mut exports, mut types) = (Vec::new(), Vec::new(), None);
    let mut producers = Producers::default();
    let mut depth = 0usize;
    let mut function = 0usize;
    for payload in Parser::new(0).parse_all(bytes) {
        let payload = payload.map_err(invalid)?;
        match &payload {
            Payload::CodeSectionEntry(body) => {
                let size = body.range().len();
                if size > MAX_FUNCTION_BYTES {
                    return Err(ComponentError::FunctionTooLarge {
                        index: function,
                        size,
                    });
                }
                function += 1;
            }
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(section) if depth == 0 => {
                for import in section.clone() {
                    imports.push(import.map_err(invalid)?.name.name.to_owned());
                }
            }
            Payload::ComponentExportSection(section) if depth == 0 => {
                for export in section.clone() {
                    exports.push(export.map_err(invalid)?.name.name.to_owned());
                }
            }
            Payload::ImportSection(section) if depth > 0 => {
                for import in section.clone().into_imports() {
                    let module = import.map_err(invalid)?.module;
                    if module.ends_with(".so") && !producers.linked.iter().any(|m| m == module) {
                        producers.linked.push(module.to_owned());
                    }
                }
            }
            Payload::CustomSection(section) => {
                if let wasmparser::KnownCustom::Producers(reader) = section.as_known() {
                    producers.add(reader).map_err(invalid)?;
                }
            }
            _ => {}
        }
        match validator.payload(&payload).map_err(invalid)? {
            ValidPayload::End(end) => types = Some(end),
            ValidPayload::Func(func, body) if bodies == Bodies::Validate => {
                let mut func = func.into_validator(std::mem::take(&mut allocations));
                func.validate(&body).map_err(invalid)?;
                allocations = func.into_allocations();
            }
            _ => {}
        }
    }
    let types = types.ok_or_else(|| ComponentError::Invalid("it ends early".into()))?;
    Ok(Scan {
        types,
        imports,
        exports,
        producers,
    })
}

/// A component value type in WIT-like syntax, type names left out, so two components that
/// spell one type differently describe it the same way.
pub fn describe(types: &wasmparser::types::Types, ty: ComponentValType) -> String {
    let id = match ty {
        ComponentValType::Primitive(primitive) => return primitive_name(primitive).into(),
        ComponentValType::Type(id) => id,
    };
    let inner = |ty: &ComponentValType| describe(types, *ty);
    let optional = |ty: &Option<ComponentValType>| ty.as_ref().map_or("_".into(), inner);
    match &types[id] {
        ComponentDefinedType::Primitive(primitive) => primitive_name(*primitive).into(),
        ComponentDefinedType::Record(record) => {
            let fields: Vec<String> = record
                .fields
                .iter()
                .map(|(name, ty)| format!("{}: {}", name.as_str(), inner(ty)))
                .collect();
            format!("record {{ {} }}", fields.join(", "))
        }
        ComponentDefinedType::Variant(variant) => {
            let cases: Vec<String> = variant
                .cases
                .iter()
                .map(|(name, case)| match &case.ty {
                    Some(ty) => format!("{}({})", name.as_str(), inner(ty)),
                    None => name.as_str().to_owned(),
                })
                .collect();
            format!("variant {{ {} }}", cases.join(", "))
        }
        ComponentDefinedType::List { element, .. } => format!("list<{}>", inner(element)),
        ComponentDefinedType::Tuple(tuple) => {
            let items: Vec<String> = tuple.types.iter().map(inner).collect();
            format!("tuple<{}>", items.join(", "))
        }
        ComponentDefinedType::Option { ty, .. } => format!("option<{}>", inner(ty)),
        ComponentDefinedType::Result { ok, err, .. } => {
            format!("result<{}, {}>", optional(ok), optional(err))
        }
        ComponentDefinedType::Enum(cases) => {
            let cases: Vec<&str> = cases.iter().map(|c| c.as_str()).collect();
            format!("enum {{ {} }}", cases.join(", "))
        }
        ComponentDefinedType::Flags(flags) => {
            let flags: Vec<&str> = flags.iter().map(|c| c.as_str()).collect();
            format!("flags {{ {} }}", flags.join(", "))
        }
        other => format!("{other:?}")
            .split([' ', '{', '('])
            .next()
            .unwrap_or("type")
            .to_lowercase(),
    }
}

fn primitive_name(primitive: PrimitiveValType) -> &'static str {
    match primitive {
        PrimitiveValType::Bool => "bool",
        PrimitiveValType::S8 => "s8",
        PrimitiveValType::U8 => "u8",
        PrimitiveValType::S16 => "s16",
        PrimitiveValType::U16 => "u16",
        PrimitiveValType::S32 => "s32",
        PrimitiveValType::U32 => "u32",
        PrimitiveValType::S64 => "s64",
        PrimitiveValType::U64 => "u64",
        PrimitiveValType::F32 => "f32",
        PrimitiveValType::F64 => "f64",
        PrimitiveValType::Char => "char",
        PrimitiveValType::String => "string",
        _ => "primitive",
    }
}

/// What kind of native code `bytes` are, if they look like an executable or object file.
fn native_code(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x7fELF") {
        Some("an ELF object, as wasmtime's precompiled .cwasm files are")
    } else if bytes.starts_with(&[0xcf, 0xfa, 0xed, 0xfe])
        || bytes.starts_with(&[0xfe, 0xed, 0xfa, 0xcf])
    {
        Some("a Mach-O object")
    } else if bytes.starts_with(b"MZ") {
        Some("a PE executable")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `value` as unsigned LEB128.
    fn leb(mut value: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (value & 0x7f) as u8;
            value >>= 7;
            if value == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }

    /// A section `id` holding `content`.
    fn section(id: u8, content: &[u8], out: &mut Vec<u8>) {
        out.push(id);
        leb(content.len(), out);
        out.extend_from_slice(content);
    }

    /// A component holding one core module with one function of `nops` `nop` instructions.
    fn component_with_a_function_of(nops: usize) -> Vec<u8> {
        let mut module = b"\0asm\x01\0\0\0".to_vec();
        section(1, &[1, 0x60, 0, 0], &mut module);
        section(3, &[1, 0], &mut module);
        let mut body = vec![0];
        body.resize(1 + nops, 0x01);
        body.push(0x0b);
        let mut code = vec![1];
        leb(body.len(), &mut code);
        code.extend_from_slice(&body);
        section(10, &code, &mut module);
        let mut component = b"\0asm\x0d\0\x01\0".to_vec();
        section(1, &module, &mut component);
        component
    }

    /// Security review (2026-11): a component of one 3 MB function took Winch to 1.7 GB and Cranelift
    /// past 10 GB (`provider init` was killed before it locked anything). A function over the
    /// limit is refused by the check every load and `provider init` run, before compiling.
    #[test]
    fn a_function_over_the_size_limit_is_refused_before_it_is_compiled() {
        let huge = component_with_a_function_of(3 << 20);
        for checked in [check(&huge), check_structure(&huge)] {
            let error = checked.unwrap_err();
            assert!(
                matches!(error, ComponentError::FunctionTooLarge { index: 0, .. }),
                "{error}"
            );
            assert!(
                error
                    .to_string()
                    .contains("over the limit of 1048576 bytes"),
                "{error}"
            );
        }
        // One within the limit is checked as any other: this one exports nothing.
        let small = component_with_a_function_of(1000);
        assert!(matches!(
            check(&small),
            Err(ComponentError::MissingExport { .. })
        ));
    }
}
