//! The guests that toolchains other than cargo build — the example ServiceTransformer in
//! JavaScript (componentize-js), Python (componentize-py) and C, and the C guest `c-hello`
//! (clang with wasi-libc) — built when a test first asks for one, not by `build.rs`: so
//! `cargo build` and `cargo clippy` need only Rust, and a machine without Node.js finds out
//! from the tests that use it, by name.
//!
//! Each is built once per set of inputs into `toolchain-guests/` of the target directory, keyed
//! by the BLAKE3 of its sources, the WIT and the build recipe: the test processes nextest runs
//! at once take turns through a lock file, the first builds, the others read.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use anyhow::{Context as _, bail};

/// What a machine without the C toolchain for WASI should install (Debian 12).
const C_INSTALL: &str = "apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32";

/// Changes whenever a recipe below changes, so that no guest built the old way is reused.
const RECIPE: &str = "toolchain-guests 1";

/// The example's directory, relative to the repository.
const EXAMPLE: &str = "transformers/examples/service";

/// The example ServiceTransformer in JavaScript, built from `transformers/examples/service/js`
/// by `node build.mjs` with the componentize-js that `npm ci` installed there.
pub fn example_service_js() -> &'static [u8] {
    static GUEST: OnceLock<Vec<u8>> = OnceLock::new();
    GUEST.get_or_init(|| {
        let dir = repo().join(EXAMPLE).join("js");
        let inputs = [
            dir.join("transformer.js"),
            dir.join("build.mjs"),
            dir.join("package-lock.json"),
        ];
        built("example-service-js", &inputs, |out| javascript(&dir, out))
    })
}

/// The example CertificateTransformer in JavaScript, built from
/// `transformers/examples/certificate/js` by `node build.mjs` with the componentize-js that
/// `npm ci` installed there.
pub fn example_certificate_js() -> &'static [u8] {
    static GUEST: OnceLock<Vec<u8>> = OnceLock::new();
    GUEST.get_or_init(|| {
        let dir = repo().join("transformers/examples/certificate/js");
        let inputs = [
            dir.join("transformer.js"),
            dir.join("build.mjs"),
            dir.join("package-lock.json"),
        ];
        built("example-certificate-js", &inputs, |out| {
            javascript(&dir, out)
        })
    })
}

/// The one component of `transformers/examples/one-component/` that serves its provider's four
/// transformers, in JavaScript, built from `js/` there by `node build.mjs` with the
/// componentize-js that `npm ci` installed there.
pub fn example_one_component_js() -> &'static [u8] {
    static GUEST: OnceLock<Vec<u8>> = OnceLock::new();
    GUEST.get_or_init(|| {
        let dir = repo().join("transformers/examples/one-component/js");
        let inputs = [
            dir.join("transformer.js"),
            dir.join("render.js"),
            dir.join("opm.js"),
            dir.join("build.mjs"),
            dir.join("package-lock.json"),
        ];
        built("example-one-component-js", &inputs, |out| {
            javascript(&dir, out)
        })
    })
}

/// The example ServiceTransformer in Python, built from
/// `transformers/examples/service/python` by componentize-py.
pub fn example_service_python() -> &'static [u8] {
    static GUEST: OnceLock<Vec<u8>> = OnceLock::new();
    GUEST.get_or_init(|| {
        let dir = repo().join(EXAMPLE).join("python");
        built("example-service-python", &[dir.join("app.py")], |out| {
            python(&dir, out)
        })
    })
}

/// The example ServiceTransformer in C, built from `transformers/examples/service/c`.
pub fn example_service_c() -> &'static [u8] {
    static GUEST: OnceLock<Vec<u8>> = OnceLock::new();
    GUEST.get_or_init(|| {
        c_guest(
            "example-service-c",
            &format!("{EXAMPLE}/c"),
            &["transformer.c", "service.c", "json.c"],
        )
    })
}

/// The component built from `transformers/testing/c-hello`, in C.
pub fn testing_c_hello() -> &'static [u8] {
    static GUEST: OnceLock<Vec<u8>> = OnceLock::new();
    GUEST.get_or_init(|| {
        c_guest(
            "c-hello",
            "transformers/testing/c-hello",
            &["transformer.c"],
        )
    })
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The component `name` built from `inputs` by `build` (which writes it to the path it is
/// given): from the cache when these inputs were built before, else built now, under the lock.
/// Panics, saying what failed and how to install the toolchain, when the build fails.
fn built(
    name: &str,
    inputs: &[PathBuf],
    build: impl FnOnce(&Path) -> anyhow::Result<()>,
) -> Vec<u8> {
    cached(name, inputs, build).unwrap_or_else(|e| panic!("building the guest {name}: {e:#}"))
}

fn cached(
    name: &str,
    inputs: &[PathBuf],
    build: impl FnOnce(&Path) -> anyhow::Result<()>,
) -> anyhow::Result<Vec<u8>> {
    let dir = cache_dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(format!("{name}-{}.wasm", key(inputs)?));
    let lock = std::fs::File::create(dir.join(format!("{name}.lock")))?;
    lock.lock().context("locking the guest cache")?;
    if let Ok(bytes) = std::fs::read(&path) {
        return Ok(bytes);
    }
    let partial = path.with_extension("partial");
    build(&partial)?;
    let bytes =
        std::fs::read(&partial).with_context(|| format!("reading {}", partial.display()))?;
    std::fs::rename(&partial, &path)?;
    Ok(bytes)
}

/// `toolchain-guests/` in the target directory these tests were built into (the ancestor of
/// the test binary that cargo marks with `CACHEDIR.TAG`), else in the system's temporary one.
fn cache_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    exe.ancestors()
        .find(|dir| dir.join("CACHEDIR.TAG").is_file())
        .map_or_else(std::env::temp_dir, Path::to_owned)
        .join("toolchain-guests")
}

