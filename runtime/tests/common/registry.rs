//! A real OCI registry for the tests: Debian's `docker-registry` (the CNCF distribution), on a
//! free port of loopback.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// A `docker-registry` serving `dir` on `address`, stopped when dropped.
pub struct Registry {
    child: Child,
    pub dir: tempfile::TempDir,
    /// `host:port`.
    pub address: String,
}

impl Registry {
    pub fn start(host: &str) -> Self {
        Self::start_with(host, None)
    }

    /// A registry on `host`; with `htpasswd`, one that wants those credentials.
    pub fn start_with(host: &str, htpasswd: Option<&str>) -> Self {
        let port = TcpListener::bind((host, 0))
            .expect("a free port")
            .local_addr()
            .expect("address")
            .port();
        let dir = tempfile::tempdir().expect("temp dir");
        let address = format!("{host}:{port}");
        let config = dir.path().join("registry.yml");
        let mut text = format!(
            "version: 0.1\nstorage: {{filesystem: {{rootdirectory: {}}}}}\nhttp: {{addr: \
             {address}}}\nlog: {{level: error}}\n",
            dir.path().join("data").display()
        );
        if let Some(htpasswd) = htpasswd {
            let path = dir.path().join("htpasswd");
            std::fs::write(&path, htpasswd).expect("write htpasswd");
            text += &format!(
                "auth: {{htpasswd: {{realm: opm-test, path: {}}}}}\n",
                path.display()
            );
        }
        std::fs::write(&config, text).expect("write config");
        let child = Command::new("docker-registry")
            .args(["serve", config.to_str().unwrap()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("docker-registry is installed (tests/setup.sh)");
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(&address).is_err() {
            assert!(Instant::now() < deadline, "the registry did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        Self {
            child,
            dir,
            address,
        }
    }

    pub fn oci(&self, path: &str) -> String {
        format!("oci://{}/{path}", self.address)
    }

    /// The file in the registry's storage that holds the blob `digest` (`sha256:…`).
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.trim_start_matches("sha256:");
        self.dir.path().join(format!(
            "data/docker/registry/v2/blobs/sha256/{}/{hex}/data",
            &hex[..2]
        ))
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
