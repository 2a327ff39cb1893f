//! The last step of a render: the provider's renderer (`wit/transformer.wit`, `renderer`) lays
//! out the files of the output from every resource the calls produced, and the host fills them.
//!
//! The renderer runs once, in a fresh sandbox instance like a transform call, under its own
//! limits ([`limits`]). What it returns is checked before anything is made of it
//! ([`layout::check_files`]: paths, counts, which resources it asks for as YAML), and the files
//! with their YAML documents must fit the renderer's output limit before they are put together.
//! Resources it refuses fail their own transformers' calls, each at most once
//! ([`layout::check_refusals`]); any other failure is the renderer's.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rayon::prelude::*;

use super::layout::{self, Checked, Piece};
use super::{
    CallReport, Failure, FailureKind, FileMode, OutputFile, RenderContext, Rendered,
    RendererFailure, write,
};
use opm_core::provider::LimitsSpec;
use opm_sandbox::limits::MIB;
use opm_sandbox::wit::renderer::{Chunk, File, Mode, Options, Resource};
use opm_sandbox::{CallError, Caps, Limits, Sandbox};

/// What the command line asks of the output (`-o`, `--split`, `--out-dir`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputOptions {
    /// The format asked for: `yaml` unless the user said otherwise.
    pub format: String,
    /// One file per resource.
    pub split: bool,
    /// The files go into a directory; otherwise they are printed, several in the multi-file
    /// form ([`opm_core::render::write::print_files`]).
    pub directory: bool,
}

impl Default for OutputOptions {
    fn default() -> Self {
        Self {
            format: "yaml".into(),
            split: false,
            directory: false,
        }
    }
}

/// The renderer of a render: its component and who ships it.
#[derive(Debug, Clone)]
pub struct Renderer {
    /// Its name and version (`Kubernetes List Renderer 1.0.0`).
    pub name: String,
    /// The provider that ships it.
    pub provider: String,
    /// That provider's version.
    pub provider_version: String,
    /// Its component.
    pub component: opm_core::bundle::Blob,
    /// The limits its provider asks for.
    pub limits: LimitsSpec,
}

impl Renderer {
    /// The renderer `provider` ships, if it ships one.
    pub fn of(provider: &opm_core::provider::Provider) -> Option<Self> {
        let (spec, component) = provider
            .manifest
            .renderer
            .as_ref()
            .zip(provider.renderer.as_ref())?;
        Some(Self {
            name: format!("{} {}", spec.name, spec.version),
            provider: provider.manifest.metadata.name.clone(),
            provider_version: provider.manifest.metadata.version.clone(),
            component: component.clone(),
            limits: spec.limits.clone(),
        })
    }
}

/// The renderer's limits: what its provider asks (`renderer.limits`), else room for the largest
/// renders — fuel and memory for every resource of a 10,000-component render and more — never
/// more than [`RENDERER_CAPS`]. The output limit grows with the render: 64 MiB plus four times
/// the JSON it is given.
pub fn limits(spec: &LimitsSpec, input_bytes: usize) -> Result<Limits, String> {
    let defaults = Limits {
        fuel: 20_000_000_000,
        memory: 1024 * MIB,
        timeout: Duration::from_secs(60),
        output: (64 * MIB as usize).saturating_add(input_bytes.saturating_mul(4)),
        resources: usize::MAX,
        ..Limits::default()
    };
    spec.limits_over(defaults, &RENDERER_CAPS)
        .map_err(|e| format!("renderer.{e}"))
}

/// The most a provider's renderer may ask for.
pub const RENDERER_CAPS: Caps = Caps {
    fuel: 200_000_000_000,
    memory: 4096 * MIB,
    timeout: Duration::from_secs(300),
};

/// Runs `renderer` on what `rendered` holds and fills `rendered.files`, or records why not:
/// resources it refused as failures of their calls, anything else as the renderer's failure.
/// When `rendered` failed already, only the refusals are kept. `owner_of` gives a transformer's
/// provider and digest for those failures.
pub fn run(
    sandbox: &Sandbox,
    renderer: &Renderer,
    rendered: &mut Rendered,
    context: &RenderContext,
    options: &OutputOptions,
    owner_of: &dyn Fn(&str) -> (String, String),
) {
    run_in(
        super::shared::Code::own(sandbox),
        renderer,
        rendered,
        context,
        options,
        owner_of,
    );
}

