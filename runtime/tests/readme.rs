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
        "opm mod push",
        "opm mod verify-render",
        "opm argocd plugin",
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
    let path = path_with_opm();
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
        "shop-layout/index.json",
        "shop-deploy/opm.render",
        "plugin.yaml",
    ] {
        assert!(scratch.path().join(file).exists(), "{file} was not written");
    }
    let last = std::fs::read_to_string(scratch.path().join("render.jsonl")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(last.lines().last().unwrap()).unwrap();
    assert_eq!(summary["event"], "summary");
}

/// Every sample of what opm prints that the README shows (a `text` block whose first line is
/// `$ opm …`) is what that command prints now: each line shown (but `…`, which stands for lines
/// left out) comes in the output in that order, the same but for times (`0.37 ms`,
/// `"micros":321`), which differ from run to run. Fuel is counted, not timed, so it must match.
#[test]
fn every_sample_output_of_the_readme_is_what_opm_prints() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .expect("README.md");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let path = path_with_opm();
    let mut samples = 0;
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        if line != "```text" {
            continue;
        }
        let block: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        let Some(command) = block.first().and_then(|first| first.strip_prefix("$ opm ")) else {
            continue;
        };
        samples += 1;
        let output = Command::new("bash")
            .args(["-euo", "pipefail", "-c", &format!("opm {command}")])
            .current_dir(&root)
            .env("PATH", &path)
            .env("NO_COLOR", "1")
            .output()
            .expect("run bash");
        assert!(output.status.success(), "README sample failed: {command}");
        let printed: Vec<String> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .chain(String::from_utf8_lossy(&output.stderr).lines())
            .map(untimed)
            .collect();
        let mut at = 0;
        for shown in block[1..].iter().filter(|l| l.trim() != "…") {
            let shown = untimed(shown);
            match printed[at..].iter().position(|line| *line == shown) {
                Some(found) => at += found + 1,
                None => panic!(
                    "README sample `opm {command}` shows\n  {shown}\nwhich it does not print \
                     (in this order); it prints:\n{}",
                    printed.join("\n")
                ),
            }
        }
    }
    assert!(samples >= 2, "found {samples} samples");
}

