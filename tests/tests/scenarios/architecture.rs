//! The shape of the library's source, checked from the code itself:
//!
//! - no two files of a library crate import each other, directly or through others
//!   (every path a file names — `use crate::..`, `super::..`, or a path in code —
//!   counts, and a name re-exported by a module is followed to the file that defines
//!   it);
//! - no library file is longer than 600 lines (and, through clippy's
//!   `too_many_lines` at 120 in `clippy.toml`, no library function over 120 lines).
//!
//! `cargo test -p stategraph-tests --test scenarios architecture` prints every circle it finds,
//! with the names that tie it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// Library source folders held to the file-length limit.
const LIBRARY_DIRS: &[&str] = &[
    "graph/src",
    "graph-macros/src",
    "agent-macros/src",
    "macro-source/src",
    "checkpoint-sqlite/src",
    "checkpoint-postgres/src",
    "cli/src",
    "agent/src",
    "server/src",
    "studio/src",
];

const MAX_LINES: usize = 600;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A module path (`["runtime", "config"]`) for a file under `src`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap_or(file);
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// One parsed file: where it sits, what it defines, what it re-exports, what it names.
struct File {
    module: Vec<String>,
    defines: BTreeSet<String>,
    /// `pub use` names: the local name and the path it stands for (absolute).
    reexports: BTreeMap<String, Vec<String>>,
    /// Absolute paths named anywhere in the file.
    names: Vec<Vec<String>>,
    /// `mod.rs` or `lib.rs`: a folder's module.
    is_dir_module: bool,
}

struct Collector<'a> {
    module: &'a [String],
    paths: Vec<Vec<String>>,
    reexports: BTreeMap<String, Vec<String>>,
    /// Inline modules (`mod tests { .. }`) around the current item.
    inline: Vec<String>,
}

impl Collector<'_> {
    /// Makes a path absolute from `crate::`, `super::` or `self::`; other paths (std,
    /// other crates, local names) are not imports between files.
    fn absolute(&self, segments: &[String]) -> Option<Vec<String>> {
        let first = segments.first()?;
        // A file `a/b.rs` and `a/b/mod.rs` both hold module `a::b`.
        let base: Vec<String> = self.module.iter().chain(&self.inline).cloned().collect();
        match first.as_str() {
            "crate" => Some(segments[1..].to_vec()),
            "self" => Some(
                base.into_iter()
                    .chain(segments[1..].iter().cloned())
                    .collect(),
            ),
            "super" => {
                let mut at = base;
                let mut rest = segments;
                while rest.first().is_some_and(|s| s == "super") {
                    at.pop();
                    rest = &rest[1..];
                }
                Some(at.into_iter().chain(rest.iter().cloned()).collect())
            }
            _ => None,
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree, public: bool) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree, public);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut full = prefix.clone();
                full.push(n.ident.to_string());
                self.add_use(full, n.ident.to_string(), public);
            }
            syn::UseTree::Rename(r) => {
                let mut full = prefix.clone();
                full.push(r.ident.to_string());
                self.add_use(full, r.rename.to_string(), public);
            }
            syn::UseTree::Glob(_) => {
                let abs = self
                    .absolute(prefix)
                    .unwrap_or_else(|| self.relative(prefix));
                self.paths.push(abs);
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t, public);
                }
            }
        }
    }

    fn add_use(&mut self, full: Vec<String>, local: String, public: bool) {
        let abs = self.absolute(&full).unwrap_or_else(|| self.relative(&full));
        if public {
            self.reexports.insert(local, abs.clone());
        }
        self.paths.push(abs);
    }

    /// A path that may start with a child module (`config::RunConfig` in
    /// `runtime/mod.rs`); when it does not, it resolves to the file itself and is
    /// dropped.
    fn relative(&self, segments: &[String]) -> Vec<String> {
        self.module
            .iter()
            .chain(&self.inline)
            .chain(segments)
            .cloned()
            .collect()
    }
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_item_use(&mut self, node: &'ast syn::ItemUse) {
        let public = !matches!(node.vis, syn::Visibility::Inherited);
        let mut prefix = Vec::new();
        self.use_tree(&mut prefix, &node.tree, public && self.inline.is_empty());
    }

    fn visit_item_mod(&mut self, node: &'ast syn::ItemMod) {
        // Inline modules (`mod tests { .. }`) are part of the file.
        self.inline.push(node.ident.to_string());
        syn::visit::visit_item_mod(self, node);
        self.inline.pop();
    }

    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {
        // `pub(super)` names a module, but imports nothing from it.
    }

    fn visit_path(&mut self, node: &'ast syn::Path) {
        let segments: Vec<String> = node.segments.iter().map(|s| s.ident.to_string()).collect();
        match self.absolute(&segments) {
            Some(abs) => self.paths.push(abs),
            None if segments.len() > 1 => self.paths.push(self.relative(&segments)),
            None => {}
        }
        syn::visit::visit_path(self, node);
    }
}