/// [`run`] in `code`: a render's own sandbox, or one several renders share.
pub(crate) fn run_in(
    code: super::shared::Code<'_>,
    renderer: &Renderer,
    rendered: &mut Rendered,
    context: &RenderContext,
    options: &OutputOptions,
    owner_of: &dyn Fn(&str) -> (String, String),
) {
    let component_digest = format!("blake3:{}", blake3::hash(&renderer.component).to_hex());
    let fail = |error: String| RendererFailure {
        renderer: renderer.name.clone(),
        provider: renderer.provider.clone(),
        digest: component_digest.clone(),
        error,
    };
    let compiled = match code.compile_renderer(&renderer.name, &renderer.component) {
        Ok(compiled) => {
            rendered.code.push(super::code_load(
                format!("renderer {}", renderer.name),
                component_digest.clone(),
                &compiled.code,
            ));
            compiled
        }
        Err(error) => {
            rendered.renderer_failure = Some(fail(format!("cannot be loaded: {error}")));
            return;
        }
    };
    let input_bytes = rendered.resources.iter().map(|r| r.json.len()).sum();
    let limits = match limits(&renderer.limits, input_bytes) {
        Ok(limits) => limits,
        Err(error) => {
            rendered.renderer_failure = Some(fail(error));
            return;
        }
    };
    // Each resource's strings are moved into the call and back (nothing returns in between),
    // not copied: a large render holds tens of megabytes of JSON, and copying the other
    // strings took 120,000 allocations at 10,000 components.
    let resources: Vec<Resource> = rendered
        .resources
        .iter_mut()
        .map(|resource| Resource {
            component: std::mem::take(&mut resource.component),
            transformer: std::mem::take(&mut resource.transformer),
            api_version: std::mem::take(&mut resource.api_version),
            kind: std::mem::take(&mut resource.identity.kind),
            name: std::mem::take(&mut resource.identity.name),
            namespace: std::mem::take(&mut resource.identity.namespace),
            value: std::mem::take(&mut resource.json),
        })
        .collect();
    let wit_options = Options {
        format: options.format.clone(),
        split: options.split,
        directory: options.directory,
    };
    // While the renderer runs (on this thread), the pool's other threads write the resources'
    // YAML, which a renderer of YAML asks for: a renderer is one call, and it would leave them
    // idle. What they have not written when it returns is written in `fill`.
    let written: Vec<OnceLock<Result<String, String>>> =
        resources.iter().map(|_| OnceLock::new()).collect();
    let returned = AtomicBool::new(false);
    let call = || {
        let context = context.for_renderer(&renderer.provider_version);
        let outcome = match code.redactor() {
            Some(redactor) => code.sandbox.render_redacting(
                &compiled,
                &resources,
                &context,
                &wit_options,
                &limits,
                redactor,
            ),
            None => code
                .sandbox
                .render(&compiled, &resources, &context, &wit_options, &limits),
        };
        returned.store(true, Ordering::Relaxed);
        outcome
    };
    let outcome = if options.format == "yaml" && rayon::current_num_threads() > 1 {
        rayon::join(call, || {
            resources
                .par_iter()
                .with_max_len(32)
                .zip(&written)
                .for_each(|(resource, slot)| {
                    if !returned.load(Ordering::Relaxed) {
                        slot.get_or_init(|| yaml_document(&resource.value));
                    }
                });
        })
        .0
    } else {
        call()
    };
    let written: Vec<Option<Result<String, String>>> =
        written.into_iter().map(OnceLock::into_inner).collect();
    for (resource, given) in rendered.resources.iter_mut().zip(resources) {
        resource.component = given.component;
        resource.transformer = given.transformer;
        resource.api_version = given.api_version;
        resource.identity.kind = given.kind;
        resource.identity.name = given.name;
        resource.identity.namespace = given.namespace;
        resource.json = given.value;
    }
    rendered.renderer = Some(CallReport {
        component: String::new(),
        transformer: format!("renderer {}", renderer.name),
        fuel_used: outcome.fuel_used,
        elapsed: outcome.elapsed,
        resources: outcome.result.as_ref().map_or(0, Vec::len),
        logs: outcome.logs,
        logs_dropped: outcome.logs_dropped,
    });
    match outcome.result {
        // A render that failed already writes nothing: only the renderer's refusals count.
        Ok(_) if rendered.failed() => {}
        Ok(files) => match fill(files, rendered, written, limits.output) {
            Ok(files) => rendered.files = files,
            Err(error) => rendered.renderer_failure = Some(fail(error)),
        },
        Err(CallError::Refused(refused)) => {
            if let Err(error) = layout::check_refusals(&refused, rendered.resources.len()) {
                rendered.renderer_failure = Some(fail(error));
                return;
            }
            for (index, reason) in refused {
                let reason = opm_core::printable::truncate(&reason, layout::MAX_REFUSAL_REASON);
                // In range: `check_refusals` refused any other position.
                let resource = &rendered.resources[index as usize];
                let (provider, digest) = owner_of(&resource.transformer);
                rendered.failures.push(Failure {
                    component: resource.component.clone(),
                    transformer: resource.transformer.clone(),
                    provider,
                    digest,
                    error: FailureKind::Refused {
                        renderer: renderer.name.clone(),
                        reason,
                    },
                });
            }
            if rendered.failures.is_empty() {
                rendered.renderer_failure =
                    Some(fail("refused, naming no resource in particular".into()));
            }
            rendered.failures.sort_by(|a, b| {
                (&a.component, &a.transformer).cmp(&(&b.component, &b.transformer))
            });
        }
        // A render that failed already is reported by what failed first: a renderer given
        // part of the resources may well fail on what is missing.
        Err(_) if rendered.failed() => {}
        Err(error) => rendered.renderer_failure = Some(fail(renderer_words(&error))),
    }
}

