//! The real Quadlet checks: Podman's Quadlet generator and `systemd-analyze verify`, run on a
//! directory of Quadlet units as a render writes them (`opm mod build … -p quadlet --out-dir
//! DIR`).
//!
//! [`check`] is the one entry point. It passes a directory only when every tool is silent:
//!
//! 1. **`quadlet`** (Podman 5.4.2's generator, which `tests/setup.sh` unpacks from Debian
//!    trixie's podman package and puts on `PATH`) converts every `*.container`, `*.volume`,
//!    `*.network`, `*.pod`, `*.kube`, `*.image` and `*.build` under the directory, subfolders
//!    included, as systemd runs it at boot (`QUADLET_UNIT_DIRS=DIR quadlet -no-kmsg-log OUT`,
//!    system scope), into `.service` units. Quadlet exits 0 after a warning (an image name that
//!    is not fully qualified): any line it prints is a failure, as is its exit status.
//! 2. Every file a generated service names inside the directory (a bind mount's source, an
//!    environment file: units name them by paths relative to themselves, which Quadlet makes
//!    absolute) must exist there.
//! 3. **`.timer` units**, which Quadlet ignores (they are plain systemd units), are taken as
//!    they are; each must activate a service that one of the directory's units generates.
//! 4. **`systemd-analyze verify`** checks the generated services and the timers in a root of
//!    their own (`--root`): the units of Debian's `systemd` package (the targets the services
//!    depend on), Podman's `usr/bin/podman` (from the same package as the generator: the
//!    executable every `ExecStart=` names) and the units under test, nothing else of this
//!    machine's. systemd-analyze warns of an unknown key or a bad value and exits 0: here any
//!    line it prints is a failure.
//!
//! Every step runs whatever an earlier one found, and the error lists every diagnostic with the
//! files it is about, the generated service and the unit it came from:
//!
//! ```no_run
//! let render = std::path::Path::new("out"); // opm mod build … -p quadlet --out-dir out
//! if let Err(diagnostics) = opm_tests::quadlet::check(render) {
//!     panic!("the render is not valid Quadlet:\n{diagnostics}");
//! }
//! ```
//!
//! What Podman is asked to run is [`services`] (the services `quadlet` generates from a
//! directory, by name) and [`exec_start`] (a service's `ExecStart=` as the words systemd passes
//! to `podman`, its quoting, escapes and `%%`/`$$` undone), so a test can assert the arguments a
//! container gets rather than the unit's text.
//!
//! systemd-analyze verifies the system scope (rootful Quadlet, `/etc/containers/systemd`):
//! systemd 252's `verify --user` refuses a root directory, and without one it would read this
//! machine's units.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The file name endings of the units Quadlet converts (podman 5.4's generator, `main.go`'s
/// supported extensions).
pub const QUADLET_UNITS: [&str; 7] = [
    "container",
    "volume",
    "network",
    "pod",
    "kube",
    "image",
    "build",
];

/// Where the generated units sit in the verification root: systemd's unit directory for the
/// administrator's units.
const UNIT_DIR: &str = "etc/systemd/system";

