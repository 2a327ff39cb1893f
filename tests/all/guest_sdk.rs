//! Transformers are plain Rust too: the guest crates' own unit tests, run natively through the
//! SDK with `cargo test`, no WebAssembly involved.

use std::process::Command;

use opm_tests::repo_root;

#[test]
fn transformer_unit_tests_pass_natively() {
    let workspace = repo_root().join("transformers");
    let target = repo_root().join("target/native-transformers");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args(["test", "--quiet", "--manifest-path"])
        .arg(workspace.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .expect("cargo runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "native transformer tests failed:\n{stdout}\n{stderr}"
    );
    let passed: usize = stdout
        .lines()
        .filter_map(|line| line.strip_prefix("test result: ok. "))
        .filter_map(|rest| rest.split(' ').next()?.parse::<usize>().ok())
        .sum();
    assert!(
        passed >= 8,
        "expected the transformers' unit tests to run, saw {passed}:\n{stdout}"
    );
}
