//! Fuzz target `layout`: the checks of what a provider's renderer returned
//! ([`opm_core::render::layout::check_files`] and `check_refusals`).
//!
//! The input: its first byte is how many resources the renderer was given; then one line per
//! file, its path, a
//! tab and its pieces (`b12` for 12 bytes, `y3` for the YAML of resource 3, separated by
//! commas), or `!` and the positions of the resources refused. What passes must stay inside the
//! directory and ask for no resource as YAML more than the limit allows.

#![no_main]

use libfuzzer_sys::fuzz_target;
use opm_core::render::layout::{self, Piece, YAML_CHUNKS_PER_RESOURCE};
use opm_core::render::write::MANIFEST;

fuzz_target!(|data: &[u8]| {
    let [resources, rest @ ..] = data else {
        return;
    };
    let resources = usize::from(*resources);
    let text = String::from_utf8_lossy(rest);
    let mut files = Vec::new();
    let mut refused = Vec::new();
    for line in text.split('\n') {
        if let Some(positions) = line.strip_prefix('!') {
            refused.extend(
                positions
                    .split(',')
                    .filter_map(|p| p.parse::<u32>().ok())
                    .map(|p| (p, String::new())),
            );
            continue;
        }
        let (path, pieces) = line.split_once('\t').unwrap_or((line, ""));
        let pieces: Vec<Piece> = pieces
            .split(',')
            .filter_map(|piece| match piece.split_at_checked(1) {
                Some(("b", n)) => n.parse().ok().map(Piece::Bytes),
                Some(("y", n)) => n.parse().ok().map(Piece::Yaml),
                _ => None,
            })
            .collect();
        files.push((path, pieces));
    }
    if let Ok(checked) = layout::check_files(&files, resources) {
        assert_eq!(checked.wanted.len(), resources);
        assert!(checked.wanted.iter().all(|&n| n <= YAML_CHUNKS_PER_RESOURCE));
        for (path, _) in &files {
            assert!(!path.starts_with('/'), "{path:?}");
            assert!(path.split('/').all(|s| !matches!(s, "" | "." | "..")), "{path:?}");
            assert!(path.split('/').next() != Some(MANIFEST), "{path:?}");
        }
    }
    if layout::check_refusals(&refused, resources).is_ok() {
        assert!(refused.len() <= resources);
    }
});