/// Checks the Quadlet units under `dir` with the real tools (see the module's guide): `Ok` when
/// `quadlet` converts them all and `systemd-analyze verify` accepts what it generates, both
/// without a word; otherwise every diagnostic, naming the files it is about.
pub fn check(dir: &Path) -> Result<(), String> {
    let dir = fs::canonicalize(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let units = Units::find(&dir)?;
    let tools = Tools::find()?;
    let root = tempfile::tempdir().map_err(|e| format!("a temporary directory: {e}"))?;
    let out = root.path().join(UNIT_DIR);
    fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;

    // Every stage runs, so that the error holds all there is to fix: what quadlet converted is
    // checked even when it refused another unit.
    let mut problems = Vec::new();
    problems.extend(generate(&tools, &dir, &out).err());
    let mut verified = generated_services(&out)?;
    problems.extend(check_named_files(&dir, &verified).err());
    let timers = take_timers(&dir, &units.timers, &verified, &out, &mut problems)?;
    verified.extend(timers);
    if !verified.is_empty() {
        prepare_root(&tools, root.path())?;
        problems.extend(verify(&tools, root.path(), &dir, &verified).err());
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// The services Podman's `quadlet` generates from the units under `dir`, by file name
/// (`web.service`), each its text; an error when `quadlet` refuses a unit or says anything.
pub fn services(dir: &Path) -> Result<BTreeMap<String, String>, String> {
    let dir = fs::canonicalize(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let tools = Tools::find()?;
    let out = tempfile::tempdir().map_err(|e| format!("a temporary directory: {e}"))?;
    generate(&tools, &dir, out.path())?;
    Ok(generated_services(out.path())?
        .into_iter()
        .map(|(name, unit)| (name, unit.text))
        .collect())
}

/// The words of the `ExecStart=` of the service text `service`, as systemd hands them to the
/// program (`/usr/bin/podman` first): each word unquoted (`"…"`, `'…'`) and its C escapes
/// undone (systemd.syntax(7)), then `%%` read as `%` and `$$` as `$` (systemd.service(5)), a
/// specifier such as `%t` kept as `%{t}`. A `%` before what is no specifier, a `$` alone (a
/// variable systemd would expand), an unknown escape or an unterminated quote is an error, as
/// is a service with no `ExecStart=` or with several.
pub fn exec_start(service: &str) -> Result<Vec<String>, String> {
    let mut lines = service
        .lines()
        .filter_map(|line| line.strip_prefix("ExecStart="));
    let (Some(line), None) = (lines.next(), lines.next()) else {
        return Err(format!("not one ExecStart= line in:\n{service}"));
    };
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            break;
        }
        let mut word = String::new();
        let mut quote: Option<char> = None;
        while let Some(c) = chars.next() {
            match (quote, c) {
                (Some(open), c) if c == open => quote = None,
                (None, '"' | '\'') => quote = Some(c),
                (None, c) if c.is_whitespace() => break,
                (_, '\\') => word.push(match chars.next() {
                    Some('n') => '\n',
                    Some('t') => '\t',
                    Some(escaped @ ('\\' | '"' | '\'' | ' ')) => escaped,
                    other => {
                        return Err(format!("an escape \\{other:?} in ExecStart={line}"));
                    }
                }),
                (_, c) => word.push(c),
            }
        }
        if quote.is_some() {
            return Err(format!("an unterminated quote in ExecStart={line}"));
        }
        words.push(unescape_systemd(&word).map_err(|e| format!("{e} in ExecStart={line}"))?);
    }
    Ok(words)
}

/// `word` with systemd's `%%` read as `%` and `$$` as `$`, and a specifier (`%t`, a letter
/// after one `%`: Quadlet's own `--cidfile=%t/%N.cid`) kept as `%{t}`, so that it is not
/// mistaken for the text `%t`; a `%` before anything else, or a `$` alone, is an error.
fn unescape_systemd(word: &str) -> Result<String, String> {
    let mut out = String::with_capacity(word.len());
    let mut chars = word.chars();
    while let Some(c) = chars.next() {
        if !matches!(c, '%' | '$') {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some(next) if next == c => out.push(c),
            Some(letter) if c == '%' && letter.is_ascii_alphabetic() => {
                out.push_str(&format!("%{{{letter}}}"));
            }
            other => {
                return Err(format!(
                    "{c}{} in {word:?} is expanded by systemd",
                    other.map(String::from).unwrap_or_default()
                ));
            }
        }
    }
    Ok(out)
}

/// Copies `timers` into `out` beside the services Quadlet generated, each by file name with its
/// text; and adds to `problems` each that activates a unit not among `services`.
fn take_timers(
    dir: &Path,
    timers: &[PathBuf],
    services: &BTreeMap<String, Unit>,
    out: &Path,
    problems: &mut Vec<String>,
) -> Result<Vec<(String, Unit)>, String> {
    let mut taken = Vec::new();
    for timer in timers {
        let text = fs::read_to_string(timer).map_err(|e| format!("{}: {e}", timer.display()))?;
        let activates = timer_unit(&text, timer);
        if !services.contains_key(&activates) {
            problems.push(format!(
                "{} activates {activates}, which none of the units in {} generates (a {} \
                 would)",
                relative(dir, timer),
                dir.display(),
                activates.replace(".service", ".container")
            ));
        }
        let name = file_name(timer);
        let copy = out.join(&name);
        fs::write(&copy, &text).map_err(|e| format!("{}: {e}", copy.display()))?;
        let source = timer.clone();
        taken.push((name, Unit { source, text }));
    }
    Ok(taken)
}

/// The units found under a directory.
struct Units {
    /// The `.timer` units, in path order.
    timers: Vec<PathBuf>,
}

impl Units {
    /// The units under `dir`, subfolders included: an error when there is no Quadlet unit, or
    /// when two share a file name (Quadlet would convert the first it meets and skip the other
    /// without a word).
    fn find(dir: &Path) -> Result<Self, String> {
        let mut files = Vec::new();
        walk(dir, &mut files)?;
        files.sort();
        let mut by_name: BTreeMap<String, &Path> = BTreeMap::new();
        let mut quadlet = 0;
        let mut timers = Vec::new();
        for file in &files {
            let extension = file.extension().and_then(OsStr::to_str).unwrap_or("");
            let is_quadlet = QUADLET_UNITS.contains(&extension);
            if !is_quadlet && extension != "timer" {
                continue;
            }
            if let Some(first) = by_name.insert(file_name(file), file) {
                return Err(format!(
                    "{} and {} share a unit name: Quadlet and systemd would see only one",
                    relative(dir, first),
                    relative(dir, file)
                ));
            }
            if is_quadlet {
                quadlet += 1;
            } else {
                timers.push(file.clone());
            }
        }
        if quadlet == 0 {
            return Err(format!(
                "{} holds no Quadlet unit (*.{})",
                dir.display(),
                QUADLET_UNITS.join(", *.")
            ));
        }
        Ok(Self { timers })
    }
}

/// Every file under `dir`, in any order.
fn walk(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        if path.is_dir() {
            walk(&path, files)?;
        } else {
            files.push(path);
        }
    }
    Ok(())
}

/// The programs the checks run.
struct Tools {
    /// Podman's Quadlet generator.
    quadlet: PathBuf,
    /// The `podman` of the package `quadlet` came from.
    podman: PathBuf,
    /// systemd's `systemd-analyze`.
    systemd_analyze: PathBuf,
}

impl Tools {
    /// `quadlet` and `systemd-analyze` on `PATH`, and the `usr/bin/podman` of the package root
    /// `quadlet` lies in (`ROOT/usr/libexec/podman/quadlet`, as `tests/setup.sh` unpacks it).
    fn find() -> Result<Self, String> {
        let quadlet = on_path("quadlet").ok_or(
            "quadlet is not on PATH: tests/setup.sh unpacks it (Podman 5.4.2's, from Debian \
             trixie's podman package) and prints the line that puts it there",
        )?;
        let quadlet =
            fs::canonicalize(&quadlet).map_err(|e| format!("{}: {e}", quadlet.display()))?;
        let podman = quadlet
            .ancestors()
            .nth(4)
            .map(|package| package.join("usr/bin/podman"))
            .filter(|podman| podman.is_file())
            .ok_or_else(|| {
                format!(
                    "{} is not in an unpacked podman package (no usr/bin/podman beside its \
                     usr/libexec/podman/): use the one tests/setup.sh unpacks",
                    quadlet.display()
                )
            })?;
        let systemd_analyze = on_path("systemd-analyze").ok_or(
            "systemd-analyze is not on PATH: tests/setup.sh installs it (Debian's systemd)",
        )?;
        Ok(Self {
            quadlet,
            podman,
            systemd_analyze,
        })
    }
}

/// The first `program` on `PATH`.
fn on_path(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
}

/// Runs Quadlet on `dir` as systemd's generator, writing the services into `out`.
fn generate(tools: &Tools, dir: &Path, out: &Path) -> Result<(), String> {
    let output = Command::new(&tools.quadlet)
        .arg("-no-kmsg-log")
        .arg(out)
        .env("QUADLET_UNIT_DIRS", dir)
        .output()
        .map_err(|e| format!("{}: {e}", tools.quadlet.display()))?;
    // Each line starts `quadlet-generator[PID]: `, which says nothing the error does not.
    let printed = said(&output);
    let said: Vec<&str> = printed
        .lines()
        .map(|line| match line.split_once("]: ") {
            Some((generator, rest)) if generator.starts_with("quadlet-generator[") => rest,
            _ => line,
        })
        .collect();
    let said = said.join("\n");
    if output.status.success() && said.is_empty() {
        return Ok(());
    }
    Err(format!(
        "quadlet ({}) on {}: {}:\n{}",
        tools.quadlet.display(),
        dir.display(),
        output.status,
        indent(&said)
    ))
}

/// The services Quadlet generated in `out`, by file name, each with the unit it came from
/// (its `SourcePath=`) and its text.
fn generated_services(out: &Path) -> Result<BTreeMap<String, Unit>, String> {
    let mut services = BTreeMap::new();
    let entries = fs::read_dir(out).map_err(|e| format!("{}: {e}", out.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| format!("{}: {e}", out.display()))?.path();
        if path.extension() != Some(OsStr::new("service")) || !path.is_file() {
            continue;
        }
        let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let source = text
            .lines()
            .find_map(|line| line.strip_prefix("SourcePath="))
            .map(PathBuf::from)
            .ok_or_else(|| format!("quadlet generated {} without a SourcePath=", path.display()))?;
        services.insert(file_name(&path), Unit { source, text });
    }
    Ok(services)
}

/// A unit systemd-analyze verifies: a service Quadlet generated, or a timer taken as it is.
struct Unit {
    /// The file under the checked directory it came from.
    source: PathBuf,
    /// Its text.
    text: String,
}

/// Every path inside `dir` that a generated service's command lines name must exist: a unit
/// names a bind mount's source or an environment file beside it by a relative path, which
/// Quadlet resolves against the unit's folder.
fn check_named_files(dir: &Path, services: &BTreeMap<String, Unit>) -> Result<(), String> {
    let prefix = format!("{}/", dir.display());
    let mut missing = Vec::new();
    for (name, service) in services {
        let mut section = "";
        let commands = service.text.lines().filter(|line| {
            if line.starts_with('[') {
                section = line;
            }
            section == "[Service]" && line.starts_with("Exec")
        });
        for line in commands {
            let mut rest = line;
            while let Some(at) = rest.find(&prefix) {
                let named = &rest[at..];
                let end = named
                    .find([':', ',', ' ', '"', '\'', '='])
                    .unwrap_or(named.len());
                let path = Path::new(&named[..end]);
                if !path.exists() {
                    missing.push(format!(
                        "{} (through {name}) names {}, which is not there",
                        relative(dir, &service.source),
                        relative(dir, path)
                    ));
                }
                rest = &named[end..];
            }
        }
    }
    missing.sort();
    missing.dedup();
    if missing.is_empty() {
        return Ok(());
    }
    Err(format!(
        "files the units in {} name are missing:\n{}",
        dir.display(),
        indent(&missing.join("\n"))
    ))
}

/// The unit the timer `path`, whose text is `text`, activates: its `[Timer]` section's last
/// `Unit=`, or the service of its own name.
fn timer_unit(text: &str, path: &Path) -> String {
    let mut section = "";
    let mut unit = None;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') && line.ends_with(']') {
            section = line;
        } else if let Some((key, value)) = line.split_once('=')
            && section == "[Timer]"
            && key.trim() == "Unit"
        {
            unit = Some(value.trim().to_owned());
        }
    }
    unit.unwrap_or_else(|| {
        let stem = path.file_stem().and_then(OsStr::to_str).unwrap_or("");
        format!("{stem}.service")
    })
}

