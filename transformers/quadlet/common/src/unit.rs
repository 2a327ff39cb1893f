//! A unit's sections, as a quadlet resource's `spec` holds them, and the unit's text.
//!
//! A spec is a map of section (`Unit`, `Container`, `Service`, `Install`, …) to a map of key to
//! value; a value is a string (a number or a boolean is written as it reads), or a list of them
//! for a key given once per item (`Environment=`, `Volume=`, `PublishPort=`). [`Unit`] builds
//! one; [`text`] writes it: `[Unit]` first, then the kind's own section, `[Service]`,
//! `[Install]`, then any other section in name order, each key in the order it was set.
//!
//! ```
//! use opm_quadlet_common::unit::{Unit, text};
//! let mut unit = Unit::default();
//! unit.set("Container", "Image", "nginx:1.27");
//! unit.add("Container", "PublishPort", "8080:80");
//! unit.add("Container", "PublishPort", "8443:443");
//! unit.set("Unit", "Description", "web");
//! let written = text(&["# web"], "Container", &unit.into_value()).unwrap();
//! assert_eq!(written, "# web\n[Unit]\nDescription=web\n\n[Container]\nImage=nginx:1.27\n\
//!                      PublishPort=8080:80\nPublishPort=8443:443\n");
//! ```

use opm_guest::{Map, Value};

/// The field of a spec that is not a section: what a unit asks the renderer to write for it
/// (the variables of its `EnvironmentFile=`), removed before the unit is written.
pub const EXTENSION: &str = "x-opm";

/// The sections of a unit, being built.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Unit {
    sections: Map<String, Value>,
}

impl Unit {
    /// Sets `key` of `section` to `value`, replacing what it held.
    pub fn set(&mut self, section: &str, key: &str, value: impl Into<String>) {
        self.section(section)
            .insert(key.to_owned(), Value::String(value.into()));
    }

    /// Adds one line `key=value` to `section`, after those the key has.
    pub fn add(&mut self, section: &str, key: &str, value: impl Into<String>) {
        let section = self.section(section);
        let value = Value::String(value.into());
        match section.get_mut(key) {
            Some(Value::Array(items)) => items.push(value),
            Some(one) => {
                let first = one.take();
                *one = Value::Array(vec![first, value]);
            }
            None => {
                section.insert(key.to_owned(), Value::Array(vec![value]));
            }
        }
    }

    /// The value of `key` in `section`, if set.
    pub fn get(&self, section: &str, key: &str) -> Option<&Value> {
        self.sections.get(section)?.get(key)
    }

    /// Whether `section` has `key`.
    pub fn has(&self, section: &str, key: &str) -> bool {
        self.get(section, key).is_some()
    }

    /// Sets the spec's [`EXTENSION`]: what the unit asks the renderer to write for it.
    pub fn set_extension(&mut self, value: Value) {
        self.sections.insert(EXTENSION.to_owned(), value);
    }

    /// The unit as a resource's `spec`.
    pub fn into_value(self) -> Value {
        Value::Object(self.sections)
    }

    fn section(&mut self, name: &str) -> &mut Map<String, Value> {
        self.sections
            .entry(name.to_owned())
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
            .expect("a section is a map")
    }
}