/// What stopped the renderer, saying where its limits come from: its provider's
/// `renderer.limits`, not the command line's per-call flags.
fn renderer_words(error: &CallError) -> String {
    let mut words = error.to_string();
    for flag in ["--fuel", "--memory", "--timeout"] {
        words = words.replace(
            &format!("raise it with {flag}"),
            "its provider's renderer.limits may raise it",
        );
    }
    words
}

/// One resource's YAML document, or why it cannot be written.
fn yaml_document(json: &str) -> Result<String, String> {
    write::yaml_of(json).map_err(|e| format!("{e:#}"))
}

/// The files `files` lays out, checked, with every YAML chunk written by the host (each
/// resource once, on the current rayon pool, unless `written` holds it already).
fn fill(
    files: Vec<File>,
    rendered: &Rendered,
    mut written: Vec<Option<Result<String, String>>>,
    output_limit: usize,
) -> Result<Vec<OutputFile>, String> {
    let layout: Vec<(&str, Vec<Piece>)> = files
        .iter()
        .map(|file| {
            let pieces = file
                .content
                .iter()
                .map(|chunk| match chunk {
                    Chunk::Bytes(part) => Piece::Bytes(part.len()),
                    Chunk::Yaml(index) => Piece::Yaml(*index),
                })
                .collect();
            (file.path.as_str(), pieces)
        })
        .collect();
    let Checked { wanted, mut bytes } = layout::check_files(&layout, rendered.resources.len())?;
    drop(layout);
    written.resize_with(rendered.resources.len(), || None);
    written
        .par_iter_mut()
        // Short runs: the documents written during the call are all at the front, and the
        // thread that took them would otherwise sit idle.
        .with_max_len(32)
        .zip(&wanted)
        .enumerate()
        .for_each(|(index, (document, &wanted))| {
            if wanted == 0 {
                *document = None;
            } else if document.is_none() {
                *document = Some(yaml_document(&rendered.resources[index].json));
            }
        });
    // The first resource (by position) that cannot be written fails the render.
    if let Some((index, Some(Err(e)))) = written
        .iter()
        .enumerate()
        .find(|(_, document)| matches!(document, Some(Err(_))))
    {
        return Err(format!("writing resource #{index} as YAML: {e}"));
    }
    // The documents count toward the output limit as the bytes do, as often as they are asked
    // for: before anything is put together.
    for (document, &times) in written.iter().zip(&wanted) {
        if let Some(Ok(text)) = document {
            bytes = bytes.saturating_add(text.len().saturating_mul(times));
        }
    }
    if bytes > output_limit {
        return Err(format!(
            "returned files of {} in all, its YAML documents included, over its output limit \
             of {}",
            opm_sandbox::limits::Bytes(bytes as u64),
            opm_sandbox::limits::Bytes(output_limit as u64)
        ));
    }
    let document = |index: u32| match &written[index as usize] {
        Some(Ok(text)) => text.as_bytes(),
        _ => unreachable!("every wanted document is written above"),
    };
    Ok(files
        .into_par_iter()
        .map(|file| OutputFile {
            path: file.path,
            bytes: concatenate(&file.content, &document),
            mode: match file.mode {
                Mode::Regular => FileMode::Regular,
                Mode::Private => FileMode::Private,
                Mode::Executable => FileMode::Executable,
            },
        })
        .collect())
}

