//! Upstream's Host Configuration samples, vendored verbatim in
//! `host/tests/fixtures/upstream-samples/` (and our fixtures of them in
//! `host/tests/fixtures/host-config/`), rewritten for a test VM by
//! exact-line edits: each edit names the line it replaces, which must be in
//! the sample exactly once (or once in the named partition's block), so a
//! sample that changes upstream fails the rewrite loudly instead of
//! installing something nobody checked.

use std::path::PathBuf;

use crate::test_os::repo_root;

/// The vendored sample `name` (`basic`, `base`...), as upstream wrote it.
pub fn upstream_sample(name: &str) -> String {
    let path = upstream_sample_path(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("upstream sample {}: {e}", path.display()))
}

/// Where the vendored sample `name` is.
pub fn upstream_sample_path(name: &str) -> PathBuf {
    repo_root()
        .join("host/tests/fixtures/upstream-samples")
        .join(format!("{name}.yaml"))
}

/// Our fixture `name` (`basic`, `raid-mirrored`...) of upstream's sample,
/// in `host/tests/fixtures/host-config/`.
pub fn host_config_fixture(name: &str) -> String {
    let path = repo_root()
        .join("host/tests/fixtures/host-config")
        .join(format!("{name}.yaml"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("host configuration fixture {}: {e}", path.display()))
}

/// `text` with each `(old, new)` line replaced; each old line must be there
/// exactly once. `new` may span several lines.
pub fn replace_lines(text: &str, changes: &[(&str, &str)]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    for (old, new) in changes {
        let at: Vec<usize> = (0..lines.len()).filter(|&i| lines[i] == *old).collect();
        assert_eq!(at.len(), 1, "exactly one line '{old}' in the sample");
        lines[at[0]] = (*new).to_owned();
    }
    lines.join("\n") + "\n"
}

/// `text` with the `size:` of partition `id` (a `- id: ID` block list
/// item, upstream's block style) changed from `old` to `new`.
pub fn resize_partition(text: &str, id: &str, old: &str, new: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let items: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].trim_start() == format!("- id: {id}"))
        .collect();
    assert_eq!(
        items.len(),
        1,
        "exactly one item '- id: {id}' in the sample"
    );
    let item = items[0];
    let indent = lines[item].len() - lines[item].trim_start().len() + 2;
    let size = lines[item + 1..]
        .iter()
        .take_while(|l| l.len() - l.trim_start().len() >= indent && !l.trim().is_empty())
        .position(|l| l.trim_start().starts_with("size: "))
        .map(|at| item + 1 + at)
        .unwrap_or_else(|| panic!("no size: in partition {id}'s item"));
    let wanted = format!("{}size: {old}", " ".repeat(indent));
    assert_eq!(lines[size], wanted, "partition {id}'s size");
    lines[size] = format!("{}size: {new}", " ".repeat(indent));
    lines.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "partitions:\n- id: a\n  type: root\n  size: 8G\n- id: b\n  size: 8G\n";

    #[test]
    fn resizing_changes_only_the_named_partitions_size() {
        assert_eq!(
            resize_partition(TEXT, "b", "8G", "1G"),
            "partitions:\n- id: a\n  type: root\n  size: 8G\n- id: b\n  size: 1G\n"
        );
    }

    #[test]
    #[should_panic(expected = "partition a's size")]
    fn resizing_from_a_size_the_sample_does_not_have_fails() {
        resize_partition(TEXT, "a", "4G", "1G");
    }

    #[test]
    #[should_panic(expected = "exactly one line")]
    fn replacing_a_line_the_sample_has_twice_fails() {
        replace_lines(TEXT, &[("  size: 8G", "  size: 1G")]);
    }
}
