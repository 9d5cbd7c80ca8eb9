//! Rust sources read with a Rust parser (`syn`), for the tidy tests: a crate's module graph
//! from every `crate::`, `super::` and `self::` path of every whole file — in `use` trees, types,
//! expressions and macro bodies — outside items marked `#[cfg(test)]` (tests may use anything),
//! and a file's code without its test-only items.

use std::collections::{BTreeMap, BTreeSet};

use syn::visit::Visit;

/// Whether `attrs` hold `#[cfg(test)]`, or a `cfg` that needs `test` (`all(test, …)`), not
/// `not(test)`.
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    fn idents(tokens: proc_macro2::TokenStream, out: &mut Vec<String>) {
        for t in tokens {
            match t {
                proc_macro2::TokenTree::Ident(i) => out.push(i.to_string()),
                proc_macro2::TokenTree::Group(g) => idents(g.stream(), out),
                _ => {}
            }
        }
    }
    attrs.iter().any(|a| {
        let Ok(tokens) = a.parse_args::<proc_macro2::TokenStream>() else {
            return false;
        };
        let mut words = Vec::new();
        idents(tokens, &mut words);
        a.path().is_ident("cfg")
            && words.iter().any(|w| w == "test")
            && !words.iter().any(|w| w == "not" || w == "any")
    })
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    use syn::Item::*;
    match item {
        Const(i) => &i.attrs,
        Enum(i) => &i.attrs,
        ExternCrate(i) => &i.attrs,
        Fn(i) => &i.attrs,
        ForeignMod(i) => &i.attrs,
        Impl(i) => &i.attrs,
        Macro(i) => &i.attrs,
        Mod(i) => &i.attrs,
        Static(i) => &i.attrs,
        Struct(i) => &i.attrs,
        Trait(i) => &i.attrs,
        TraitAlias(i) => &i.attrs,
        Type(i) => &i.attrs,
        Union(i) => &i.attrs,
        Use(i) => &i.attrs,
        _ => &[],
    }
}

/// What one file says: the items it has (outside test-only ones) and the module paths it uses,
/// made absolute (`["store", "records", "Campaign"]`).
#[derive(Debug, Default)]
pub struct FileUses {
    /// The names of the file's top-level items, test-only ones included (`fn open`, `trait
    /// Store`, `mod sql`, `use …`), for the reader's self-test.
    pub items: Vec<String>,
    /// The absolute paths it uses, test-only items aside.
    pub paths: Vec<Vec<String>>,
}

struct Reader<'a> {
    /// The module the code being read is in (the file's, then any inline `mod` inside it).
    module: Vec<String>,
    out: &'a mut FileUses,
}

