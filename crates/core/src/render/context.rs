//! The render context every transform receives (`docs/rendering.md#the-context`): instance
//! name, namespace, version, provider, timestamp, strict flag, and the labels that track what
//! opm rendered.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::calls::Context;

/// `app.kubernetes.io/managed-by`, set to [`MANAGED_BY`] on every resource.
pub const LABEL_MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// The value of [`LABEL_MANAGED_BY`].
pub const MANAGED_BY: &str = "open-platform-model";
/// The module a resource was rendered from.
pub const LABEL_MODULE_NAME: &str = "module.opmodel.dev/name";
/// The version of that module.
pub const LABEL_MODULE_VERSION: &str = "module.opmodel.dev/version";
/// The component a resource was rendered from.
pub const LABEL_COMPONENT_NAME: &str = "component.opmodel.dev/name";
/// The instance a resource was rendered for, when it is not the module's own name
/// (`docs/rendering.md#instances`). A provider prefixes the names of its objects with the
/// instance exactly when this label is present.
pub const LABEL_MODULE_INSTANCE: &str = "module.opmodel.dev/instance";

/// The context of a render, before it is specialised per component.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RenderContext {
    /// Module name.
    pub name: String,
    /// Instance name: the module's name unless the render names another (`--instance`).
    pub instance: String,
    /// Target namespace.
    pub namespace: String,
    /// Module version.
    pub version: String,
    /// The providers' names, separated by ", " (each call is told its own transformer's).
    pub provider: String,
    /// Render time, RFC 3339, UTC.
    pub timestamp: String,
    /// Whether the render is strict.
    pub strict: bool,
    /// Module labels.
    pub module_labels: BTreeMap<String, String>,
    /// The kinds whose content is secret, as the renderer's provider lists them
    /// (`renderer.secretKinds`): their checksums are stretched ([`super::checksum`]).
    #[serde(skip)]
    pub secret_kinds: Vec<String>,
    /// The platform the render is for (`kubernetes`, `compose`: the providers'
    /// `core.opm.dev/format`), whose rules every object's name is held to
    /// ([`super::platform_names`]); `None` for a format opm has no rules of.
    #[serde(skip)]
    pub platform: Option<String>,
    /// Each provider's version, by name: what a call's context says of its provider's.
    #[serde(skip)]
    pub provider_versions: BTreeMap<String, String>,
}

impl RenderContext {
    /// The tracking labels of a resource rendered from `component`; the instance among them
    /// only when it is not the module's own name, so that a render without `--instance` is
    /// labelled as it always was.
    pub fn tracking_labels(&self, component: &str) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::from([
            (LABEL_MANAGED_BY.to_owned(), MANAGED_BY.to_owned()),
            (LABEL_MODULE_NAME.to_owned(), self.name.clone()),
            (LABEL_MODULE_VERSION.to_owned(), self.version.clone()),
            (LABEL_COMPONENT_NAME.to_owned(), component.to_owned()),
        ]);
        if self.instance != self.name {
            labels.insert(LABEL_MODULE_INSTANCE.to_owned(), self.instance.clone());
        }
        labels
    }

    /// Module labels overlaid by the tracking labels of `component`. A module label that
    /// claims an instance is dropped: the instance label is the host's to set, and a provider
    /// prefixes every name when it sees one.
    pub fn labels_for(&self, component: &str) -> BTreeMap<String, String> {
        let mut labels = self.module_labels.clone();
        labels.remove(LABEL_MODULE_INSTANCE);
        labels.extend(self.tracking_labels(component));
        labels
    }

    /// The context passed to `call`: its component's labels, its transformer's provider.
    pub fn for_call(&self, call: &crate::matching::Call) -> Context {
        let version = self.provider_versions.get(&call.provider);
        let version = version.map_or("", String::as_str);
        self.context(&call.component, &call.provider, version, &call.transformer)
    }

    /// The context passed to the transforms of `component` when a test or a bench calls them
    /// without a plan: naming the render's providers, and no transformer (the sandbox names the
    /// one it calls).
    pub fn for_component(&self, component: &str) -> Context {
        self.context(component, &self.provider, "", "")
    }

    /// The context passed to the renderer, whose provider is at `provider_version`: the
    /// module's labels and the tracking labels but the component's, naming the render's
    /// providers.
    pub fn for_renderer(&self, provider_version: &str) -> Context {
        let mut context = self.context("", &self.provider, provider_version, "");
        context
            .labels
            .retain(|(key, _)| key != LABEL_COMPONENT_NAME);
        context
    }

    /// The context of a call for `component`, naming `provider`, of a component of a provider
    /// at `provider_version` serving as `transformer`.
    fn context(
        &self,
        component: &str,
        provider: &str,
        provider_version: &str,
        transformer: &str,
    ) -> Context {
        Context {
            name: self.instance.clone(),
            namespace: self.namespace.clone(),
            version: self.version.clone(),
            provider: provider.to_owned(),
            timestamp: self.timestamp.clone(),
            strict: self.strict,
            labels: self.labels_for(component).into_iter().collect(),
            module: self.name.clone(),
            platform: self.platform.clone().unwrap_or_default(),
            provider_version: provider_version.to_owned(),
            transformer: transformer.to_owned(),
        }
    }
}

