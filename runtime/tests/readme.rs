//! The README's commands work as written: every line of its `sh` blocks that starts with `opm `
//! runs, in order, with bash, in a scratch directory that holds the repository's examples, with
//! this build's `opm` first on PATH, and exits 0. (The set-up commands, which build opm and run
//! this suite, are CI's own: `.ci/run` runs them.)

use std::path::Path;
use std::process::Command;

/// The `opm …` lines of the README's ```sh blocks, in order.
fn readme_commands() -> Vec<String> {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .expect("read README.md");
    let mut commands = Vec::new();
    let mut in_sh = false;
    for line in readme.lines() {
        if line.starts_with("```") {
            in_sh = !in_sh && line.trim_end() == "```sh";
            continue;
        }
        if in_sh && line.starts_with("opm ") {
            commands.push(line.to_owned());
        }
    }
    commands
}

#[test]
fn every_opm_command_of_the_readme_runs_as_written() {
    let commands = readme_commands();
    assert!(commands.len() >= 12, "{commands:#?}");
    for wanted in [
        "opm mod init",
        "opm mod diff",
        "opm mod schema",
        "--verbose=json",
        "opm completion",
    ] {
        assert!(
            commands.iter().any(|c| c.contains(wanted)),
            "the README shows no `{wanted}`"
        );
    }
    let scratch = tempfile::tempdir().expect("scratch dir");
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    std::os::unix::fs::symlink(
        examples.canonicalize().unwrap(),
        scratch.path().join("examples"),
    )
    .expect("link the examples");
    let bin = Path::new(env!("CARGO_BIN_EXE_opm"))
        .parent()
        .unwrap()
        .to_owned();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for command in &commands {
        let output = Command::new("bash")
            .args(["-euo", "pipefail", "-c", command])
            .current_dir(scratch.path())
            .env("PATH", &path)
            .env("NO_COLOR", "1")
            .output()
            .expect("run bash");
        assert!(
            output.status.success(),
            "README command failed ({:?}): {command}\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    // What they wrote is what they say they write.
    for file in [
        "my-app/module.yaml",
        "my-app/module.schema.json",
        "deploy/hello",
        "render.jsonl",
        "opm.bash",
        "greeter",
    ] {
        assert!(scratch.path().join(file).exists(), "{file} was not written");
    }
    let last = std::fs::read_to_string(scratch.path().join("render.jsonl")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(last.lines().last().unwrap()).unwrap();
    assert_eq!(summary["event"], "summary");
}

/// The repository stands alone: no file cites a design document or a path outside it; every
/// relative link of its Markdown files names a file that exists, and a heading of it when the
/// link has an anchor; and every page of `docs/`, or Markdown file with an anchor, that another
/// file cites (a Rust, YAML or shell comment) exists, read from the repository's root.
#[test]
fn every_reference_in_the_repository_resolves_inside_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("the repository's root");
    // Spelt in pieces, so that this file does not cite them itself.
    let outside = [
        ["DESIGN", " §"].concat(),
        ["shared", "/seeds"].concat(),
        ["..", "/shared"].concat(),
    ];
    let mut problems = Vec::new();
    let files = repository_files(&root);
    assert!(files.len() > 100, "found only {} files", files.len());
    for file in &files {
        // Upstream charts vendored unmodified for the parity tests cite their own repositories'
        // layout; tests/fixtures/charts/<app>/README.md says where each came from.
        if file.starts_with("tests/fixtures/charts")
            && file.components().any(|c| c.as_os_str() == "chart")
        {
            continue;
        }
        // Only text: what is not UTF-8 (a wasm fixture, a fuzz input) cites nothing.
        let Ok(text) = std::fs::read_to_string(root.join(file)) else {
            continue;
        };
        let at = |line: usize| format!("{}:{}", file.display(), line + 1);
        for (line, content) in text.lines().enumerate() {
            for pattern in &outside {
                if content.contains(pattern.as_str()) {
                    problems.push(format!(
                        "{}: cites {pattern:?}, outside the repository",
                        at(line)
                    ));
                }
            }
        }
        let markdown = file.extension().is_some_and(|e| e == "md");
        let (base, references) = if markdown {
            (
                file.parent().unwrap_or(Path::new("")),
                markdown_links(&text),
            )
        } else {
            (Path::new(""), citations(&text))
        };
        for (line, reference) in references {
            if let Err(why) = resolve(&root, base, &reference) {
                problems.push(format!("{}: {reference}: {why}", at(line)));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The repository's files, relative to `root`: those git tracks or would track, or, outside a
/// git checkout, every file but build output, dependencies and fuzzing corpora.
fn repository_files(root: &Path) -> Vec<std::path::PathBuf> {
    let listed = Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .current_dir(root)
        .output();
    if let Ok(output) = listed
        && output.status.success()
    {
        return output
            .stdout
            .split(|b| *b == 0)
            .filter(|name| !name.is_empty())
            .map(|name| std::path::PathBuf::from(String::from_utf8_lossy(name).into_owned()))
            .filter(|path| root.join(path).is_file())
            .collect();
    }
    let skip = [
        ".git",
        "target",
        "node_modules",
        "corpus",
        "artifacts",
        "coverage",
    ];
    let mut files = Vec::new();
    let mut dirs = vec![std::path::PathBuf::new()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(root.join(&dir)).expect("read a directory") {
            let entry = entry.expect("read a directory entry");
            let path = dir.join(entry.file_name());
            let kind = entry.file_type().expect("a file type");
            if kind.is_dir() && !skip.iter().any(|s| entry.file_name() == *s) {
                dirs.push(path);
            } else if kind.is_file() {
                files.push(path);
            }
        }
    }
    files
}

/// The relative targets of the `[text](target)` links of a Markdown file, with their line
/// numbers (from 0): not web or mail addresses, not anchors in the same file, nothing inside
/// code.
fn markdown_links(text: &str) -> Vec<(usize, String)> {
    let mut links = Vec::new();
    let mut in_code = false;
    for (line, content) in text.lines().enumerate() {
        if content.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        // Outside inline code spans: the even pieces between backticks.
        for prose in content.split('`').step_by(2) {
            for (at, _) in prose.match_indices("](") {
                let rest = &prose[at + 2..];
                let target = rest.split([')', ' ']).next().unwrap_or_default();
                let external = ["http://", "https://", "mailto:", "#"]
                    .iter()
                    .any(|scheme| target.starts_with(scheme));
                if !target.is_empty() && !external {
                    links.push((line, target.to_owned()));
                }
            }
        }
    }
    links
}

/// What a file that is not Markdown cites in the repository, with line numbers (from 0): every
/// path to a Markdown file under `docs/`, and every path to a Markdown file with an anchor, each
/// from the repository's root.
fn citations(text: &str) -> Vec<(usize, String)> {
    let is_path = |c: char| c.is_ascii_alphanumeric() || "_./-#".contains(c);
    let mut found = Vec::new();
    for (line, content) in text.lines().enumerate() {
        for (at, _) in content.match_indices(".md") {
            let start = content[..at]
                .rfind(|c: char| !is_path(c))
                .map_or(0, |i| i + 1);
            let end = content[at..]
                .find(|c: char| !is_path(c))
                .map_or(content.len(), |i| at + i);
            let reference = content[start..end].trim_end_matches(['.', '-', '#']);
            let address = content[..start].ends_with(':');
            if !address && (reference.starts_with("docs/") || reference.contains(".md#")) {
                found.push((line, reference.to_owned()));
            }
        }
    }
    found
}

/// Checks that `reference` (`PATH` or `PATH#anchor`, relative to `base` in `root`) names an
/// existing file or directory, and, for an anchor into Markdown, one of its headings.
fn resolve(root: &Path, base: &Path, reference: &str) -> Result<(), String> {
    let (path, anchor) = match reference.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (reference, None),
    };
    let target = root.join(base).join(path);
    if !target.exists() {
        return Err(format!("{} does not exist", base.join(path).display()));
    }
    match anchor {
        Some(anchor) if path.ends_with(".md") => {
            let text = std::fs::read_to_string(&target).map_err(|e| e.to_string())?;
            if heading_anchors(&text).iter().any(|a| a == anchor) {
                Ok(())
            } else {
                Err(format!("{path} has no heading whose anchor is #{anchor}"))
            }
        }
        _ => Ok(()),
    }
}

/// The anchors GitHub gives the headings of a Markdown file: lowercase, spaces made hyphens,
/// other punctuation dropped, and `-1`, `-2`, … after repeats.
fn heading_anchors(text: &str) -> Vec<String> {
    let mut anchors = Vec::new();
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut in_code = false;
    for content in text.lines() {
        if content.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        let hashes = content.chars().take_while(|c| *c == '#').count();
        if in_code || !(1..=6).contains(&hashes) || !content[hashes..].starts_with(' ') {
            continue;
        }
        let slug: String = content[hashes..]
            .trim()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .flat_map(char::to_lowercase)
            .collect();
        let repeats = seen.entry(slug.clone()).or_default();
        *repeats += 1;
        let repeats = *repeats - 1;
        anchors.push(if repeats == 0 {
            slug
        } else {
            format!("{slug}-{repeats}")
        });
    }
    anchors
}
