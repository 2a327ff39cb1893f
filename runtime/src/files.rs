//! Writing files so that nothing is ever half-written: bundles, components, lock files,
//! signatures, schemas, expectations.

use std::io::Write as _;
use std::path::Path;

/// Writes `bytes` to a temporary file beside `path`, then renames it over `path`, so a failure never
/// leaves half a file (half a bundle, half a component).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    file.write_all(bytes)?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}
