//! Writing files so that nothing is ever half-written: bundles, components, lock files,
//! signatures, schemas, expectations.

use std::io::Write as _;
use std::path::Path;

/// Writes `bytes` to a temporary file beside `path`, then renames it over `path`, so a failure never
/// leaves half a file (half a bundle, half a component).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomically_with(path, bytes, None)
}

/// [`write_atomically`], the file readable by everyone (mode 0644): what a user shares, as the
/// editor schema `opm mod schema -o` writes, rather than the temporary file's 0600.
pub fn write_atomically_readable(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomically_with(path, bytes, Some(0o644))
}

fn write_atomically_with(path: &Path, bytes: &[u8], mode: Option<u32>) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    file.write_all(bytes)?;
    if let Some(mode) = mode {
        use std::os::unix::fs::PermissionsExt as _;
        file.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// The bytes of the file at `path`, refused when it holds more than `max` (read no further
/// than one byte past it, whatever its size).
pub fn read_bounded(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(max + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(std::io::Error::other(format!(
            "it holds more than {max} bytes, the most opm reads"
        )));
    }
    Ok(bytes)
}
