//! Kubernetes quantities (`250m`, `1.5Gi`, `128M`, `2`) as compose writes CPUs and sizes.
//!
//! Compose reads CPUs as a decimal number of cores, and byte sizes with Docker's binary units
//! (`k`, `m`, `g` are 1024, 1024², 1024³): `Mi` becomes `m`, and a size in decimal units
//! (`M` is 10⁶ bytes) becomes its exact number of bytes.
//!
//! ```
//! use opm_compose_common::quantity::{bytes, cpus, parse};
//! assert_eq!(cpus(&"250m".into()).as_deref(), Some("0.25"));
//! assert_eq!(bytes(&"512Mi".into()).as_deref(), Some("512m"));
//! assert_eq!(bytes(&"128M".into()).as_deref(), Some("128000000"));
//! assert_eq!(parse(&"1Ki".into()), Some(1024.0));
//! ```

use opm_guest::Value;

const SUFFIXES: &[(&str, f64)] = &[
    ("Ki", 1024.0),
    ("Mi", 1_048_576.0),
    ("Gi", 1_073_741_824.0),
    ("Ti", 1_099_511_627_776.0),
    ("Pi", 1_125_899_906_842_624.0),
    ("Ei", 1_152_921_504_606_846_976.0),
    ("n", 1e-9),
    ("u", 1e-6),
    ("m", 1e-3),
    ("k", 1e3),
    ("M", 1e6),
    ("G", 1e9),
    ("T", 1e12),
    ("P", 1e15),
    ("E", 1e18),
];

/// The value of a quantity (a string, or a JSON number) in base units: cores, bytes.
pub fn parse(quantity: &Value) -> Option<f64> {
    let text = match quantity {
        Value::Number(number) => return number.as_f64(),
        Value::String(text) => text.trim(),
        _ => return None,
    };
    let (number, factor) = SUFFIXES
        .iter()
        .find_map(|(suffix, factor)| text.strip_suffix(suffix).map(|n| (n, *factor)))
        .unwrap_or((text, 1.0));
    let (mantissa, exponent) = match number.split_once(['e', 'E']) {
        Some((mantissa, exponent)) => (mantissa, exponent.parse::<i32>().ok()?),
        None => (number, 0),
    };
    if mantissa.is_empty()
        || !mantissa
            .trim_start_matches(['+', '-'])
            .chars()
            .all(|c| c.is_ascii_digit() || c == '.')
    {
        return None;
    }
    let value: f64 = mantissa.parse().ok()?;
    (value >= 0.0).then(|| value * factor * 10f64.powi(exponent))
}

/// A CPU quantity as compose's `cpus`: a decimal number of cores, to the millicore.
pub fn cpus(quantity: &Value) -> Option<String> {
    let cores = parse(quantity)?;
    let text = format!("{:.3}", (cores * 1000.0).ceil() / 1000.0);
    Some(text.trim_end_matches('0').trim_end_matches('.').to_owned())
}

/// A size as compose writes memory: binary units as Docker's `k`, `m`, `g`, `t`, `p`, anything
/// else as its number of bytes (rounded up).
pub fn bytes(quantity: &Value) -> Option<String> {
    if let Value::String(text) = quantity {
        let text = text.trim();
        for (suffix, unit) in [
            ("Ki", "k"),
            ("Mi", "m"),
            ("Gi", "g"),
            ("Ti", "t"),
            ("Pi", "p"),
        ] {
            if let Some(number) = text.strip_suffix(suffix)
                && !number.is_empty()
                && number.chars().all(|c| c.is_ascii_digit() || c == '.')
                && number.parse::<f64>().is_ok()
            {
                return Some(format!("{number}{unit}"));
            }
        }
    }
    parse(quantity).map(|value| format!("{}", value.ceil() as u64))
}

/// `value` divided by `divisor`, rounded up, as Kubernetes gives a `resourceFieldRef`.
pub fn divide(value: f64, divisor: f64) -> String {
    format!("{}", (value / divisor - 1e-9).ceil().max(0.0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use opm_guest::json;

    #[test]
    fn quantities_in_base_units() {
        assert_eq!(parse(&json!("250m")), Some(0.25));
        assert_eq!(parse(&json!("1.5Gi")), Some(1_610_612_736.0));
        assert_eq!(parse(&json!("2")), Some(2.0));
        assert_eq!(parse(&json!(3)), Some(3.0));
        assert_eq!(parse(&json!("1e3")), Some(1000.0));
        assert_eq!(parse(&json!("5k")), Some(5000.0));
        assert_eq!(parse(&json!("x")), None);
        assert_eq!(parse(&json!("Mi")), None);
        assert_eq!(parse(&json!(true)), None);
    }

    #[test]
    fn cpus_are_decimal_cores() {
        assert_eq!(cpus(&json!("250m")).unwrap(), "0.25");
        assert_eq!(cpus(&json!("1")).unwrap(), "1");
        assert_eq!(cpus(&json!(2)).unwrap(), "2");
        assert_eq!(cpus(&json!("1500m")).unwrap(), "1.5");
        assert_eq!(cpus(&json!("100m")).unwrap(), "0.1");
    }

    #[test]
    fn sizes_keep_binary_units_and_count_decimal_ones() {
        assert_eq!(bytes(&json!("256Mi")).unwrap(), "256m");
        assert_eq!(bytes(&json!("1Gi")).unwrap(), "1g");
        assert_eq!(bytes(&json!("1.5Gi")).unwrap(), "1.5g");
        assert_eq!(bytes(&json!("128M")).unwrap(), "128000000");
        assert_eq!(bytes(&json!("1000")).unwrap(), "1000");
        assert_eq!(bytes(&json!(64)).unwrap(), "64");
    }

    #[test]
    fn divisions_round_up() {
        assert_eq!(divide(268_435_456.0, 1_048_576.0), "256");
        assert_eq!(divide(0.25, 1.0), "1");
        assert_eq!(divide(0.25, 0.001), "250");
    }
}
