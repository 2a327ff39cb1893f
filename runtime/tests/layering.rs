//! What the crates cannot say of themselves. Between crates, Cargo refuses a cycle: `opm-core`
//! cannot name the sandbox, the registry or the binary's crate, and no crate but `opm-runtime`
//! the command line. Inside the two crates with many modules, `opm-core` and `opm-runtime`, the
//! modules form layers too: no top-level module of a crate's `src` reaches, through the
//! `crate::…` paths of its code, a module that reaches back to it. Data flows one way (module →
//! definitions → plan → render in the core; render → report → cli in the binary's crate), and
//! the shared helpers sit below everything that uses them. A cycle is printed with the file and
//! line of each step.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// For each top-level module, the other top-level modules its code names, each with the first
/// place it does.
type Graph = BTreeMap<String, BTreeMap<String, String>>;

#[test]
fn no_module_of_the_core_imports_from_a_module_that_imports_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/core/src");
    let graph = graph(&src);
    assert!(graph.len() > 10, "found only {:?}", graph.keys());
    assert!(
        graph["render"].contains_key("matching") && graph["matching"].contains_key("module"),
        "the scan finds the crate's edges: {graph:?}"
    );
    assert_acyclic(&graph);
}

#[test]
fn no_module_of_the_binarys_crate_imports_from_a_module_that_imports_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = graph(&src);
    assert!(graph.len() >= 5, "found only {:?}", graph.keys());
    assert!(
        graph["cli"].contains_key("render") && graph["report"].contains_key("render"),
        "the scan finds the crate's edges: {graph:?}"
    );
    assert_acyclic(&graph);
    assert!(
        graph.values().all(|edges| !edges.contains_key("cli")),
        "only main.rs may use the CLI"
    );
}

/// Panics with the steps of the first cycle of `graph`, if it has one.
fn assert_acyclic(graph: &Graph) {
    for module in graph.keys() {
        if let Some(cycle) = cycle_from(graph, module) {
            let steps: Vec<String> = cycle
                .windows(2)
                .map(|pair| format!("{} → {} ({})", pair[0], pair[1], graph[&pair[0]][&pair[1]]))
                .collect();
            panic!("modules import each other:\n  {}", steps.join("\n  "));
        }
    }
}

/// The top-level modules of `src` and the `crate::NAME` paths in their code (comments left out).
fn graph(src: &Path) -> Graph {
    let mut modules = BTreeMap::new();
    for entry in std::fs::read_dir(src).expect("src reads") {
        let path = entry.expect("entry").path();
        let name = path
            .file_stem()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        if name == "lib" || name == "main" {
            continue;
        }
        if path.is_dir() || path.extension().is_some_and(|e| e == "rs") {
            modules.insert(name, path);
        }
    }
    let mut graph = Graph::new();
    for (name, path) in &modules {
        let edges = graph.entry(name.clone()).or_default();
        for file in rust_files(path) {
            let text = std::fs::read_to_string(&file).expect("source reads");
            for (number, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                for (at, _) in code.match_indices("crate::") {
                    let rest = &code[at + "crate::".len()..];
                    let target: String = rest
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if target != *name && modules.contains_key(&target) {
                        let place = format!(
                            "{}:{}",
                            file.strip_prefix(src).unwrap_or(&file).display(),
                            number + 1
                        );
                        edges.entry(target).or_insert(place);
                    }
                }
            }
        }
    }
    graph
}

fn rust_files(path: &Path) -> Vec<PathBuf> {
    if path.is_file() {
        return vec![path.to_owned()];
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path).expect("directory reads") {
        files.extend(rust_files(&entry.expect("entry").path()));
    }
    files.retain(|file| file.extension().is_some_and(|e| e == "rs"));
    files
}

/// A path of modules from `start` back to `start`, if there is one.
fn cycle_from(graph: &Graph, start: &str) -> Option<Vec<String>> {
    let mut stack = vec![vec![start.to_owned()]];
    let mut seen = std::collections::BTreeSet::new();
    while let Some(path) = stack.pop() {
        let last = path.last().expect("a path is never empty");
        for next in graph.get(last).into_iter().flat_map(|edges| edges.keys()) {
            let mut longer = path.clone();
            longer.push(next.clone());
            if next == start {
                return Some(longer);
            }
            if seen.insert(next.clone()) {
                stack.push(longer);
            }
        }
    }
    None
}
