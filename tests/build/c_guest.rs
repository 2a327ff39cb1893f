//! The C guests (`transformers/testing/c-hello/`, `transformers/examples/service/c/`): bindings
//! generated from `wit/` with `wit-bindgen-c`, compiled with clang against wasi-libc as a WASI
//! preview1 reactor, then made a component with the preview1 reactor adapter, which turns its
//! preview1 imports into WASI 0.2.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};

/// What a machine without the C toolchain for WASI should install (Debian 12).
const INSTALL: &str = "apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32";

/// Builds the C guest of the `sources` in `source_dir` (relative to the repository) into a
/// work directory `name` of `out_dir`; returns its component.
pub fn build(
    repo: &Path,
    out_dir: &Path,
    name: &str,
    source_dir: &str,
    sources: &[&str],
) -> anyhow::Result<Vec<u8>> {
    let source_dir = repo.join(source_dir);
    let work = out_dir.join(name);
    std::fs::create_dir_all(&work)?;
    let mut files: Vec<PathBuf> = sources.iter().map(|file| source_dir.join(file)).collect();
    files.extend(generate_bindings(&repo.join("wit"), &work)?);
    let core = work.join("core.wasm");
    compile(&files, &work, &core)?;
    let core = std::fs::read(&core).with_context(|| format!("reading {}", core.display()))?;
    wit_component::ComponentEncoder::default()
        .module(&core)?
        .adapter(
            wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME,
            wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
        )?
        .validate(true)
        .encode()
        .context("componentizing the C guest with the WASI preview1 reactor adapter")
}

/// Writes the C bindings of `transformer-world` into `work`; returns the files to compile and
/// link (the bindings' source and the object that carries the world's component type).
fn generate_bindings(wit: &Path, work: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut link = Vec::new();
    for (name, contents) in crate::build_support::c_bindings(wit)? {
        let path = work.join(&name);
        std::fs::write(&path, contents)?;
        if name.ends_with(".c") || name.ends_with(".o") {
            link.push(path);
        }
    }
    Ok(link)
}

/// Compiles and links `sources` into the core module `output` with clang and wasi-libc.
fn compile(sources: &[PathBuf], include: &Path, output: &Path) -> anyhow::Result<()> {
    let clang = std::env::var_os("CLANG").unwrap_or_else(|| "clang".into());
    let mut command = Command::new(&clang);
    command
        .arg("--target=wasm32-wasi")
        .arg("-mexec-model=reactor")
        .arg("-O2")
        .arg("-Wall")
        .arg("-Werror")
        .arg("-I")
        .arg(include)
        .args(sources)
        .arg("-o")
        .arg(output);
    // Debian's wasi-libc lays out its sysroot multiarch-style under /usr, where clang finds it
    // by default; WASI_SYSROOT names another (a wasi-sdk's share/wasi-sysroot).
    match std::env::var_os("WASI_SYSROOT") {
        Some(sysroot) => {
            command.arg(format!("--sysroot={}", Path::new(&sysroot).display()));
        }
        None => {
            for file in [
                "/usr/include/wasm32-wasi/stdio.h",
                "/usr/lib/wasm32-wasi/libc.a",
                "/usr/lib/wasm32-wasi/crt1-reactor.o",
            ] {
                if !Path::new(file).is_file() {
                    bail!(
                        "building the C guest needs wasi-libc, and {file} is missing; \
                         run `{INSTALL}`, or set WASI_SYSROOT to a WASI sysroot"
                    );
                }
            }
        }
    }
    let result = command.output().with_context(|| {
        format!(
            "running {} to build the C guest; run `{INSTALL}`, or set CLANG",
            clang.to_string_lossy()
        )
    })?;
    if !result.status.success() {
        bail!(
            "{} failed to build the C guest ({}); if the wasm32 linker, C library or builtins \
             are missing, run `{INSTALL}`:\n{}",
            clang.to_string_lossy(),
            result.status,
            String::from_utf8_lossy(&result.stderr)
        );
    }
    Ok(())
}
