//! weir-sys binds everything the installed weir.h declares: every WEIR_API
//! function, every typedef'd struct, every WEIR_* constant. A header that grows
//! without its bindings fails here, naming what is missing.
use std::collections::BTreeSet;

const BINDINGS: &str = include_str!("../src/lib.rs");

fn header() -> String {
    // Not env!(): without the header the bindings still build, and this test
    // says why it cannot run.
    let Some(path) = option_env!("WEIR_SYS_HEADER") else {
        panic!("build.rs found no weir.h in pkg-config's include paths");
    };
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Identifiers that follow `prefix` in `text`, up to the first non-identifier byte.
fn after(text: &str, prefix: &str) -> BTreeSet<String> {
    text.match_indices(prefix)
        .map(|(i, _)| {
            text[i + prefix.len()..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>()
        })
        .filter(|s| !s.is_empty())
        .collect()
}

fn missing(what: &str, declared: BTreeSet<String>, bound: &BTreeSet<String>) -> Vec<String> {
    declared.into_iter().filter(|n| !bound.contains(n)).map(|n| format!("{what} {n}")).collect()
}

#[test]
fn every_declaration_in_weir_h_is_bound() {
    let h = header();
    // Declarations: functions, after "WEIR_API <type> [*]"; structs, after "typedef struct ";
    // constants, "#define WEIR_*" that are not function-like and not the header's own guards.
    let functions: BTreeSet<String> = h
        .lines()
        .filter(|l| l.starts_with("WEIR_API "))
        .filter_map(|l| l.split('(').next())
        .filter_map(|l| l.rsplit([' ', '*']).next())
        .map(str::to_string)
        .collect();
    let structs = after(&h, "typedef struct ");
    let consts: BTreeSet<String> = after(&h, "#define ")
        .into_iter()
        .filter(|n| n.starts_with("WEIR_") && !["WEIR_H", "WEIR_API"].contains(&n.as_str()))
        .filter(|n| !h.contains(&format!("#define {n}(")))
        .collect();
    assert!(functions.len() > 20 && structs.len() > 5 && consts.len() > 40, "header parse went wrong");

    let bound_fns = after(BINDINGS, "pub fn ");
    let bound_structs = after(BINDINGS, "pub struct ");
    let bound_consts = after(BINDINGS, "pub const ");
    let mut gaps = missing("function", functions, &bound_fns);
    gaps.extend(missing("struct", structs, &bound_structs));
    gaps.extend(missing("constant", consts, &bound_consts));
    assert!(gaps.is_empty(), "weir.h declares what weir-sys does not bind:\n  {}", gaps.join("\n  "));
}
