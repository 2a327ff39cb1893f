//! Registry credentials from the Docker config file (`auths.REGISTRY.auth`, base64 of
//! `user:password`, as `docker login` writes it). They are sent only to the registry and to the
//! token realm it names, and never printed: [`Credentials`]'s `Debug` hides them.

use std::path::PathBuf;

/// A user name and password.
#[derive(Clone)]
pub struct Credentials {
    /// The user name.
    pub user: String,
    /// The password.
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credentials(…)")
    }
}

impl Credentials {
    /// The value of an `Authorization: Basic …` header.
    pub fn basic(&self) -> String {
        use base64::Engine as _;
        let pair = format!("{}:{}", self.user, self.password);
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        )
    }
}

/// The credentials the Docker config file `config` (default `$DOCKER_CONFIG/config.json`, else
/// `~/.docker/config.json`) holds for `registry`, if any. Docker Hub's entry is
/// `https://index.docker.io/v1/`.
pub fn for_registry(registry: &str, config: Option<PathBuf>) -> Option<Credentials> {
    let path = config.or_else(|| {
        std::env::var_os("DOCKER_CONFIG")
            .map(|dir| PathBuf::from(dir).join("config.json"))
            .or_else(|| {
                std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".docker/config.json"))
            })
    })?;
    let text = std::fs::read_to_string(path).ok()?;
    let config: serde_json::Value = serde_json::from_str(&text).ok()?;
    let auths = config.get("auths")?.as_object()?;
    let wanted = match registry {
        "docker.io" | "index.docker.io" | "registry-1.docker.io" => "index.docker.io",
        other => other,
    };
    let (_, entry) = auths.iter().find(|(key, _)| {
        let key = key
            .trim_start_matches("https://")
            .trim_start_matches("http://")
            .trim_end_matches('/');
        key == wanted || key.strip_suffix("/v1") == Some(wanted)
    })?;
    let encoded = entry.get("auth")?.as_str()?;
    use base64::Engine as _;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some(Credentials {
        user: user.to_owned(),
        password: password.to_owned(),
    })
}