/// Fills the verification root `root`: the unit files of Debian's `systemd` package under
/// `usr/lib/systemd/system` (what `dpkg-query -L systemd` lists), and Podman's binary as
/// `usr/bin/podman`.
fn prepare_root(tools: &Tools, root: &Path) -> Result<(), String> {
    let bin = root.join("usr/bin");
    fs::create_dir_all(&bin).map_err(|e| format!("{}: {e}", bin.display()))?;
    let podman = bin.join("podman");
    // A link where the cache and the temporary directory share a file system, a copy elsewhere.
    if fs::hard_link(&tools.podman, &podman).is_err() {
        fs::copy(&tools.podman, &podman).map_err(|e| format!("{}: {e}", tools.podman.display()))?;
    }

    let listing = Command::new("dpkg-query")
        .args(["-L", "systemd"])
        .output()
        .map_err(|e| format!("dpkg-query (the files of Debian's systemd package): {e}"))?;
    if !listing.status.success() {
        return Err(format!(
            "dpkg-query -L systemd: {}:\n{}",
            listing.status,
            indent(&said(&listing))
        ));
    }
    let units = root.join("usr/lib/systemd/system");
    fs::create_dir_all(&units).map_err(|e| format!("{}: {e}", units.display()))?;
    let mut copied = 0;
    for line in String::from_utf8_lossy(&listing.stdout).lines() {
        let Some((_, relative)) = line.split_once("/lib/systemd/system/") else {
            continue;
        };
        let (from, to) = (Path::new(line), units.join(relative));
        let copy = || -> std::io::Result<()> {
            let meta = fs::symlink_metadata(from)?;
            if meta.is_dir() {
                return fs::create_dir_all(&to);
            }
            if let Some(parent) = to.parent() {
                fs::create_dir_all(parent)?;
            }
            if meta.file_type().is_symlink() {
                std::os::unix::fs::symlink(fs::read_link(from)?, &to)
            } else {
                fs::copy(from, &to).map(drop)
            }
        };
        copy().map_err(|e| format!("{line} (of Debian's systemd package): {e}"))?;
        copied += 1;
    }
    if copied == 0 {
        return Err("dpkg-query -L systemd lists no unit under /lib/systemd/system".to_owned());
    }
    Ok(())
}