fn defined_names(file: &syn::File) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for item in &file.items {
        let ident = match item {
            syn::Item::Const(i) => Some(&i.ident),
            syn::Item::Enum(i) => Some(&i.ident),
            syn::Item::Fn(i) => Some(&i.sig.ident),
            syn::Item::Mod(i) => Some(&i.ident),
            syn::Item::Static(i) => Some(&i.ident),
            syn::Item::Struct(i) => Some(&i.ident),
            syn::Item::Trait(i) => Some(&i.ident),
            syn::Item::Type(i) => Some(&i.ident),
            syn::Item::Union(i) => Some(&i.ident),
            syn::Item::Macro(i) => i.ident.as_ref(),
            _ => None,
        };
        if let Some(ident) = ident {
            names.insert(ident.to_string());
        }
    }
    names
}

fn parse(src: &Path, path: &Path) -> File {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let ast =
        syn::parse_file(&text).unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()));
    let module = module_of(src, path);
    let is_dir_module = path
        .file_name()
        .is_some_and(|n| n == "mod.rs" || n == "lib.rs");
    let mut c = Collector {
        module: &module,
        paths: Vec::new(),
        reexports: BTreeMap::new(),
        inline: Vec::new(),
    };
    c.visit_file(&ast);
    let (names, reexports) = (c.paths, c.reexports);
    File {
        defines: defined_names(&ast),
        module,
        reexports,
        names,
        is_dir_module,
    }
}

/// The file that defines `path` (following re-exports), if it is one of ours.
fn resolve(
    files: &BTreeMap<Vec<String>, File>,
    path: &[String],
    hops: usize,
) -> Option<Vec<String>> {
    if hops > 16 {
        return None;
    }
    // The longest prefix that is a module file.
    let mut k = path.len();
    while k > 0 && !files.contains_key(&path[..k]) {
        k -= 1;
    }
    let module = &path[..k];
    let file = files.get(module)?;
    let Some(item) = path.get(k) else {
        return Some(module.to_vec());
    };
    if file.defines.contains(item) {
        return Some(module.to_vec());
    }
    if let Some(target) = file.reexports.get(item) {
        let mut full = target.clone();
        full.extend(path[k + 1..].iter().cloned());
        if full.as_slice() != path {
            return resolve(files, &full, hops + 1).or(Some(module.to_vec()));
        }
    }
    Some(module.to_vec())
}

fn display(module: &[String]) -> String {
    if module.is_empty() {
        "lib.rs".to_string()
    } else {
        module.join("::")
    }
}

#[test]
fn no_import_circle_between_files_of_any_library_crate() {
    let root = workspace_root();
    let report: String = LIBRARY_DIRS
        .iter()
        .map(|dir| circles(&root.join(dir)))
        .collect();
    assert!(
        report.is_empty(),
        "files of a library crate import each other:\n{report}"
    );
}

