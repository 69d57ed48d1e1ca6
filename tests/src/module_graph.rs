//! The module dependency graph of a tree of Rust source files, read from
//! the text (no compiler): which file module names which other one through
//! `use` trees and inline paths (`crate::…`, `super::…`, `self::…`, a child
//! module, or a name a `use` bound to a module). `mod x;` declarations are
//! not dependencies; inline `#[cfg(test)] mod … { … }` blocks are left out.
//!
//! [`layer_cycles`] checks the tree level by level: at each directory
//! module, its own file and each child subtree are one node, and a cycle
//! among those nodes is a layering cycle (two parts of the tree that name
//! each other). A cycle between files is always one at some level.
//! [`file_cycles`] finds circles of files across folders, leaving out a
//! module and its own descendants.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path below the root (empty: the root itself).
pub type ModPath = Vec<String>;

/// One dependency: `from` names `to`, as `evidence` (the path written).
#[derive(Debug, Clone)]
pub struct Edge {
    pub from: ModPath,
    pub to: ModPath,
    pub evidence: String,
}

/// The file modules under a root and their dependencies.
#[derive(Debug)]
pub struct ModuleGraph {
    /// Module → its file.
    pub files: BTreeMap<ModPath, PathBuf>,
    pub edges: Vec<Edge>,
}

impl ModuleGraph {
    /// Reads the module tree whose root file is `root_file` (a `mod.rs` or
    /// `lib.rs`). `crate_prefix` is how the tree's root is named from
    /// inside: `["crate", "servicing"]`, or `["crate"]` for a crate root.
    pub fn read(root_file: &Path, crate_prefix: &[&str]) -> std::io::Result<ModuleGraph> {
        let mut files = BTreeMap::new();
        collect(root_file, Vec::new(), &mut files)?;
        let mut edges = Vec::new();
        for (module, file) in &files {
            let text =
                strip_test_blocks(&strip_comments_and_strings(&std::fs::read_to_string(file)?));
            edges.extend(module_edges(module, &text, crate_prefix, &files));
        }
        Ok(ModuleGraph { files, edges })
    }
}

/// Walks `mod x;` declarations from `file` (module `module`).
fn collect(
    file: &Path,
    module: ModPath,
    files: &mut BTreeMap<ModPath, PathBuf>,
) -> std::io::Result<()> {
    let text = strip_comments_and_strings(&std::fs::read_to_string(file)?);
    let dir = match file.file_name().and_then(|n| n.to_str()) {
        Some("mod.rs" | "lib.rs" | "main.rs") => file.parent().map(Path::to_path_buf),
        _ => Some(file.with_extension("")),
    }
    .unwrap_or_default();
    files.insert(module.clone(), file.to_path_buf());
    for child in declared_file_modules(&text) {
        let flat = dir.join(format!("{child}.rs"));
        let nested = dir.join(&child).join("mod.rs");
        let child_file = if flat.exists() { flat } else { nested };
        if child_file.exists() {
            let mut path = module.clone();
            path.push(child);
            collect(&child_file, path, files)?;
        }
    }
    Ok(())
}

/// Names of `mod x;` (file modules) declared in `text`.
fn declared_file_modules(text: &str) -> Vec<String> {
    let tokens = tokenize(text);
    let mut out = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        if token == "mod" && tokens.get(i + 2).map(String::as_str) == Some(";") {
            out.push(tokens[i + 1].clone());
        }
    }
    out
}

/// Identifiers, `::` and single punctuation characters.
fn tokenize(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            let mut ident = String::from(c);
            while let Some(&n) = chars.peek() {
                if !(n.is_alphanumeric() || n == '_') {
                    break;
                }
                ident.push(n);
                chars.next();
            }
            tokens.push(ident);
        } else if c == ':' && chars.peek() == Some(&':') {
            chars.next();
            tokens.push("::".into());
        } else if !c.is_whitespace() {
            tokens.push(c.to_string());
        }
    }
    tokens
}