/// How large a file is before its chunks are copied into it on several threads.
const PARALLEL_COPY_FROM: usize = 1 << 20;

/// The bytes of `content`, its YAML chunks read from `document`: one allocation of the file's
/// size (a stream of 20,000 documents is not copied again and again as it grows), filled on the
/// current rayon pool when the file is large. One thread copying a 14 MB stream, and taking the
/// page faults of its fresh memory, was 10 ms of a 10,000-component render with the other
/// thread idle.
fn concatenate<'d>(content: &[Chunk], document: &(dyn Fn(u32) -> &'d [u8] + Sync)) -> Vec<u8> {
    let parts: Vec<&[u8]> = content
        .iter()
        .map(|chunk| match chunk {
            Chunk::Bytes(part) => &part[..],
            Chunk::Yaml(index) => document(*index),
        })
        .collect();
    let size = parts.iter().map(|part| part.len()).sum();
    if size < PARALLEL_COPY_FROM || rayon::current_num_threads() < 2 {
        let mut bytes = Vec::with_capacity(size);
        for part in parts {
            bytes.extend_from_slice(part);
        }
        return bytes;
    }
    // Zeroed memory comes fresh from the kernel, already zero: its pages are first touched by
    // the thread that copies into them.
    let mut bytes = vec![0; size];
    let mut pieces = Vec::with_capacity(parts.len());
    let mut rest = &mut bytes[..];
    for part in &parts {
        let (piece, tail) = rest.split_at_mut(part.len());
        pieces.push(piece);
        rest = tail;
    }
    pieces
        .into_par_iter()
        .zip(parts)
        .with_min_len(256)
        .for_each(|(piece, part)| piece.copy_from_slice(part));
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file's chunks in order, whether one thread copies them or several do: the
    /// documents of resources, asked for in any order and more than once, between separators.
    #[test]
    fn a_file_is_its_chunks_in_order_on_any_number_of_threads() {
        let documents: Vec<String> = (0..3000)
            .map(|i| format!("kind: K{i}\nbody: {}\n", "x".repeat(i % 700)))
            .collect();
        let mut content = Vec::new();
        for i in (0..3000u32).rev().chain([7, 7, 2999]) {
            content.push(Chunk::Bytes(b"---\n".to_vec()));
            content.push(Chunk::Yaml(i));
        }
        let document = |index: u32| documents[index as usize].as_bytes();
        let mut expected = Vec::new();
        for chunk in &content {
            match chunk {
                Chunk::Bytes(part) => expected.extend_from_slice(part),
                Chunk::Yaml(index) => expected.extend_from_slice(document(*index)),
            }
        }
        assert!(
            expected.len() > PARALLEL_COPY_FROM,
            "the test needs the parallel copy"
        );
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let bytes = pool.install(|| concatenate(&content, &document));
            assert!(bytes == expected, "{threads} threads");
        }
        assert_eq!(concatenate(&[], &document), b"");
    }

    #[test]
    fn the_output_limit_grows_with_the_render_and_a_provider_is_capped() {
        let small = limits(&LimitsSpec::default(), 0).unwrap();
        let large = limits(&LimitsSpec::default(), 100 * MIB as usize).unwrap();
        assert_eq!(large.output - small.output, 400 * MIB as usize);
        let greedy = LimitsSpec {
            fuel: Some(u64::MAX),
            memory: Some("8Gi".into()),
            timeout: Some("600s".into()),
        };
        let capped = limits(&greedy, 0).unwrap();
        assert_eq!(capped.fuel, RENDERER_CAPS.fuel);
        assert_eq!(capped.memory, RENDERER_CAPS.memory);
        assert_eq!(capped.timeout, RENDERER_CAPS.timeout);
    }
}