/// The import circles between the files of the crate whose source is `src`, each with
/// the names that tie it (empty when there are none).
fn circles(src: &Path) -> String {
    let mut paths = Vec::new();
    rust_files(src, &mut paths);
    assert!(!paths.is_empty(), "no Rust files at {}", src.display());
    let files: BTreeMap<Vec<String>, File> = paths
        .iter()
        .map(|p| {
            let f = parse(src, p);
            (f.module.clone(), f)
        })
        .collect();

    // file -> file, with the names that tie them.
    let mut edges: BTreeMap<Vec<String>, BTreeMap<Vec<String>, BTreeSet<String>>> = BTreeMap::new();
    for (module, file) in &files {
        for name in &file.names {
            let Some(target) = resolve(&files, name, 0) else {
                continue;
            };
            // A module's own children declared with `mod` are not imports; naming a
            // parent module only as a path prefix is not either.
            if &target == module || (file.is_dir_module && target.is_empty()) {
                continue;
            }
            if target.is_empty() && !module.is_empty() {
                // Named through the crate root: lib.rs only declares and re-exports.
                continue;
            }
            edges
                .entry(module.clone())
                .or_default()
                .entry(target)
                .or_default()
                .insert(name.last().cloned().unwrap_or_default());
        }
    }

    // Strongly connected components (Tarjan, iterative enough for a few dozen files).
    let nodes: Vec<&Vec<String>> = files.keys().collect();
    let index_of: BTreeMap<&Vec<String>, usize> =
        nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let adj: Vec<Vec<usize>> = nodes
        .iter()
        .map(|n| {
            edges
                .get(*n)
                .map(|m| m.keys().filter_map(|t| index_of.get(t).copied()).collect())
                .unwrap_or_default()
        })
        .collect();
    let circles = tarjan(&adj);
    let mut report = String::new();
    for comp in circles.iter().filter(|c| c.len() > 1) {
        let members: BTreeSet<usize> = comp.iter().copied().collect();
        report.push_str(&format!(
            "{}: circle of {} files: {}\n",
            src.display(),
            comp.len(),
            comp.iter()
                .map(|&i| display(nodes[i]))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        for &i in comp {
            for (target, names) in edges.get(nodes[i]).into_iter().flatten() {
                if index_of.get(target).is_some_and(|j| members.contains(j)) {
                    report.push_str(&format!(
                        "  {} -> {}: {}\n",
                        display(nodes[i]),
                        display(target),
                        names.iter().cloned().collect::<Vec<_>>().join(", ")
                    ));
                }
            }
        }
    }
    report
}

fn tarjan(adj: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct T<'a> {
        adj: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn strong(t: &mut T<'_>, v: usize) {
        t.index[v] = Some(t.next);
        t.low[v] = t.next;
        t.next += 1;
        t.stack.push(v);
        t.on_stack[v] = true;
        for &w in &t.adj[v] {
            match t.index[w] {
                None => {
                    strong(t, w);
                    t.low[v] = t.low[v].min(t.low[w]);
                }
                Some(iw) if t.on_stack[w] => t.low[v] = t.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(t.low[v]) == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on_stack[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            t.out.push(comp);
        }
    }
    let n = adj.len();
    let mut t = T {
        adj,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if t.index[v].is_none() {
            strong(&mut t, v);
        }
    }
    t.out
}

#[test]
fn no_library_file_is_longer_than_600_lines() {
    let root = workspace_root();
    let mut long = Vec::new();
    for dir in LIBRARY_DIRS {
        let mut files = Vec::new();
        rust_files(&root.join(dir), &mut files);
        assert!(!files.is_empty(), "{dir} has no Rust files");
        for file in files {
            let lines = std::fs::read_to_string(&file)
                .unwrap_or_default()
                .lines()
                .count();
            if lines > MAX_LINES {
                long.push(format!(
                    "{}: {lines} lines",
                    file.strip_prefix(&root).unwrap_or(&file).display()
                ));
            }
        }
    }
    long.sort();
    assert!(
        long.is_empty(),
        "library files over {MAX_LINES} lines (split them by concept):\n{}",
        long.join("\n")
    );
}

/// The test binaries each crate may have. Every test binary builds its own copy of
/// the generic runtime and links on its own, so a new test is a module of one of
/// these (`tests/<binary>/main.rs`), not a new file in `tests/`.
const TEST_BINARIES: &[(&str, &[&str])] = &[
    ("agent", &["it"]),
    ("bench", &["pg_roundtrips"]),
    ("cli", &["it"]),
    ("examples", &["it"]),
    // The drill starts its own binary again as the drill's server processes.
    ("server", &["drills", "it"]),
    ("studio", &["api"]),
    ("tests", &["savers", "scenarios", "streams"]),
    ("ui-tests", &["ui"]),
];

/// The integration test targets Cargo finds in `crate_dir/tests`: each `*.rs` file
/// and each folder with a `main.rs`.
fn test_targets(crate_dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(crate_dir.join("tests")) else {
        return Vec::new();
    };
    let mut targets: Vec<String> = entries
        .flatten()
        .filter_map(|entry| {
            let path = entry.path();
            let name = path.file_stem()?.to_str()?.to_string();
            let is_target = if path.is_dir() {
                path.join("main.rs").is_file()
            } else {
                path.extension().is_some_and(|e| e == "rs")
            };
            is_target.then_some(name)
        })
        .collect();
    targets.sort();
    targets
}

#[test]
fn every_crate_keeps_its_few_test_binaries() {
    let root = workspace_root();
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&root)
        .expect("the workspace root")
        .flatten()
    {
        let dir = entry.path();
        if !dir.join("Cargo.toml").is_file() || dir == root {
            continue;
        }
        let targets = test_targets(&dir);
        if !targets.is_empty() {
            let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
            found.push((name.unwrap_or_default(), targets));
        }
    }
    found.sort();
    let expected: Vec<(String, Vec<String>)> = TEST_BINARIES
        .iter()
        .map(|(dir, bins)| {
            (
                dir.to_string(),
                bins.iter().map(|b| b.to_string()).collect(),
            )
        })
        .collect();
    assert_eq!(
        found, expected,
        "a test file directly in a crate's `tests/` is a binary of its own: make it a module of that crate's `tests/it/main.rs` (or the binary listed here for it)"
    );
}