impl Reader<'_> {
    /// Makes `segments` absolute from the current module; `None` for a path that does not start
    /// at `crate`, `super` or `self`.
    fn absolute(&self, segments: &[String]) -> Option<Vec<String>> {
        let first = segments.first()?;
        let mut base = match first.as_str() {
            "crate" => Vec::new(),
            "super" | "self" => self.module.clone(),
            _ => return None,
        };
        // `crate` and `self` name where the path starts; `super` is counted below.
        let mut rest = match first.as_str() {
            "crate" | "self" => &segments[1..],
            _ => segments,
        };
        while rest.first().is_some_and(|s| s == "super") {
            base.pop()?;
            rest = &rest[1..];
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    fn add(&mut self, segments: Vec<String>) {
        if let Some(p) = self.absolute(&segments) {
            self.out.paths.push(p);
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut full = prefix.clone();
                if n.ident != "self" {
                    full.push(n.ident.to_string());
                }
                self.add(full);
            }
            syn::UseTree::Rename(r) => {
                let mut full = prefix.clone();
                if r.ident != "self" {
                    full.push(r.ident.to_string());
                }
                self.add(full);
            }
            syn::UseTree::Glob(_) => self.add(prefix.clone()),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }

    /// Paths in a macro's tokens (`format!`, maud's `html!`, …): `crate :: a :: b` runs.
    fn tokens(&mut self, tokens: proc_macro2::TokenStream) {
        use proc_macro2::TokenTree;
        let flat: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < flat.len() {
            match &flat[i] {
                TokenTree::Group(g) => self.tokens(g.stream()),
                TokenTree::Ident(id)
                    if (id == "crate" || id == "super") && !after_dollar_or_path(&flat, i) =>
                {
                    let mut segs = vec![id.to_string()];
                    let mut j = i + 1;
                    while j + 2 < flat.len()
                        && matches!(&flat[j], TokenTree::Punct(p) if p.as_char() == ':')
                        && matches!(&flat[j + 1], TokenTree::Punct(p) if p.as_char() == ':')
                    {
                        match &flat[j + 2] {
                            TokenTree::Ident(next) => segs.push(next.to_string()),
                            _ => break,
                        }
                        j += 3;
                    }
                    if segs.len() > 1 {
                        self.add(segs);
                    }
                    i = j;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }
}

/// Whether the token before `i` is `$` (`$crate` in a macro) or `:` (inside a longer path).
fn after_dollar_or_path(flat: &[proc_macro2::TokenTree], i: usize) -> bool {
    i > 0
        && matches!(&flat[i - 1], proc_macro2::TokenTree::Punct(p) if p.as_char() == '$' || p.as_char() == ':')
}

impl<'ast> Visit<'ast> for Reader<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if is_test_only(item_attrs(item)) {
            return;
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        self.module.push(m.ident.to_string());
        syn::visit::visit_item_mod(self, m);
        self.module.pop();
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &u.tree);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        self.add(segments);
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.tokens(mac.tokens.clone());
        syn::visit::visit_macro(self, mac);
    }
}

/// A top-level item as the self-test names it (`fn open`, `trait Store`, `use`).
fn item_name(item: &syn::Item) -> String {
    use syn::Item::*;
    match item {
        Const(i) => format!("const {}", i.ident),
        Enum(i) => format!("enum {}", i.ident),
        Fn(i) => format!("fn {}", i.sig.ident),
        Impl(_) => "impl".to_string(),
        Macro(_) => "macro".to_string(),
        Mod(i) => format!("mod {}", i.ident),
        Static(i) => format!("static {}", i.ident),
        Struct(i) => format!("struct {}", i.ident),
        Trait(i) => format!("trait {}", i.ident),
        Type(i) => format!("type {}", i.ident),
        Use(_) => "use".to_string(),
        _ => "other".to_string(),
    }
}

/// Reads one file of module `module` (`["store", "records"]`).
pub fn read_file(source: &str, module: &[String]) -> Result<FileUses, syn::Error> {
    let file = syn::parse_file(source)?;
    let mut out = FileUses {
        items: file.items.iter().map(item_name).collect(),
        ..FileUses::default()
    };
    let mut reader = Reader {
        module: module.to_vec(),
        out: &mut out,
    };
    reader.visit_file(&file);
    Ok(out)
}

/// Module → the modules of its crate it uses (not its ancestors or descendants), from each
/// module's file (`modules`: `store::records` → its source).
pub fn graph(modules: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph = BTreeMap::new();
    for (m, source) in modules {
        let own: Vec<String> = m.split("::").map(str::to_string).collect();
        let uses = read_file(source, &own).unwrap_or_else(|e| panic!("{m}: {e}"));
        let mut deps = BTreeSet::new();
        for p in uses.paths {
            let target = (1..=p.len())
                .rev()
                .map(|k| p[..k].join("::"))
                .find(|cand| modules.contains_key(cand));
            if let Some(t) = target {
                let nested =
                    t == *m || m.starts_with(&format!("{t}::")) || t.starts_with(&format!("{m}::"));
                if !nested {
                    deps.insert(t);
                }
            }
        }
        graph.insert(m.clone(), deps);
    }
    graph
}

/// The source without comments and without its test-only items (`#[cfg(test)] mod tests { … }`,
/// `#[cfg(test)] mod conformance;`, a test-only function), for text checks such as "no SQL
/// here". A comment is a line that starts with `//` or what follows ` //` (rustfmt puts a space
/// before a trailing comment), so a `//` inside a string (`http://…`) stays code.
pub fn code_of(source: &str) -> String {
    use syn::spanned::Spanned;
    let file = syn::parse_file(source).unwrap_or_else(|e| panic!("not Rust: {e}"));
    // 1-based line ranges of the test-only items, their attributes included.
    let tests: Vec<(usize, usize)> = file
        .items
        .iter()
        .filter(|item| is_test_only(item_attrs(item)))
        .map(|item| (item.span().start().line, item.span().end().line))
        .collect();
    source
        .lines()
        .enumerate()
        .filter(|(i, _)| !tests.iter().any(|&(a, b)| (a..=b).contains(&(i + 1))))
        .map(|(_, l)| l)
        .filter(|l| !l.trim_start().starts_with("//"))
        .map(|l| l.split(" //").next().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}