/// The text of the unit `spec`, after the comment lines `header`: `own` is the kind's own
/// section (`Container`), written after `[Unit]`. A section that is not a map, a value that is
/// a map, or one that holds a line break is an error naming the section and key.
pub fn text(header: &[&str], own: &str, spec: &Value) -> Result<String, String> {
    let sections = spec
        .as_object()
        .ok_or_else(|| "spec must be a map of section to keys".to_owned())?;
    let mut order: Vec<&String> = Vec::new();
    for first in ["Unit", own, "Service", "Install"] {
        if let Some((name, _)) = sections.get_key_value(first) {
            order.push(name);
        }
    }
    let mut rest: Vec<&String> = sections.keys().filter(|k| !order.contains(k)).collect();
    rest.sort();
    order.extend(rest);

    let mut out = String::new();
    for line in header {
        out.push_str(line);
        out.push('\n');
    }
    let mut first = true;
    for name in order {
        let keys = sections[name]
            .as_object()
            .ok_or_else(|| format!("spec.{name} must be a map of key to value"))?;
        if keys.values().all(|value| matches!(value, Value::Null)) && name != own {
            continue;
        }
        if !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(format!(
                "spec.{name}: a section's name is letters, digits, - and _"
            ));
        }
        if !first {
            out.push('\n');
        }
        first = false;
        out.push_str(&format!("[{name}]\n"));
        for (key, value) in keys {
            if key.is_empty()
                || !key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                return Err(format!(
                    "spec.{name}: {key:?} is not a unit key (letters, digits, - and _)"
                ));
            }
            for line in lines(value).map_err(|e| format!("spec.{name}.{key} {e}"))? {
                out.push_str(key);
                out.push('=');
                out.push_str(&line);
                out.push('\n');
            }
        }
    }
    Ok(out)
}

/// The lines of one key's value.
fn lines(value: &Value) -> Result<Vec<String>, String> {
    let one = |value: &Value| -> Result<Option<String>, String> {
        let text = match value {
            Value::Null => return Ok(None),
            Value::String(text) => text.clone(),
            Value::Bool(flag) => flag.to_string(),
            Value::Number(number) => number.to_string(),
            Value::Array(_) | Value::Object(_) => {
                return Err("must be a string, or a list of strings".to_owned());
            }
        };
        if text.contains(['\n', '\r']) {
            return Err("holds a line break, which ends a unit's line".to_owned());
        }
        Ok(Some(text))
    };
    match value {
        Value::Array(items) => items
            .iter()
            .filter_map(|item| one(item).transpose())
            .collect(),
        other => Ok(one(other)?.into_iter().collect()),
    }
}

#[cfg(test)]
mod tests {
    use opm_guest::json;

    use super::*;

    #[test]
    fn sections_are_written_unit_first_then_own_service_install_then_by_name() {
        let spec = json!({"Install": {"WantedBy": "default.target"}, "X-Opm": {"A": 1},
                          "Service": {"Restart": "always"}, "Container": {"Image": "x"},
                          "Unit": {"Description": "d"}, "Empty": {}});
        let written = text(&[], "Container", &spec).unwrap();
        assert_eq!(
            written,
            "[Unit]\nDescription=d\n\n[Container]\nImage=x\n\n[Service]\nRestart=always\n\n\
             [Install]\nWantedBy=default.target\n\n[X-Opm]\nA=1\n"
        );
    }

    #[test]
    fn a_repeated_key_is_one_line_per_item_and_a_line_break_is_refused() {
        let mut unit = Unit::default();
        unit.set("Container", "Image", "x");
        unit.add("Container", "Volume", "a:/a");
        unit.add("Container", "Volume", "b:/b");
        unit.set("Container", "Exec", "x");
        unit.add("Container", "Exec", "y");
        assert_eq!(unit.get("Container", "Exec"), Some(&json!(["x", "y"])));
        let written = text(&[], "Container", &unit.into_value()).unwrap();
        assert!(written.contains("Volume=a:/a\nVolume=b:/b\n"), "{written}");
        let error = text(&[], "Container", &json!({"Container": {"Exec": "a\nb"}})).unwrap_err();
        assert_eq!(
            error,
            "spec.Container.Exec holds a line break, which ends a unit's line"
        );
        let error = text(&[], "Container", &json!({"Container": {"A=B": "x"}})).unwrap_err();
        assert!(error.contains("is not a unit key"), "{error}");
        let error = text(&[], "Container", &json!({"Container": {"A": {"b": 1}}})).unwrap_err();
        assert!(
            error.contains("spec.Container.A must be a string"),
            "{error}"
        );
    }
}
