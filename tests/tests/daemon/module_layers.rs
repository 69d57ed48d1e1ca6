//! One-way layers: no part of the daemon's servicing tree, and no part of
//! the CLI, names a part that names it back (read from the sources, level
//! by level; see `trident_e2e::module_graph`). A cycle fails the test with
//! the modules and the paths that make it.

use std::path::{Path, PathBuf};

use trident_e2e::module_graph::{ModuleGraph, display, layer_cycles};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate sits in the workspace")
        .to_path_buf()
}

/// Fails naming every layering cycle of the tree rooted at `root_file`.
fn assert_no_layer_cycles(root_file: &Path, crate_prefix: &[&str], min_modules: usize) {
    let graph = ModuleGraph::read(root_file, crate_prefix).expect("read the sources");
    // The reader found the tree (a reader that finds nothing passes anything).
    assert!(
        graph.files.len() >= min_modules && !graph.edges.is_empty(),
        "{}: only {} modules and {} dependencies read",
        root_file.display(),
        graph.files.len(),
        graph.edges.len()
    );
    let cycles = layer_cycles(&graph);
    let report: Vec<String> = cycles
        .iter()
        .map(|c| {
            format!(
                "in {}: {} name each other:\n    {}",
                display(&c.level),
                c.nodes.join(", "),
                c.evidence.join("\n    ")
            )
        })
        .collect();
    assert!(
        cycles.is_empty(),
        "{} layering cycle(s) under {}:\n{}",
        cycles.len(),
        root_file.display(),
        report.join("\n")
    );
}

#[test]
fn servicing_modules_import_one_way() {
    let root = workspace().join("engine/src/lib.rs");
    assert_no_layer_cycles(&root, &["crate"], 40);
}

/// The CLI's commands are its top layer: what they share (the daemon
/// context, output helpers, argument types) lives beside them, so the
/// servicing and live views and the arguments never name a command module.
#[test]
fn cli_commands_are_named_only_by_the_crate_root() {
    let root = workspace().join("cli/src/lib.rs");
    let graph = ModuleGraph::read(&root, &["crate"]).expect("read the sources");
    assert!(
        graph.files.len() >= 30,
        "only {} modules read",
        graph.files.len()
    );
    let under = |m: &Vec<String>, top: &str| m.first().is_some_and(|f| f == top);
    // The reader sees the commands' own dependencies (else this passes on nothing).
    assert!(
        graph
            .edges
            .iter()
            .any(|e| under(&e.from, "commands") && under(&e.to, "servicing"))
    );
    let upward: Vec<String> = graph
        .edges
        .iter()
        .filter(|e| !e.from.is_empty() && !under(&e.from, "commands") && under(&e.to, "commands"))
        .map(|e| {
            format!(
                "{} -> {} ({})",
                display(&e.from),
                display(&e.to),
                e.evidence
            )
        })
        .collect();
    assert!(
        upward.is_empty(),
        "modules importing a command module:\n    {}",
        upward.join("\n    ")
    );
    let through_commands: Vec<String> = layer_cycles(&graph)
        .into_iter()
        .filter(|c| match c.level.as_slice() {
            [] => c.nodes.iter().any(|n| n == "commands"),
            [top] => top == "commands",
            _ => false,
        })
        .map(|c| format!("in {}: {}", display(&c.level), c.evidence.join("; ")))
        .collect();
    assert!(
        through_commands.is_empty(),
        "cycles through commands:\n{}",
        through_commands.join("\n")
    );
}

/// The checker itself: a two-module cycle in a scratch tree is found and
/// named; the same tree made one-way passes.
#[test]
fn layer_check_finds_a_cycle_and_names_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let write =
        |name: &str, text: &str| std::fs::write(dir.path().join(name), text).expect("write");
    write("mod.rs", "pub mod a;\npub mod b;\npub mod leaf;\n");
    write(
        "a.rs",
        "use super::b::Thing;\n// crate::servicing::leaf in prose\n",
    );
    write(
        "b.rs",
        "pub struct Thing;\nfn f() { crate::servicing::a::g(); }\n",
    );
    write("leaf.rs", "pub const X: u8 = 1;\n");
    let graph =
        ModuleGraph::read(&dir.path().join("mod.rs"), &["crate", "servicing"]).expect("read");
    let cycles = layer_cycles(&graph);
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert_eq!(cycles[0].nodes, ["a", "b"]);
    assert!(
        cycles[0]
            .evidence
            .iter()
            .any(|e| e == "a -> b (super::b::Thing)")
    );
    assert!(
        cycles[0]
            .evidence
            .iter()
            .any(|e| e == "b -> a (crate::servicing::a::g)")
    );

    write("b.rs", "pub struct Thing;\nuse super::leaf::X;\n");
    let graph =
        ModuleGraph::read(&dir.path().join("mod.rs"), &["crate", "servicing"]).expect("read");
    assert!(layer_cycles(&graph).is_empty());
    assert_eq!(graph.edges.len(), 2, "{:?}", graph.edges);
}
