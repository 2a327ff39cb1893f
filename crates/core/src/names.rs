//! The names the platform accepts.

/// Whether `name` is a DNS-1123 label: what Kubernetes accepts as a name.
pub fn is_dns_label(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

/// Whether `name` may name an instance (`--instance`), or why not: it must be a DNS label that
/// starts with a letter, since it starts the name of every object rendered for it, Services'
/// included (which must).
pub fn check_instance_name(name: &str) -> Result<(), String> {
    if is_dns_label(name) && name.starts_with(|c: char| c.is_ascii_lowercase()) {
        Ok(())
    } else {
        Err(format!(
            "instance name {name:?} must be a DNS label that starts with a letter: lowercase \
             letters, digits and '-', at most 63"
        ))
    }
}

/// The names among `known` that `name` is most likely a typo of, best first: those that differ
/// only in case, else those within a small edit distance (one edit for short names, two from
/// six characters, three from twelve), at most three. What a "did you mean …?" offers.
///
/// ```
/// use opm_core::names::suggest;
/// let known = ["Replicas", "Ingress", "Expose"];
/// assert_eq!(suggest("Replicaz", known), ["Replicas"]);
/// assert_eq!(suggest("ingress", known), ["Ingress"]);
/// assert!(suggest("Volumes", known).is_empty());
/// ```
pub fn suggest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let wanted = name.to_lowercase();
    let budget = match name.chars().count() {
        0..=5 => 1,
        6..=11 => 2,
        _ => 3,
    };
    let mut close: Vec<(usize, &str)> = known
        .into_iter()
        .filter(|candidate| *candidate != name)
        .filter_map(|candidate| {
            let distance = if candidate.to_lowercase() == wanted {
                0
            } else {
                edit_distance(&wanted, &candidate.to_lowercase(), budget)?
            };
            Some((distance, candidate))
        })
        .collect();
    close.sort();
    close.dedup();
    close.truncate(3);
    close.into_iter().map(|(_, c)| c.to_owned()).collect()
}

/// `; did you mean "web"?` (or `"a" or "b"`) for the names [`suggest`] found, quoted as the
/// name they stand in for is; empty when there are none. Every "did you mean" of opm reads so.
pub fn did_you_mean(close: &[String]) -> String {
    match close {
        [] => String::new(),
        names => format!(
            "; did you mean {}?",
            names
                .iter()
                .map(|n| format!("{n:?}"))
                .collect::<Vec<_>>()
                .join(" or ")
        ),
    }
}

/// The optimal-string-alignment distance of `a` and `b` (insertions, deletions, substitutions
/// and swaps of neighbours), or `None` when it is over `limit`.
fn edit_distance(a: &str, b: &str, limit: usize) -> Option<usize> {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > limit {
        return None;
    }
    // Three rows of the distance table: two back (for swaps), one back, and this one.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        current[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (previous[j] + 1)
                .min(current[j - 1] + 1)
                .min(previous[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(before[j - 2] + 1);
            }
            current[j] = best;
        }
        std::mem::swap(&mut before, &mut previous);
        std::mem::swap(&mut previous, &mut current);
    }
    let distance = previous[b.len()];
    (distance <= limit).then_some(distance)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_of_one_or_two_edits_are_suggested_best_first() {
        let known = ["web", "worker", "db", "Replicas", "Ingress"];
        assert_eq!(suggest("wbe", known), ["web"]);
        assert_eq!(suggest("wrker", known), ["worker"]);
        assert_eq!(suggest("Replcias", known), ["Replicas"]);
        assert_eq!(suggest("INGRESS", known), ["Ingress"]);
        assert!(suggest("api", known).is_empty());
        assert!(
            suggest("web", known).is_empty(),
            "a name is no typo of itself"
        );
    }

    #[test]
    fn distance_counts_a_swap_as_one_edit() {
        assert_eq!(edit_distance("ab", "ba", 2), Some(1));
        assert_eq!(edit_distance("kitten", "sitting", 3), Some(3));
        assert_eq!(edit_distance("kitten", "sitting", 2), None);
        assert_eq!(edit_distance("", "abc", 3), Some(3));
    }
}
