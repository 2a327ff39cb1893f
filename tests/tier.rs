//! The tiers of the suite (tests/README.md, "Tiers"). The full tier is CI's: `.ci/run` sets
//! `OPM_CI`, installs every peer with `tests/setup.sh`, and runs as root beside a private
//! Docker Engine. The quick tier (`cargo nextest run --profile quick`) is a contributor's: no
//! root, no Docker, no peers, no toolchain but Rust. A test that needs one of those asks
//! [`needs`] first: where it is missing outside CI, the test says what it leaves out and passes;
//! in CI, where everything must be there, it fails.

use std::process::Command;

/// Whether this run is CI's full tier (`OPM_CI` is set), where nothing may be left out.
pub fn in_ci() -> bool {
    std::env::var_os("OPM_CI").is_some_and(|value| !value.is_empty())
}

/// What a test may need beyond Rust.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Root: to give a file to another user.
    Root,
    /// Root, and the Docker Engine and Compose `tests/setup.sh` installs (`tests/docker.rs`).
    Docker,
}

impl Need {
    /// Whether it is here.
    fn present(self) -> bool {
        match self {
            Self::Root => rustix::process::geteuid().is_root(),
            Self::Docker => {
                rustix::process::geteuid().is_root()
                    && (std::path::Path::new(crate::docker::DOCKERD).exists()
                        || runs("dockerd", "--version"))
            }
        }
    }

    /// How to say it, in a skip message.
    fn describe(self) -> String {
        match self {
            Self::Root => "root".to_owned(),
            Self::Docker => "root and a Docker Engine".to_owned(),
        }
    }
}

/// Whether `program --flag` starts here.
fn runs(program: &str, flag: &str) -> bool {
    Command::new(program)
        .arg(flag)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok()
}

/// Whether `test` can have `need`: true when it is here. When it is not, outside CI the test is
/// to stop, and this says so on stderr (`SKIPPED test: needs …`, which nextest shows); in CI it
/// panics, naming what is missing.
pub fn needs(test: &str, need: Need) -> bool {
    if need.present() {
        return true;
    }
    let what = need.describe();
    assert!(
        !in_ci(),
        "{test} needs {what}, which CI must have: tests/setup.sh installs it"
    );
    eprintln!("SKIPPED {test}: needs {what} (tests/setup.sh installs it; CI runs it)");
    false
}
