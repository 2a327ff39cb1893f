//! [`Limits`]: what one transform call may consume, and the parsing of sizes and durations
//! (`64Mi`, `2s`) as they are written in manifests and on the command line.

use std::fmt;
use std::time::Duration;

/// What one transform call may consume. Hitting any of them fails that call alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Fuel units: WebAssembly's deterministic instruction budget.
    pub fuel: u64,
    /// Bytes of linear memory, across all memories of the instance.
    pub memory: u64,
    /// Wall-clock time of the call, enforced with epoch interruption.
    pub timeout: Duration,
    /// Elements of all tables of the instance.
    pub table_elements: u64,
    /// Core instances a component may create.
    pub instances: usize,
    /// Bytes of WebAssembly stack (fixed per engine: `opm_sandbox::Sandbox::new` sets it).
    pub wasm_stack: usize,
    /// Bytes of JSON a call may return, all resources together; also the most one copy from
    /// guest to host may take (with a little room for bookkeeping), and the most error text.
    pub output: usize,
    /// Resources a call may return.
    pub resources: usize,
    /// Bytes a call may log, each line charged its text plus a fixed cost
    /// ([`LOG_LINE_COST`](super::outcome::LOG_LINE_COST)); further lines are dropped and counted.
    pub log: usize,
    /// Bytes of log kept for a whole render: each of N calls may log at most this / N (and
    /// at most `log`), so the logs of a render stay bounded whatever its size.
    pub render_log: usize,
}

impl Default for Limits {
    /// The host's defaults: generous for real transformers, small enough that a hostile guest
    /// cannot hurt the render.
    fn default() -> Self {
        Self {
            fuel: 1_000_000_000,
            memory: 64 * MIB,
            timeout: Duration::from_secs(2),
            table_elements: 100_000,
            instances: 50,
            wasm_stack: 512 * KIB as usize,
            output: 16 * MIB as usize,
            resources: 10_000,
            log: 64 * KIB as usize,
            render_log: 16 * MIB as usize,
        }
    }
}

/// The most a provider may ask for, unless the command line sets other caps
/// (`--fuel`, `--memory`, `--timeout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Most fuel per call.
    pub fuel: u64,
    /// Most linear memory per call, in bytes.
    pub memory: u64,
    /// Longest wall-clock time per call.
    pub timeout: Duration,
}

impl Default for Caps {
    fn default() -> Self {
        Self {
            fuel: 10_000_000_000,
            memory: 512 * MIB,
            timeout: Duration::from_secs(30),
        }
    }
}

/// A kibibyte.
pub const KIB: u64 = 1 << 10;
/// A mebibyte.
pub const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// Bytes shown the way a person writes them: `64 MiB`, `512 KiB`, `100 B`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        let Some((unit, size)) = [("GiB", GIB), ("MiB", MIB), ("KiB", KIB)]
            .into_iter()
            .find(|(_, size)| n >= *size)
        else {
            return write!(f, "{n} B");
        };
        if n.is_multiple_of(size) {
            write!(f, "{} {unit}", n / size)
        } else {
            write!(f, "{:.1} {unit}", n as f64 / size as f64)
        }
    }
}

/// Parses a size: a number of bytes, optionally with `Ki`, `Mi`, `Gi` (powers of 1024) or
/// `K`, `M`, `G` (powers of 1000), and an optional trailing `B`.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let without_b = trimmed.strip_suffix('B').unwrap_or(trimmed);
    let split = without_b
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(without_b.len());
    let (digits, unit) = without_b.split_at(split);
    let number: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a size (examples: 64Mi, 512Ki, 1Gi, 1000000)"))?;
    let scale = match unit.trim() {
        "" => 1,
        "Ki" => KIB,
        "Mi" => MIB,
        "Gi" => GIB,
        "K" | "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        other => {
            return Err(format!(
                "{text:?}: unknown size unit {other:?} (use Ki, Mi, Gi, K, M or G)"
            ));
        }
    };
    number
        .checked_mul(scale)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// Parses a duration: a number with `ms`, `s` or `m` (`500ms`, `2s`, `1m`). A duration of more
/// than `u64::MAX` seconds is an error saying it is too large.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (digits, unit) = trimmed.split_at(split);
    let too_large = || format!("{text:?} is too large");
    let number: u64 = digits.parse().map_err(|e: std::num::ParseIntError| {
        if *e.kind() == std::num::IntErrorKind::PosOverflow {
            too_large()
        } else {
            format!("{text:?} is not a duration (examples: 500ms, 2s, 1m)")
        }
    })?;
    match unit {
        "ms" => Ok(Duration::from_millis(number)),
        "s" => Ok(Duration::from_secs(number)),
        "m" => number
            .checked_mul(60)
            .map(Duration::from_secs)
            .ok_or_else(too_large),
        "" => Err(format!("{text:?} has no unit: write 500ms, 2s or 1m")),
        other => Err(format!(
            "{text:?}: unknown duration unit {other:?} (use ms, s or m)"
        )),
    }
}

/// Formats a duration the way [`parse_duration`] reads it.
pub fn format_duration(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis.is_multiple_of(1000) {
        format!("{}s", millis / 1000)
    } else {
        format!("{millis}ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64Mi"), Ok(64 << 20));
        assert_eq!(parse_size("512KiB"), Ok(512 << 10));
        assert_eq!(parse_size("1G"), Ok(1_000_000_000));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(
            parse_size("64Mb")
                .unwrap_err()
                .contains("unknown size unit")
        );
        assert!(parse_size("lots").is_err());
        assert_eq!(Bytes(64 << 20).to_string(), "64 MiB");
        assert_eq!(Bytes(100).to_string(), "100 B");
        assert_eq!(Bytes(17472 << 10).to_string(), "17.1 MiB");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_duration("2").unwrap_err().contains("no unit"));
        assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
        assert_eq!(format_duration(Duration::from_secs(2)), "2s");
    }

    /// The audit's finding: `400000000000000000m` overflowed the multiplication to seconds.
    #[test]
    fn a_duration_too_large_to_represent_is_an_error_not_a_wrap() {
        for text in [
            "400000000000000000m",
            "18446744073709551615m",
            "99999999999999999999999s",
            "99999999999999999999999ms",
        ] {
            let error = parse_duration(text).expect_err(text);
            assert!(error.contains("is too large"), "{text}: {error}");
        }
        assert_eq!(
            parse_duration("18446744073709551615s"),
            Ok(Duration::from_secs(u64::MAX))
        );
        assert_eq!(
            parse_duration("307445734561825860m"),
            Ok(Duration::from_secs(307_445_734_561_825_860 * 60))
        );
    }
}