/// The render timestamp: `SOURCE_DATE_EPOCH` (seconds since 1970) when `source_date_epoch` is
/// given, else [`DEFAULT_TIMESTAMP`]; RFC 3339 in UTC, to the second.
///
/// The default is fixed, not the current time: a render is a function of its inputs, so two
/// renders of the same inputs are byte-identical however far apart they run, and a provider
/// cannot behave differently after a date it chose. A pipeline that wants the time in its
/// output sets `SOURCE_DATE_EPOCH`, e.g. to its last commit's (`git log -1 --format=%ct`).
pub fn timestamp(source_date_epoch: Option<&str>) -> Result<String, String> {
    Ok(match epoch_seconds(source_date_epoch)? {
        Some(seconds) => rfc3339(seconds),
        None => DEFAULT_TIMESTAMP.to_owned(),
    })
}

/// The seconds `SOURCE_DATE_EPOCH` (`source_date_epoch`) names, if it is set.
pub fn epoch_seconds(source_date_epoch: Option<&str>) -> Result<Option<i64>, String> {
    source_date_epoch
        .map(|text| {
            text.trim().parse::<i64>().map_err(|_| {
                format!("SOURCE_DATE_EPOCH={text:?} is not a number of seconds since 1970-01-01")
            })
        })
        .transpose()
}

/// The render timestamp when `SOURCE_DATE_EPOCH` is not set: the Unix epoch.
pub const DEFAULT_TIMESTAMP: &str = "1970-01-01T00:00:00Z";

/// Formats seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn rfc3339(seconds: i64) -> String {
    let days = seconds.div_euclid(86_400);
    let in_day = seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        in_day / 3600,
        in_day % 3600 / 60,
        in_day % 60
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_host_says_which_instance_a_resource_belongs_to() {
        let mut context = RenderContext {
            name: "shop".into(),
            instance: "shop".into(),
            namespace: "default".into(),
            version: "1".into(),
            provider: "kubernetes".into(),
            timestamp: DEFAULT_TIMESTAMP.into(),
            strict: false,
            module_labels: BTreeMap::from([(LABEL_MODULE_INSTANCE.into(), "forged".into())]),
            secret_kinds: Vec::new(),
            platform: None,
            provider_versions: BTreeMap::new(),
        };
        assert!(
            !context
                .labels_for("api")
                .contains_key(LABEL_MODULE_INSTANCE)
        );
        context.instance = "shop-eu".into();
        assert_eq!(context.labels_for("api")[LABEL_MODULE_INSTANCE], "shop-eu");
        assert_eq!(context.labels_for("api")[LABEL_MODULE_NAME], "shop");
    }

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_764_107_999), "2025-11-25T21:59:59Z");
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59Z");
    }

    #[test]
    fn source_date_epoch_sets_the_timestamp_which_is_fixed_without_it() {
        assert_eq!(timestamp(None).unwrap(), rfc3339(0));
        assert_eq!(timestamp(Some("86400")).unwrap(), "1970-01-02T00:00:00Z");
        assert!(
            timestamp(Some("yesterday"))
                .unwrap_err()
                .contains("SOURCE_DATE_EPOCH")
        );
    }
}