/// The first 16 hex digits of the BLAKE3 of the recipe, `inputs` and every file of `wit/`.
fn key(inputs: &[PathBuf]) -> anyhow::Result<String> {
    let mut hasher = blake3::Hasher::new();
    hasher.update(RECIPE.as_bytes());
    let mut files = inputs.to_vec();
    let mut wit: Vec<PathBuf> = std::fs::read_dir(repo().join("wit"))?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    wit.sort();
    files.extend(wit.into_iter().filter(|path| path.is_file()));
    for file in files {
        let bytes = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
        hasher.update(file.file_name().unwrap_or_default().as_encoded_bytes());
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    Ok(hasher.finalize().to_hex()[..16].to_owned())
}

fn javascript(dir: &Path, out: &Path) -> anyhow::Result<()> {
    if !dir
        .join("node_modules/@bytecodealliance/componentize-js")
        .is_dir()
    {
        bail!(
            "the JavaScript examples need componentize-js in {}; run `npm ci --prefix {}` \
             (tests/setup.sh does)",
            dir.join("node_modules").display(),
            dir.display()
        );
    }
    let node = std::env::var_os("NODE").unwrap_or_else(|| "node".into());
    let mut command = Command::new(node);
    command.current_dir(dir).arg("build.mjs").arg(out);
    run(&mut command, "install Node.js 20 or later")
}

fn python(dir: &Path, out: &Path) -> anyhow::Result<()> {
    let tool = std::env::var_os("COMPONENTIZE_PY").unwrap_or_else(|| "componentize-py".into());
    let mut command = Command::new(tool);
    command
        .current_dir(dir)
        .arg("-d")
        .arg(repo().join("wit"))
        .args(["-w", "transformer-world", "componentize", "app", "-o"])
        .arg(out);
    run(
        &mut command,
        "run `pip install componentize-py==0.25.1` (tests/setup.sh does), or set COMPONENTIZE_PY",
    )
}

/// The C guest `name` of the `sources` in `source_dir` (relative to the repository): compiled
/// with clang against wasi-libc as a WASI preview1 reactor, with the C bindings opm itself
/// gives `opm transformer new --lang c`, then made a component as `opm provider pack` makes
/// one (the preview1 reactor adapter turns its imports into WASI 0.2).
fn c_guest(name: &str, source_dir: &str, sources: &[&str]) -> Vec<u8> {
    let dir = repo().join(source_dir);
    let inputs: Vec<PathBuf> = sources.iter().map(|file| dir.join(file)).collect();
    built(name, &inputs, |out| {
        let work = tempfile::tempdir()?;
        let mut files = inputs.clone();
        for (file, bytes) in opm_runtime::authoring::templates::c_bindings() {
            let path = work.path().join(file);
            std::fs::write(&path, bytes)?;
            if file.ends_with(".c") || file.ends_with(".o") {
                files.push(path);
            }
        }
        let core = work.path().join("core.wasm");
        clang(&files, work.path(), &core)?;
        let core = std::fs::read(&core).with_context(|| format!("reading {}", core.display()))?;
        let component = opm_core::bundle::component::componentize(&core)
            .context("componentizing the C guest with the WASI preview1 reactor adapter")?;
        Ok(std::fs::write(out, component)?)
    })
}

/// Compiles and links `sources` into the core module `output` with clang and wasi-libc.
fn clang(sources: &[PathBuf], include: &Path, output: &Path) -> anyhow::Result<()> {
    let clang = std::env::var_os("CLANG").unwrap_or_else(|| "clang".into());
    let mut command = Command::new(&clang);
    command
        .args([
            "--target=wasm32-wasi",
            "-mexec-model=reactor",
            "-O2",
            "-Wall",
            "-Werror",
        ])
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
                        "the C guest needs wasi-libc, and {file} is missing; run `{C_INSTALL}` \
                         (tests/setup.sh does), or set WASI_SYSROOT to a WASI sysroot"
                    );
                }
            }
        }
    }
    run(
        &mut command,
        &format!("if the wasm32 linker, C library or builtins are missing, run `{C_INSTALL}`"),
    )
}

/// Runs `command`, saying how to install its toolchain when it cannot run or fails.
fn run(command: &mut Command, install: &str) -> anyhow::Result<()> {
    let program = command.get_program().to_string_lossy().into_owned();
    let output = command
        .output()
        .with_context(|| format!("cannot run {program}; {install}"))?;
    if !output.status.success() {
        bail!(
            "{program} failed ({}); {install}:\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(())
}