/// Runs `systemd-analyze verify` on `units` in `root`; anything it prints is a failure, told
/// with the lines it is about and the files of `dir` the units came from.
fn verify(
    tools: &Tools,
    root: &Path,
    dir: &Path,
    units: &BTreeMap<String, Unit>,
) -> Result<(), String> {
    let output = Command::new(&tools.systemd_analyze)
        .args([
            "verify",
            "--man=no",
            "--generators=no",
            "--recursive-errors=yes",
        ])
        .arg(format!("--root={}", root.display()))
        .args(units.keys())
        .env("SYSTEMD_LOG_COLOR", "0")
        .env("SYSTEMD_LOG_LOCATION", "0")
        .output()
        .map_err(|e| format!("{}: {e}", tools.systemd_analyze.display()))?;
    let said = said(&output);
    if output.status.success() && said.is_empty() {
        return Ok(());
    }
    let unit_dir = format!("{}/", root.join(UNIT_DIR).display());
    let mut lines = Vec::new();
    let mut sources = std::collections::BTreeSet::new();
    for line in said.lines() {
        let line = line.replace(&unit_dir, "");
        lines.push(line.clone());
        // `NAME.service: …` or `NAME.service:LINE: …`: the unit it was generated from, and the
        // line.
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let Some(unit) = units.get(name) else {
            continue;
        };
        let source = relative(dir, &unit.source);
        if source != name {
            sources.insert(format!("{name} ← {source}"));
        }
        let number = rest.split(':').next().and_then(|n| n.parse::<usize>().ok());
        let shown = number.and_then(|n| Some((n, unit.text.lines().nth(n.checked_sub(1)?)?)));
        if let Some((number, text)) = shown {
            lines.push(format!("    line {number}: {text}"));
        }
    }
    let sources: Vec<String> = sources.into_iter().collect();
    Err(format!(
        "systemd-analyze verify on the units of {} (what quadlet generated, and the timers): \
         {}:\n{}{}",
        dir.display(),
        output.status,
        indent(&lines.join("\n")),
        if sources.is_empty() {
            String::new()
        } else {
            format!(
                "\n  generated from:\n{}",
                indent(&indent(&sources.join("\n")))
            )
        }
    ))
}

