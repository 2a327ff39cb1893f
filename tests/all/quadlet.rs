//! The Quadlet checker, `opm_tests::quadlet::check`, on units written by hand
//! (`tests/fixtures/quadlet/valid/`): the valid set passes Podman's real `quadlet` and
//! `systemd-analyze verify`, and each negative control, the same set with one mistake, fails
//! naming the mistake and its file, so the checker the provider's tests lean on demonstrably
//! can fail.
//!
//! Needs, installed by `eval "$(tests/setup.sh)"`: `quadlet` (Podman 5.4.2's, from Debian
//! trixie's podman package) and `systemd-analyze` (Debian's systemd) on PATH. Never skipped: a
//! missing tool fails the test, naming what installs it; the quick tier leaves these tests out
//! by name (`.config/nextest.toml`).

use std::fs;
use std::path::Path;

use opm_tests::quadlet::check;
use opm_tests::repo_root;

/// A copy of the valid fixture in a temporary directory, where a test may break it.
fn valid_units() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_dir(
        &repo_root().join("tests/fixtures/quadlet/valid"),
        dir.path(),
    );
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in fs::read_dir(from).expect("read fixture") {
        let path = entry.expect("fixture entry").path();
        let target = to.join(path.file_name().expect("file name"));
        if path.is_dir() {
            fs::create_dir(&target).expect("create folder");
            copy_dir(&path, &target);
        } else {
            fs::copy(&path, &target).expect("copy fixture file");
        }
    }
}

/// Replaces the one `old` in `dir/file` with `new`.
fn edit(dir: &Path, file: &str, old: &str, new: &str) {
    let path = dir.join(file);
    let text = fs::read_to_string(&path).expect("read unit");
    assert_eq!(text.matches(old).count(), 1, "{file} holds {old:?} once");
    fs::write(&path, text.replace(old, new)).expect("write unit");
}

/// The checker's error on `dir`, which must fail, holding every one of `expected`.
fn fails_with(dir: &Path, expected: &[&str]) -> String {
    let error = check(dir).expect_err("the checker refuses the broken units");
    for part in expected {
        assert!(
            error.contains(part),
            "{part:?} is not in the error:\n{error}"
        );
    }
    error
}

#[test]
fn the_checker_passes_a_valid_set_of_units() {
    // A container with a volume, a bind-mounted file, an environment file, a published port
    // and a health check systemd waits for; a volume; a network; a pod of two containers; a
    // timer and the oneshot container it starts.
    let started = std::time::Instant::now();
    let dir = valid_units();
    if let Err(diagnostics) = check(dir.path()) {
        panic!("the valid units fail:\n{diagnostics}");
    }
    eprintln!("checked in {:?}", started.elapsed());
}

#[test]
fn the_checker_fails_an_unknown_container_key_in_quadlet() {
    let dir = valid_units();
    edit(
        dir.path(),
        "web.container",
        "[Container]\n",
        "[Container]\nFrobnicate=yes\n",
    );
    fails_with(
        dir.path(),
        &["quadlet", "web.container", "unsupported key 'Frobnicate'"],
    );
}

#[test]
fn the_checker_fails_a_quadlet_warning_though_quadlet_exits_0() {
    // An image name that is not fully qualified: Quadlet warns, converts, and exits 0.
    let dir = valid_units();
    edit(
        dir.path(),
        "app-api.container",
        "Image=docker.io/library/python:3.12-slim",
        "Image=python:3.12-slim",
    );
    fails_with(
        dir.path(),
        &[
            "quadlet",
            "app-api.container",
            "not a fully qualified image name",
        ],
    );
}

#[test]
fn the_checker_fails_a_service_value_systemd_rejects() {
    // Quadlet passes [Service] through; systemd-analyze warns, and exits 0.
    let dir = valid_units();
    edit(
        dir.path(),
        "web.container",
        "MemoryMax=256M",
        "MemoryMax=lots",
    );
    fails_with(
        dir.path(),
        &[
            "systemd-analyze verify",
            "web.service",
            "Invalid memory limit 'lots'",
            "MemoryMax=lots",
            "web.service ← web.container",
        ],
    );
}

#[test]
fn the_checker_fails_an_unknown_service_key_in_systemd() {
    let dir = valid_units();
    edit(
        dir.path(),
        "backup.container",
        "Restart=no\n",
        "Restart=no\nFrobnicate=yes\n",
    );
    fails_with(
        dir.path(),
        &[
            "systemd-analyze verify",
            "Unknown key 'Frobnicate' in section [Service]",
            "backup.service ← backup.container",
        ],
    );
}

#[test]
fn the_checker_fails_a_bad_timer() {
    let dir = valid_units();
    edit(dir.path(), "backup.timer", "*-*-* 03:00:00", "every night");
    fails_with(
        dir.path(),
        &["systemd-analyze verify", "backup.timer", "every night"],
    );
}

#[test]
fn the_checker_fails_a_timer_without_its_service() {
    // systemd-analyze verify says nothing of a timer whose service is missing: the checker does.
    let dir = valid_units();
    fs::remove_file(dir.path().join("backup.container")).expect("remove the timer's container");
    fails_with(
        dir.path(),
        &["backup.timer activates backup.service", "backup.container"],
    );
}

#[test]
fn the_checker_fails_a_file_a_unit_names_that_is_missing() {
    let dir = valid_units();
    fs::remove_file(dir.path().join("secrets/web.env")).expect("remove the environment file");
    fails_with(dir.path(), &["web.container", "secrets/web.env"]);
}

#[test]
fn the_checker_fails_a_directory_without_units_and_two_units_of_one_name() {
    let empty = tempfile::tempdir().expect("temp dir");
    fails_with(empty.path(), &["holds no Quadlet unit"]);

    let dir = valid_units();
    fs::copy(
        dir.path().join("data.volume"),
        dir.path().join("config/data.volume"),
    )
    .expect("copy a unit into a subfolder");
    fails_with(dir.path(), &["config/data.volume", "share a unit name"]);
}
