//! Which environment variables a module reads. Every `${env:NAME}` of a module, its values files
//! and `--set` is looked up through an [`EnvReads`], which records the names, so that `opm mod
//! vet` and `--verbose=json` can list them, and refuses the names an allow-list (`--allow-env`)
//! leaves out: a module is data, and without one it can read any variable of the environment it
//! is rendered in — a CI job's tokens among them.
//!
//! ```
//! use opm_core::module::env::EnvReads;
//!
//! let env = |name: &str| Some(format!("value of {name}"));
//! let allowed = vec!["APP_*".to_owned()];
//! let reads = EnvReads::new(&env, Some(&allowed));
//! assert_eq!(reads.lookup("APP_DOMAIN").as_deref(), Some("value of APP_DOMAIN"));
//! assert_eq!(reads.lookup("GITHUB_TOKEN"), None);
//! assert_eq!(reads.read(), ["APP_DOMAIN", "GITHUB_TOKEN"]);
//! assert_eq!(reads.refused(), ["GITHUB_TOKEN"]);
//! ```

use std::collections::BTreeSet;
use std::sync::Mutex;

/// The environment as a module sees it: the names it asked for, and those refused.
pub struct EnvReads<'a> {
    env: &'a (dyn Fn(&str) -> Option<String> + Sync),
    allowed: Option<&'a [String]>,
    read: Mutex<BTreeSet<String>>,
    refused: Mutex<BTreeSet<String>>,
}

impl std::fmt::Debug for EnvReads<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvReads")
            .field("allowed", &self.allowed)
            .field("read", &self.read())
            .finish_non_exhaustive()
    }
}

impl<'a> EnvReads<'a> {
    /// Looks names up in `env`; with `allowed`, only the names it allows ([`allows`]).
    pub fn new(
        env: &'a (dyn Fn(&str) -> Option<String> + Sync),
        allowed: Option<&'a [String]>,
    ) -> Self {
        Self {
            env,
            allowed,
            read: Mutex::default(),
            refused: Mutex::default(),
        }
    }

    /// The value of `name`, recorded as read; none when it is unset or not allowed.
    pub fn lookup(&self, name: &str) -> Option<String> {
        lock(&self.read).insert(name.to_owned());
        if let Some(allowed) = self.allowed
            && !allows(allowed, name)
        {
            lock(&self.refused).insert(name.to_owned());
            return None;
        }
        (self.env)(name)
    }

    /// Every name looked up, in name order.
    pub fn read(&self) -> Vec<String> {
        lock(&self.read).iter().cloned().collect()
    }

    /// The names the allow-list refused, in name order.
    pub fn refused(&self) -> Vec<String> {
        lock(&self.refused).iter().cloned().collect()
    }

    /// `result` of a load through this lookup, with a variable that was refused reported as
    /// refused rather than as unset.
    pub fn explain<T>(
        &self,
        result: Result<T, super::ModuleError>,
    ) -> Result<T, super::ModuleError> {
        match result {
            Err(super::ModuleError::Env { origin, name })
                if lock(&self.refused).contains(&name) =>
            {
                Err(super::ModuleError::EnvNotAllowed {
                    origin,
                    name,
                    allowed: self.allowed.unwrap_or_default().join(", "),
                })
            }
            other => other,
        }
    }
}

/// Whether `allowed` (names, and prefixes ending in `*`) allows `name`.
pub fn allows(allowed: &[String], name: &str) -> bool {
    allowed.iter().any(|entry| match entry.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => entry == name,
    })
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
