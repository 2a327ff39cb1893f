//! The hand-made fixtures under `tests/fixtures/wat/`: core modules written in WAT that no
//! compiler would emit, each made a component against the world of the frozen
//! `wit/1.0.0/` (or of a `NAME.wit` beside it) with `wit-component`. The modules under `raw/` are taken as they are, not
//! componentized: a core module, and bytes that are not a component at all.

use std::path::Path;

use anyhow::Context as _;
use wit_bindgen_core::wit_parser::Resolve;
use wit_component::StringEncoding;

/// One fixture: its file stem (`many-memories`), its path under the fixtures folder
/// (`raw/malformed.wat`) and its bytes.
pub struct Fixture {
    pub name: String,
    pub source: String,
    pub bytes: Vec<u8>,
}

/// Builds every fixture of `fixtures` (`tests/fixtures/wat`), componentizing the top-level ones
/// against `wit`; sorted by name.
pub fn build(fixtures: &Path, wit: &Path) -> anyhow::Result<Vec<Fixture>> {
    let mut built = Vec::new();
    for path in wat_files(fixtures)? {
        let core = wat::parse_file(&path)?;
        let bytes = componentize(&path, core, wit)
            .with_context(|| format!("componentizing {}", path.display()))?;
        built.push(Fixture {
            name: stem(&path),
            source: format!("{}.wat", stem(&path)),
            bytes,
        });
    }
    for path in wat_files(&fixtures.join("raw"))? {
        built.push(Fixture {
            name: stem(&path),
            source: format!("raw/{}.wat", stem(&path)),
            bytes: wat::parse_file(&path)?,
        });
    }
    built.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(built)
}

/// Embeds the world the module targets and encodes the component: the world of `NAME.wit` if
/// the fixture has one, else `transformer-world` of `wit` (the frozen 1.0.0).
fn componentize(path: &Path, mut core: Vec<u8>, wit: &Path) -> anyhow::Result<Vec<u8>> {
    let mut resolve = Resolve::default();
    let (contract, _) = resolve.push_dir(wit)?;
    let own_wit = path.with_extension("wit");
    let world = if own_wit.is_file() {
        let package = resolve.push_file(&own_wit)?;
        resolve.select_world(&[package], None)?
    } else {
        resolve.select_world(&[contract], Some("transformer-world"))?
    };
    wit_component::embed_component_metadata(&mut core, &resolve, world, StringEncoding::UTF8)?;
    wit_component::ComponentEncoder::default()
        .module(&core)?
        .validate(true)
        .encode()
}

/// The `.wat` files directly in `dir`, sorted.
fn wat_files(dir: &Path) -> anyhow::Result<Vec<std::path::PathBuf>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "wat"))
        .collect();
    files.sort();
    Ok(files)
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .expect("a .wat file has a stem")
        .to_string_lossy()
        .into_owned()
}