/// What a program printed, stdout then stderr, without surrounding blank lines.
fn said(output: &Output) -> String {
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    text.trim().to_owned()
}

/// `text` with every line indented by two spaces.
fn indent(text: &str) -> String {
    text.lines()
        .map(|line| format!("  {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The file name of `path`.
fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `path` relative to `dir` when inside it.
fn relative(dir: &Path, path: &Path) -> String {
    path.strip_prefix(dir).unwrap_or(path).display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_start_is_the_words_systemd_passes_on() {
        let service = "[Service]\nExecStart=/usr/bin/podman run --cidfile=%t/%N.cid --env \
                       \"A=100%% of $$5\" -v '/a b:/c d' --health-cmd \"x 'y' \\\"z\\\"\"\n";
        assert_eq!(
            exec_start(service).unwrap(),
            [
                "/usr/bin/podman",
                "run",
                "--cidfile=%{t}/%{N}.cid",
                "--env",
                "A=100% of $5",
                "-v",
                "/a b:/c d",
                "--health-cmd",
                "x 'y' \"z\""
            ]
        );
        let lone = "ExecStart=/usr/bin/podman run --env A=$HOME\n";
        assert!(
            exec_start(lone)
                .unwrap_err()
                .contains("expanded by systemd")
        );
        let percent = "ExecStart=/usr/bin/podman run --env \"A=100% of it\"\n";
        assert!(
            exec_start(percent)
                .unwrap_err()
                .contains("\"A=100% of it\" is expanded by systemd")
        );
        assert!(exec_start("[Service]\n").is_err());
    }
}
