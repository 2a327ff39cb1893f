//! Trust: the keys a project configures for a provider, and the signature check a bundle must
//! pass against them at `init` and at every render.

use std::path::PathBuf;

use super::{InstallError, Project, Requirement};
use crate::bundle::signature;

impl Project {
    /// The keys trusted for `requirement`: the project's and its own, their paths relative to
    /// `.opm/` (where `providers.yaml`, which names them, is).
    pub fn keys(
        &self,
        requirement: &Requirement,
    ) -> Result<Vec<minisign::PublicKey>, InstallError> {
        self.config
            .keys
            .iter()
            .chain(&requirement.keys)
            .map(|key| Ok(signature::read_public_key(&self.config_dir().join(key))?))
            .collect()
    }
}

/// Checks `signature` (the text of a `.minisig`, if there is one) of the bundle `origin`
/// (`bytes`) against `keys`, as vouching for the provider `name` at `version`; returns the
/// signing key's id. No keys, no check.
pub fn check_signature(
    origin: &str,
    bytes: &[u8],
    signature: Option<&[u8]>,
    keys: &[minisign::PublicKey],
    name: &str,
    version: &str,
) -> Result<Option<String>, InstallError> {
    if keys.is_empty() {
        return Ok(None);
    }
    let path = PathBuf::from(format!("{origin}.minisig"));
    let Some(text) = signature else {
        return Err(signature::SignatureError::Unsigned {
            bundle: origin.to_owned(),
            signature: path,
        }
        .into());
    };
    let sig = signature::parse_signature(&path, &String::from_utf8_lossy(text))?;
    let binding = signature::Binding {
        name: name.to_owned(),
        version: version.to_owned(),
    };
    let verified = signature::verify_provider(origin, bytes, &sig, keys, &binding)?;
    Ok(Some(verified.key_id))
}
