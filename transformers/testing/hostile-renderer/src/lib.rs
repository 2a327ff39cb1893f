//! A renderer that misbehaves on request, for the tests of what the host makes of a renderer's
//! answer (`tests/all/renderer.rs`). The module label `renderer-mode` says how; without it, it
//! writes each resource's kind and name, one per line, in the order given.

use opm_guest::{Chunk, Context, File, Mode, Options, RenderError, Rendered, Renderer};

/// Misbehaves as the module's `renderer-mode` label says.
pub struct HostileRenderer;

fn file(path: &str, content: Vec<Chunk>) -> File {
    File::new(path, content)
}

impl Renderer for HostileRenderer {
    fn render(
        resources: &[Rendered],
        context: &Context,
        options: &Options,
    ) -> Result<Vec<File>, RenderError> {
        let mode = context
            .labels
            .get("renderer-mode")
            .map_or("", String::as_str);
        let listing: String = resources
            .iter()
            .map(|r| format!("{} {} {}\n", r.kind, r.name, r.component))
            .collect();
        Ok(match mode {
            "spin" => loop {
                std::hint::black_box(resources.len());
            },
            "hog" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![0; 16 << 20]);
                }
            }
            "panic" => panic!("the renderer gave up on {} resources", resources.len()),
            "escape" => vec![file("../outside.txt", vec![Chunk::Bytes(b"x".to_vec())])],
            "absolute" => vec![file("/etc/opm-was-here", vec![Chunk::Bytes(b"x".to_vec())])],
            "twice" => vec![
                file("a.yaml", vec![Chunk::Bytes(b"a".to_vec())]),
                file("a.yaml", vec![Chunk::Bytes(b"b".to_vec())]),
            ],
            // Not hostile since contract 1.2.0: files of every mode, printed in the host's
            // multi-file form without --out-dir.
            "two-files" => vec![
                file("a.yaml", vec![Chunk::Bytes(b"a".to_vec())]),
                file("secrets/b", vec![Chunk::Bytes(b"b\n".to_vec())]).with_mode(Mode::Private),
                file("bin/run", vec![Chunk::Bytes(b"#!/bin/sh\n".to_vec())])
                    .with_mode(Mode::Executable),
            ],
            "no-such-resource" => vec![file("a.yaml", vec![Chunk::Yaml(u32::MAX)])],
            "yaml-flood" => vec![file("a.yaml", vec![Chunk::Yaml(0); 1 << 20])],
            "huge" => vec![file("a.yaml", vec![Chunk::Bytes(vec![b'x'; 100 << 20])])],
            // The standard stream of what it was given, and a Pod no transformer made.
            "inject" => {
                let mut content = Vec::new();
                for index in 0..resources.len() {
                    content.push(Chunk::Bytes(b"---\n".to_vec()));
                    content.push(Chunk::Yaml(index as u32));
                }
                content.push(Chunk::Bytes(INJECTED_POD.as_bytes().to_vec()));
                vec![file("stream.yaml", content)]
            }
            // Its YAML beside files named as a Go project's are.
            "project-files" => ["out.yaml", "main.go", "go.mod", "README.md", "x.sh"]
                .iter()
                .map(|path| file(path, vec![Chunk::Bytes(b"x".to_vec())]))
                .collect(),
            // Every YAML chunk the old total allowed, all of the first resource.
            "yaml-one-resource" => vec![file(
                "a.yaml",
                vec![Chunk::Yaml(0); resources.len() * 4 + 16],
            )],
            "refuse-flood" => {
                return Err(RenderError::Refused(vec![(0, "no".into()); 2_000_000]));
            }
            "many-files" => (0..20_000)
                .map(|i| file(&format!("f{i}.yaml"), Vec::new()))
                .collect(),
            "deep" => vec![file(
                &vec!["d"; 500].join("/"),
                vec![Chunk::Bytes(b"x".to_vec())],
            )],
            "refuse-all" => {
                return Err(RenderError::Refused(
                    (0..resources.len())
                        .map(|i| {
                            (
                                i as u32,
                                format!("{} is not welcome here", resources[i].kind),
                            )
                        })
                        .collect(),
                ));
            }
            "refuse-nothing-there" => {
                return Err(RenderError::Refused(vec![(u32::MAX, "ghost".into())]));
            }
            "fail" => {
                return Err(RenderError::Failed(format!(
                    "cannot write {} as {}",
                    context.name, options.format
                )));
            }
            "log-secret" => {
                for resource in resources {
                    opm_guest::log::warn(&resource.json);
                }
                vec![file("out.txt", vec![Chunk::Bytes(listing.into_bytes())])]
            }
            _ => vec![file("out.txt", vec![Chunk::Bytes(listing.into_bytes())])],
        })
    }
}

/// What the `inject` mode adds to the stream.
const INJECTED_POD: &str = "---
apiVersion: v1
kind: Pod
metadata: {name: injected, namespace: kube-system}
spec:
  containers: [{name: x, image: busybox, securityContext: {privileged: true}}]
";

opm_guest::export_renderer!(HostileRenderer);
