//! One-way layers: no part of the servicing engine, and no part of the
//! CLI, names a part that names it back (read from the sources, level by
//! level; see `trident_e2e::module_graph`), and no crate of the workspace
//! has a circle of files (files in different folders, or siblings, that
//! name each other). A cycle fails the test with the modules and the paths
//! that make it. Between crates the compiler keeps the layers one way
//! (`engine/tests/dependencies.rs` checks what the engine may link).

use std::path::{Path, PathBuf};

use trident_e2e::module_graph::{ModuleGraph, display, file_cycles, layer_cycles};

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

/// Every crate root of the workspace (libraries and the binaries whose
/// modules are not a library's), with the least number of file modules
/// its reader must find.
const CRATE_ROOTS: [(&str, usize); 11] = [
    ("proto/src/lib.rs", 1),
    ("telemetry/src/lib.rs", 30),
    ("telemetry/otlp/src/lib.rs", 10),
    ("cosi/src/lib.rs", 20),
    ("host/src/lib.rs", 40),
    ("engine/src/lib.rs", 80),
    ("daemon/src/lib.rs", 20),
    ("cli/src/lib.rs", 40),
    ("rcp/src/lib.rs", 10),
    ("bench/src/main.rs", 10),
    ("tests/src/lib.rs", 10),
];

#[test]
fn no_crate_has_a_circle_of_files() {
    let mut report = Vec::new();
    for (root, min_files) in CRATE_ROOTS {
        let path = workspace().join(root);
        let graph = ModuleGraph::read(&path, &["crate"]).expect("read the sources");
        assert!(
            graph.files.len() >= min_files,
            "{root}: only {} modules read",
            graph.files.len()
        );
        for circle in file_cycles(&graph) {
            report.push(format!(
                "{root}: {} name each other:\n    {}",
                circle.files.join(", "),
                circle.evidence.join("\n    ")
            ));
        }
    }
    assert!(
        report.is_empty(),
        "circles of files:\n{}",
        report.join("\n")
    );
}

#[test]
fn the_file_check_finds_cousins_that_name_each_other_but_not_a_parent_and_its_child() {
    let dir = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write("lib.rs", "pub mod bus;\npub mod marks;\n");
    // bus/mod.rs and its child name each other: one unit, not a circle.
    write(
        "bus/mod.rs",
        "pub mod ring;\nuse ring::Entry;\npub struct Bus;\n",
    );
    write("bus/ring.rs", "use super::Bus;\npub struct Entry;\n");
    write("marks.rs", "use crate::bus::Bus;\n");
    let graph = ModuleGraph::read(&dir.path().join("lib.rs"), &["crate"]).expect("read");
    assert!(file_cycles(&graph).is_empty(), "{:?}", file_cycles(&graph));
    // bus/mod.rs now names marks, which names bus: a circle.
    write(
        "bus/mod.rs",
        "pub mod ring;\nuse ring::Entry;\npub struct Bus;\nfn f() { crate::marks::g(); }\n",
    );
    let graph = ModuleGraph::read(&dir.path().join("lib.rs"), &["crate"]).expect("read");
    let circles = file_cycles(&graph);
    assert_eq!(circles.len(), 1, "{circles:?}");
    assert_eq!(circles[0].files, ["bus", "marks"]);
    assert!(
        circles[0]
            .evidence
            .iter()
            .any(|e| e == "bus -> marks (crate::marks::g)"),
        "{circles:?}"
    );
}
