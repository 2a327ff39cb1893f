//! The example modules built into opm: `module.yaml` of every folder of the repository's
//! `examples/` that has one, as this opm was built. `opm provider check` renders them with the
//! provider it checks unless given `--examples DIR`; a test holds the list equal to the folder's.

/// Each example's folder name and its `module.yaml`, by name.
pub const EXAMPLES: &[(&str, &str)] = &[
    (
        "everything",
        include_str!("../../../examples/everything/module.yaml"),
    ),
    ("gitea", include_str!("../../../examples/gitea/module.yaml")),
    (
        "grafana",
        include_str!("../../../examples/grafana/module.yaml"),
    ),
    ("hello", include_str!("../../../examples/hello/module.yaml")),
    (
        "mattermost",
        include_str!("../../../examples/mattermost/module.yaml"),
    ),
    (
        "nextcloud",
        include_str!("../../../examples/nextcloud/module.yaml"),
    ),
    (
        "pipeline",
        include_str!("../../../examples/pipeline/module.yaml"),
    ),
    (
        "plausible",
        include_str!("../../../examples/plausible/module.yaml"),
    ),
    ("shop", include_str!("../../../examples/shop/module.yaml")),
    (
        "vaultwarden",
        include_str!("../../../examples/vaultwarden/module.yaml"),
    ),
];

#[cfg(test)]
mod tests {
    /// Every folder of `examples/` with a `module.yaml` is built in, as it is now.
    #[test]
    fn the_built_in_examples_are_the_repository_s() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
        let mut found = Vec::new();
        for entry in std::fs::read_dir(&dir).expect("examples/ reads") {
            let path = entry.expect("an entry").path().join("module.yaml");
            if let Ok(text) = std::fs::read_to_string(&path) {
                let name = path.parent().and_then(|p| p.file_name()).expect("a folder");
                found.push((name.to_string_lossy().into_owned(), text));
            }
        }
        found.sort();
        let built_in: Vec<(String, String)> = super::EXAMPLES
            .iter()
            .map(|(name, text)| ((*name).to_owned(), (*text).to_owned()))
            .collect();
        assert_eq!(
            built_in.iter().map(|(name, _)| name).collect::<Vec<_>>(),
            found.iter().map(|(name, _)| name).collect::<Vec<_>>(),
            "add the example to runtime/src/conformance/examples.rs"
        );
        assert!(
            built_in == found,
            "include_str! reads the files as they are"
        );
    }
}