/// Removes comments (doc comments too) and the contents of string and
/// char literals, so paths written in prose do not count.
fn strip_comments_and_strings(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let bytes: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let next = bytes.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < bytes.len() && bytes[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i + 1 < bytes.len() && !(bytes[i] == '*' && bytes[i + 1] == '/') {
                i += 1;
            }
            i += 2;
        } else if c == 'r' && matches!(next, Some('#' | '"')) && !prev_is_ident(&bytes, i) {
            // Raw string r"…" / r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while bytes.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if bytes.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            let closing: String = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let closing: Vec<char> = closing.chars().collect();
            while j < bytes.len() && !bytes[j..].starts_with(&closing) {
                j += 1;
            }
            out.push_str("\"\"");
            i = j + closing.len();
        } else if c == '"' {
            i += 1;
            while i < bytes.len() && bytes[i] != '"' {
                i += if bytes[i] == '\\' { 2 } else { 1 };
            }
            out.push_str("\"\"");
            i += 1;
        } else if c == '\'' && is_char_literal(&bytes, i) {
            i += 1;
            while i < bytes.len() && bytes[i] != '\'' {
                i += if bytes[i] == '\\' { 2 } else { 1 };
            }
            out.push_str("' '");
            i += 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn prev_is_ident(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

/// `'x'` or `'\n'` rather than a lifetime `'a`.
fn is_char_literal(chars: &[char], i: usize) -> bool {
    match chars.get(i + 1) {
        Some('\\') => true,
        Some(_) => chars.get(i + 2) == Some(&'\''),
        None => false,
    }
}

/// Drops `#[cfg(test)] mod name { … }` blocks (their `super` is the file
/// itself, and test code is not a layer).
fn strip_test_blocks(text: &str) -> String {
    let mut out = text.to_owned();
    while let Some(start) = out.find("#[cfg(test)]") {
        let rest = &out[start + "#[cfg(test)]".len()..];
        let trimmed = rest.trim_start();
        let is_inline_mod = trimmed
            .strip_prefix("mod ")
            .or_else(|| trimmed.strip_prefix("pub(crate) mod "))
            .and_then(|r| r.find(['{', ';']).map(|p| r.as_bytes()[p] == b'{'))
            .unwrap_or(false);
        let Some(open) = is_inline_mod.then(|| rest.find('{')).flatten() else {
            out.replace_range(start..start + "#[cfg(test)]".len(), "");
            continue;
        };
        let open = start + "#[cfg(test)]".len() + open;
        let mut depth = 0usize;
        let mut end = out.len();
        for (offset, c) in out[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + offset + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.replace_range(start..end, "");
    }
    out
}

/// The dependencies of `module` (text `text`) on other modules of `files`.
fn module_edges(
    module: &ModPath,
    text: &str,
    crate_prefix: &[&str],
    files: &BTreeMap<ModPath, PathBuf>,
) -> Vec<Edge> {
    let tokens = tokenize(text);
    let mut aliases: BTreeMap<String, ModPath> = BTreeMap::new();
    let mut paths: Vec<Vec<String>> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i] == "use" && (i == 0 || tokens[i - 1] != "::") {
            let end = tokens[i..]
                .iter()
                .position(|t| t == ";")
                .map_or(tokens.len(), |p| i + p);
            for (path, binding) in expand_use_tree(&tokens[i + 1..end]) {
                if let Some(target) = resolve_exact(module, &path, crate_prefix, files, &aliases) {
                    aliases.insert(binding, target);
                }
                paths.push(path);
            }
            i = end;
            continue;
        }
        // An inline path: a run of `ident :: ident :: …` not preceded by `::`.
        let starts_path = tokens.get(i + 1).map(String::as_str) == Some("::")
            && is_ident(&tokens[i])
            && (i == 0 || tokens[i - 1] != "::");
        if starts_path {
            let mut path = vec![tokens[i].clone()];
            let mut j = i + 1;
            while tokens.get(j).map(String::as_str) == Some("::")
                && tokens.get(j + 1).is_some_and(|t| is_ident(t))
            {
                path.push(tokens[j + 1].clone());
                j += 2;
            }
            paths.push(path);
            i = j;
            continue;
        }
        i += 1;
    }
    let mut edges = Vec::new();
    let mut seen = BTreeSet::new();
    for path in paths {
        let Some(to) = resolve_deepest(module, &path, crate_prefix, files, &aliases) else {
            continue;
        };
        if &to != module && seen.insert(to.clone()) {
            edges.push(Edge {
                from: module.clone(),
                to,
                evidence: path.join("::"),
            });
        }
    }
    edges
}

fn is_ident(token: &str) -> bool {
    token
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// Expands a `use` tree (`a::{b, c::{self, d as e}}`) into full paths with
/// the name each binds.
fn expand_use_tree(tokens: &[String]) -> Vec<(Vec<String>, String)> {
    let mut out = Vec::new();
    let tokens: Vec<&str> = tokens.iter().map(String::as_str).collect();
    let tokens = match tokens.first() {
        Some(&"pub") => skip_visibility(&tokens),
        _ => &tokens[..],
    };
    expand_into(tokens, &mut Vec::new(), &mut out);
    out
}

fn skip_visibility<'a>(tokens: &'a [&'a str]) -> &'a [&'a str] {
    if tokens.get(1) == Some(&"(") {
        let close = tokens.iter().position(|t| *t == ")").unwrap_or(0);
        &tokens[close + 1..]
    } else {
        &tokens[1..]
    }
}

fn expand_into(tokens: &[&str], prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    for item in split_top_level(tokens) {
        let depth = prefix.len();
        let mut k = 0;
        while k < item.len() {
            match item[k] {
                "::" => k += 1,
                "{" => {
                    let inner = &item[k + 1..item.len().saturating_sub(1)];
                    expand_into(inner, prefix, out);
                    k = item.len();
                }
                "as" => {
                    if let (Some(alias), false) = (item.get(k + 1), prefix.is_empty()) {
                        out.push((prefix.clone(), (*alias).to_owned()));
                    }
                    k = item.len();
                }
                "*" => k = item.len(),
                "self" if depth > 0 && k == 0 => {
                    let name = prefix.last().cloned().unwrap_or_default();
                    out.push((prefix.clone(), name));
                    k = item.len();
                }
                ident => {
                    prefix.push(ident.to_owned());
                    k += 1;
                    if k == item.len() {
                        out.push((prefix.clone(), ident.to_owned()));
                    }
                }
            }
        }
        prefix.truncate(depth);
    }
}

/// Splits a list at its top-level commas.
fn split_top_level<'a>(tokens: &'a [&'a str]) -> Vec<&'a [&'a str]> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, t) in tokens.iter().enumerate() {
        match *t {
            "{" => depth += 1,
            "}" => depth -= 1,
            "," if depth == 0 => {
                parts.push(&tokens[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&tokens[start..]);
    parts.into_iter().filter(|p| !p.is_empty()).collect()
}

/// Where `path`'s first segments lead: the module it starts from and the
/// segments left to walk.
fn anchor(
    module: &ModPath,
    path: &[String],
    crate_prefix: &[&str],
    files: &BTreeMap<ModPath, PathBuf>,
    aliases: &BTreeMap<String, ModPath>,
) -> Option<(ModPath, usize)> {
    let first = path.first()?.as_str();
    if first == "crate" {
        let matches =
            crate_prefix.len() <= path.len() && crate_prefix.iter().zip(path).all(|(a, b)| *a == b);
        return matches.then(|| (Vec::new(), crate_prefix.len()));
    }
    if first == "self" {
        return Some((module.clone(), 1));
    }
    if first == "super" {
        let mut base = module.clone();
        let mut k = 0;
        while path.get(k).map(String::as_str) == Some("super") {
            base.pop()?;
            k += 1;
        }
        return Some((base, k));
    }
    let mut child = module.clone();
    child.push(first.to_owned());
    if files.contains_key(&child) {
        return Some((child, 1));
    }
    aliases.get(first).map(|target| (target.clone(), 1))
}

/// The deepest module of `files` that `path` names (an item's module).
fn resolve_deepest(
    module: &ModPath,
    path: &[String],
    crate_prefix: &[&str],
    files: &BTreeMap<ModPath, PathBuf>,
    aliases: &BTreeMap<String, ModPath>,
) -> Option<ModPath> {
    let (mut current, start) = anchor(module, path, crate_prefix, files, aliases)?;
    for segment in &path[start..] {
        let mut child = current.clone();
        child.push(segment.clone());
        if !files.contains_key(&child) {
            break;
        }
        current = child;
    }
    Some(current)
}

/// The module `path` names exactly (for `use` bindings of modules).
fn resolve_exact(
    module: &ModPath,
    path: &[String],
    crate_prefix: &[&str],
    files: &BTreeMap<ModPath, PathBuf>,
    aliases: &BTreeMap<String, ModPath>,
) -> Option<ModPath> {
    let (mut current, start) = anchor(module, path, crate_prefix, files, aliases)?;
    for segment in &path[start..] {
        current.push(segment.clone());
        if !files.contains_key(&current) {
            return None;
        }
    }
    Some(current)
}

/// One layering cycle: at directory module `level`, these nodes (child
/// names, `(self)` for the level's own file) name each other.
#[derive(Debug)]
pub struct LayerCycle {
    pub level: ModPath,
    pub nodes: Vec<String>,
    /// The edges inside the cycle, as "from-file -> to-file (path)".
    pub evidence: Vec<String>,
}

/// Every layering cycle of `graph`, checked at each directory module.
pub fn layer_cycles(graph: &ModuleGraph) -> Vec<LayerCycle> {
    let mut cycles = Vec::new();
    for level in graph.files.keys() {
        let node_of = |m: &ModPath| -> Option<String> {
            if m.len() < level.len() || m[..level.len()] != level[..] {
                return None;
            }
            Some(
                m.get(level.len())
                    .cloned()
                    .unwrap_or_else(|| "(self)".into()),
            )
        };
        let mut adjacency: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut evidence: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
        for edge in &graph.edges {
            let (Some(a), Some(b)) = (node_of(&edge.from), node_of(&edge.to)) else {
                continue;
            };
            if a == b {
                continue;
            }
            adjacency.entry(a.clone()).or_default().insert(b.clone());
            evidence.entry((a, b)).or_default().push(format!(
                "{} -> {} ({})",
                display(&edge.from),
                display(&edge.to),
                edge.evidence
            ));
        }
        for component in strongly_connected(&adjacency) {
            if component.len() < 2 {
                continue;
            }
            let inside: BTreeSet<&String> = component.iter().collect();
            let mut lines = Vec::new();
            for ((a, b), e) in &evidence {
                if inside.contains(a) && inside.contains(b) {
                    lines.extend(e.iter().cloned());
                }
            }
            cycles.push(LayerCycle {
                level: level.clone(),
                nodes: component,
                evidence: lines,
            });
        }
    }
    cycles
}

/// One circle of files: these file modules name each other, through
/// `from -> to (path)` edges.
#[derive(Debug)]
pub struct FileCycle {
    pub files: Vec<String>,
    pub evidence: Vec<String>,
}

/// Every circle of files of `graph`: file modules that name each other,
/// leaving out what a module and its own descendants name of each other (a
/// `mod.rs` re-exporting its children, children naming their parent's
/// shared types: one unit, by Rust's own layout). What remains are
/// siblings or cousins that depend on each other, the circles a reader
/// cannot untangle by reading one folder.
pub fn file_cycles(graph: &ModuleGraph) -> Vec<FileCycle> {
    let inside = |a: &ModPath, b: &ModPath| a.len() <= b.len() && b[..a.len()] == a[..];
    let mut adjacency: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut evidence: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for edge in &graph.edges {
        if inside(&edge.from, &edge.to) || inside(&edge.to, &edge.from) {
            continue;
        }
        if !graph.files.contains_key(&edge.from) || !graph.files.contains_key(&edge.to) {
            continue;
        }
        let (a, b) = (display(&edge.from), display(&edge.to));
        adjacency.entry(a.clone()).or_default().insert(b.clone());
        evidence
            .entry((a.clone(), b.clone()))
            .or_default()
            .push(format!("{a} -> {b} ({})", edge.evidence));
    }
    strongly_connected(&adjacency)
        .into_iter()
        .filter(|component| component.len() > 1)
        .map(|files| {
            let members: BTreeSet<&String> = files.iter().collect();
            let evidence = evidence
                .iter()
                .filter(|((a, b), _)| members.contains(a) && members.contains(b))
                .flat_map(|(_, lines)| lines.iter().cloned())
                .collect();
            FileCycle { files, evidence }
        })
        .collect()
}

/// A module path as written from the root (`(root)` for the root).
pub fn display(module: &ModPath) -> String {
    if module.is_empty() {
        "(root)".into()
    } else {
        module.join("::")
    }
}

/// Tarjan's strongly connected components.
fn strongly_connected(adjacency: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        adjacency: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        if let Some(next) = s.adjacency.get(v) {
            for w in next {
                if !s.index.contains_key(w.as_str()) {
                    visit(s, w);
                    let low = s.low[w.as_str()].min(s.low[v]);
                    s.low.insert(v, low);
                } else if s.on_stack.contains(w.as_str()) {
                    let low = s.index[w.as_str()].min(s.low[v]);
                    s.low.insert(v, low);
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            component.sort();
            s.out.push(component);
        }
    }
    let mut state = State {
        adjacency,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in adjacency.keys() {
        if !state.index.contains_key(v.as_str()) {
            visit(&mut state, v);
        }
    }
    state.out
}