/// `line` with its times made `N`: `0.37 ms` and `"micros":321`.
fn untimed(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find(|c: char| c.is_ascii_digit()) {
        let (before, from) = rest.split_at(at);
        let end = from
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(from.len());
        let (number, after) = from.split_at(end);
        let timed = after.starts_with(" ms") || before.ends_with("\"micros\":");
        out.push_str(before);
        out.push_str(if timed { "N" } else { number });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// `PATH` with the test build's `opm` first, as the README's commands name it.
fn path_with_opm() -> String {
    let bin = Path::new(env!("CARGO_BIN_EXE_opm")).parent().unwrap();
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// The repository stands alone: no file cites a design document or a path outside it; every
/// relative link of its Markdown files names a file that exists, and a heading of it when the
/// link has an anchor; every page of `docs/`, or Markdown file with an anchor, that another
/// file cites (a Rust, YAML or shell comment) exists, read from the repository's root; and
/// every path a code comment or a Markdown code span quotes ([`quoted_paths`]) exists.
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
        // From the root, the quoting file's crate, or (Markdown) the file's own folder.
        let crate_dir = crate_of(&root, file);
        let bases = [Path::new(""), crate_dir.as_path(), base];
        for (line, quoted) in quoted_paths(&text, markdown) {
            if !bases
                .iter()
                .any(|base| root.join(base).join(&quoted).exists())
            {
                problems.push(format!("{}: {quoted} does not exist", at(line)));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The folders a quoted path of the repository starts with: its top-level folders, and `src/`
/// of the crate the quoting file is in (a path is looked for from the root, then the crate).
const QUOTED_ROOTS: &[&str] = &[
    "benches/",
    "crates/",
    "docs/",
    "examples/",
    "guest-sdk/",
    "providers/",
    "runtime/",
    "src/",
    "tests/",
    "transformers/",
    "wit/",
];

/// The paths of the repository a file quotes, with line numbers (from 0): in a Markdown file,
/// inside its code spans (not its fenced blocks, which show commands and output); in any other,
/// inside its comments (after `//`, or a line's `#`). A path is a word that starts with one of
/// [`QUOTED_ROOTS`] and holds a `.` or ends with `/` (a file or a folder, not a crate name or a
/// command's argument); a pattern (`*`, `<`, `{`, `NAME`) is not one, and neither is a `src/…`
/// of Markdown, which describes some crate's layout rather than quoting a file.
fn quoted_paths(text: &str, markdown: bool) -> Vec<(usize, String)> {
    let is_path = |c: char| c.is_ascii_alphanumeric() || "_./-".contains(c);
    let mut found = Vec::new();
    let mut in_code = false;
    for (line, content) in text.lines().enumerate() {
        let pieces: Vec<&str> = if markdown {
            if content.trim_start().starts_with("```") {
                in_code = !in_code;
                continue;
            }
            if in_code {
                continue;
            }
            content.split('`').skip(1).step_by(2).collect()
        } else {
            let comment = match content.find("//") {
                Some(at) => &content[at + 2..],
                None => match content.trim_start().strip_prefix('#') {
                    Some(rest) if !rest.starts_with('[') && !rest.starts_with('!') => rest,
                    _ => continue,
                },
            };
            vec![comment]
        };
        for piece in pieces {
            for (at, _) in piece.char_indices() {
                let before = piece[..at].chars().next_back();
                if before.is_some_and(|c| is_path(c) || c == ':' || c == '$') {
                    continue;
                }
                let rest = &piece[at..];
                if !QUOTED_ROOTS.iter().any(|root| rest.starts_with(root)) {
                    continue;
                }
                let end = rest.find(|c: char| !is_path(c)).unwrap_or(rest.len());
                let word = rest[..end].trim_end_matches(['.', '-']);
                let next = rest[end..].chars().next();
                let pattern = next.is_some_and(|c| "*<{[".contains(c))
                    || word.contains("..")
                    || word.chars().any(|c| c.is_ascii_uppercase());
                let named =
                    word.ends_with('/') || word.rsplit('/').next().is_some_and(|f| f.contains('.'));
                let described = markdown && word.starts_with("src/");
                if !pattern && named && !described {
                    found.push((line, word.to_owned()));
                }
            }
        }
    }
    found
}

/// The folder of the crate `file` (relative to `root`) belongs to: the nearest one above it
/// with a `Cargo.toml`.
fn crate_of(root: &Path, file: &Path) -> std::path::PathBuf {
    let mut dir = file.parent();
    while let Some(at) = dir {
        if root.join(at).join("Cargo.toml").is_file() {
            return at.to_owned();
        }
        dir = at.parent();
    }
    std::path::PathBuf::new()
}

#[test]
fn a_stale_path_in_a_comment_or_a_code_span_is_found() {
    // Written with the comment marker in pieces, so that this file does not quote them itself.
    let slashes = "/".repeat(2);
    let rust = format!(
        "let x = 1; {slashes} the writer (src/bundle/format.rs), see runtime/src/gone.rs.\n\
         {slashes} a glob tests/all/*.rs, a folder crates/core/, a crate opm-core, runtime/src/."
    );
    assert_eq!(
        quoted_paths(&rust, false),
        [
            (0, "src/bundle/format.rs".to_owned()),
            (0, "runtime/src/gone.rs".to_owned()),
            (1, "crates/core/".to_owned()),
            (1, "runtime/src/".to_owned()),
        ]
    );
    let toml = "# the client (src/provider/oci/client.rs)\n[dependencies]\nx = \"runtime/a.rs\"";
    assert_eq!(
        quoted_paths(toml, false),
        [(0, "src/provider/oci/client.rs".to_owned())]
    );
    let tick = "`";
    let markdown = format!(
        "See {tick}runtime/src/x.rs{tick} and runtime/src/y.rs.\n```\nopm x tests/a.rs\n```"
    );
    assert_eq!(
        quoted_paths(&markdown, true),
        [(0, "runtime/src/x.rs".to_owned())]
    );
    // And a path of the binary's crate that moved is not there from the root or the crate.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let crate_dir = crate_of(&root, Path::new("runtime/build.rs"));
    assert_eq!(crate_dir, Path::new("runtime"));
    assert!(!root.join(&crate_dir).join("src/codegen.rs").exists());
    assert!(root.join(&crate_dir).join("src/embedded.rs").exists());
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
