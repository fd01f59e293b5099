//! The outside values a task needs, and whether the operator has them — checked before any trial,
//! so a task never spends an agent's model budget only to score 0 for a key nobody set. Pure: task
//! files and the operator's values in, what is missing out (the values themselves are never kept).
//!
//! A task names outside values in four places:
//! - `[environment] env` — the container's environment for the whole trial;
//! - `[verifier] env` — the environment of `tests/test.sh`;
//! - `[solution] env` — the environment of `solution/solve.sh` (the oracle agent only);
//! - its compose file (`environment/docker-compose.yaml`), with Compose's forms.
//!
//! A `task.toml` value is resolved from `--env NAME=VALUE`, else the operator's environment, else
//! the default written beside it (`${NAME:-default}`). Every reference without a default is needed:
//! Harbor's `resolve_env_vars` refuses the trial when it is unset ("Missing environment
//! variables"). A compose variable comes from `--env` (a passed-through name or a value), else
//! the task's own `[environment] env`; Harbor's variables ([`super::compose::HARBOR_VARIABLES`]) are
//! always set. A compose variable is needed when it has no default and either demands a value
//! (`${NAME:?err}`) or the task's own files (Dockerfiles, scripts, solution, tests, instruction,
//! `task.toml`) name it — `GH_TOKEN` of gh-repo-analytics, `GOOGLE_AUTH_PATH` of
//! scheduling-email-assistant; a variable only a harness reads (`CLAUDE_CODE_USE_VERTEX`,
//! `${HOME}/.config/gcloud`) stays empty, as Compose leaves it. An empty value counts as missing:
//! an empty API key fails as surely as none.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::Serialize;

use super::Task;
use super::compose::{self, HARBOR_VARIABLES};

/// What a run does with a task whose needed values are not set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MissingEnvPolicy {
    /// The run refuses to start, naming every such task, variable and place (`skillscope run`).
    #[default]
    RefuseRun,
    /// Such a task's trials are refused one by one (a `build-error` naming the values, no
    /// container started); the others run (`skillscope tasks --check`).
    RefuseTasks,
    /// They run anyway, with the values empty, and their trials are marked (`trials.missing_env`)
    /// so a report can leave them out (`--allow-missing-env`).
    Allow,
}

/// Where a task names a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EnvTable {
    /// `[environment] env` of `task.toml`.
    Environment,
    /// `[verifier] env` of `task.toml`.
    Verifier,
    /// `[solution] env` of `task.toml`.
    Solution,
    /// The compose file.
    Compose,
}

/// One `${NAME…}` (or, in a compose file, `$NAME`) reference in a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The variable's name.
    pub name: String,
    /// The value written beside it for an unset (or empty) variable: `${NAME:-d}`, `${NAME-d}`,
    /// and `""` for `${NAME:+alt}` / `${NAME+alt}` (which never need the variable).
    pub default: Option<String>,
    /// `${NAME:?err}` / `${NAME?err}`: Compose refuses the file without it.
    pub demands: bool,
}

/// Every reference in `value`, in order: `${NAME}`, `${NAME:-d}`, `${NAME-d}`, `${NAME:?e}`,
/// `${NAME?e}`, `${NAME:+a}`, `${NAME+a}` and, with `bare` (compose files), `$NAME`; `$$` is a
/// literal dollar (Compose's "Interpolation" rules). References nested in a default are not
/// returned: they matter only when the outer variable is unset.
pub fn references(value: &str, bare: bool) -> Vec<Reference> {
    let b = value.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let is_name =
        |c: u8, first: bool| c == b'_' || c.is_ascii_alphabetic() || (!first && c.is_ascii_digit());
    while i < b.len() {
        if b[i] != b'$' {
            i += 1;
            continue;
        }
        match b.get(i + 1) {
            Some(b'$') => i += 2,
            Some(b'{') => {
                let start = i + 2;
                let Some(len) = compose::matching_brace(&value[start..]) else {
                    return out;
                };
                let inner = &value[start..start + len];
                let n = inner
                    .bytes()
                    .enumerate()
                    .take_while(|(k, c)| is_name(*c, *k == 0))
                    .count();
                let (name, op) = inner.split_at(n);
                if !name.is_empty() {
                    let (default, demands) = if let Some(d) = op.strip_prefix(":-") {
                        (Some(d.to_string()), false)
                    } else if op.starts_with(":+") || op.starts_with('+') {
                        (Some(String::new()), false)
                    } else if op.starts_with(":?") || op.starts_with('?') {
                        (None, true)
                    } else if let Some(d) = op.strip_prefix('-') {
                        (Some(d.to_string()), false)
                    } else {
                        (None, false)
                    };
                    out.push(Reference {
                        name: name.to_string(),
                        default,
                        demands,
                    });
                }
                i = start + len + 1;
            }
            Some(&c) if bare && is_name(c, true) => {
                let n = b[i + 1..]
                    .iter()
                    .enumerate()
                    .take_while(|(k, c)| is_name(**c, *k == 0))
                    .count();
                out.push(Reference {
                    name: value[i + 1..i + 1 + n].to_string(),
                    default: None,
                    demands: false,
                });
                i += 1 + n;
            }
            _ => i += 1,
        }
    }
    out
}

/// Expands `${NAME}` / `${NAME:-default}` in a `task.toml` value with `lookup` (an unset or empty
/// variable takes the default, else becomes empty); other text is kept as is.
pub fn expand(value: &str, lookup: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        match lookup(name).filter(|v| !v.is_empty()) {
            Some(v) => out.push_str(&v),
            None => out.push_str(default.unwrap_or("")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The values the operator gave a run: `--env NAME=VALUE` and the passed-through `--env NAME`
/// that are set (as `NAME=VALUE` strings, [`crate::config::RunSettings::container_env`]), and —
/// for `task.toml` references only — the operator's own environment.
#[derive(Debug, Clone, Default)]
pub struct EnvValues {
    given: BTreeMap<String, String>,
    /// Read the process environment for `task.toml` references (off in tests).
    process: bool,
}

impl EnvValues {
    /// From `NAME=VALUE` strings (what `--env` resolved to), reading the operator's environment
    /// for `task.toml` references too.
    pub fn new<'a>(given: impl IntoIterator<Item = &'a String>) -> EnvValues {
        EnvValues {
            given: given
                .into_iter()
                .filter_map(|e| e.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            process: true,
        }
    }

    /// Only these values: the process environment is not read (for tests and previews).
    pub fn only<'a>(given: impl IntoIterator<Item = &'a String>) -> EnvValues {
        EnvValues {
            process: false,
            ..EnvValues::new(given)
        }
    }

    /// The non-empty value of a `task.toml` reference: `--env`, else the operator's environment.
    pub fn task_value(&self, name: &str) -> Option<String> {
        self.given
            .get(name)
            .cloned()
            .or_else(|| self.process.then(|| std::env::var(name).ok()).flatten())
            .filter(|v| !v.is_empty())
    }

    /// True when `name` was given with `--env` (a value, or a set passed-through name).
    pub fn given(&self, name: &str) -> bool {
        self.given.get(name).is_some_and(|v| !v.is_empty())
    }

    /// `KEY=VALUE` strings of one `task.toml` env table, resolved (see [`expand`]). Only ever
    /// handed to a container, never stored.
    pub fn resolve(&self, table: &BTreeMap<String, String>) -> Vec<String> {
        table
            .iter()
            .map(|(k, v)| format!("{k}={}", expand(v, |n| self.task_value(n))))
            .collect()
    }

    /// The variables a compose file is interpolated with, before Harbor's own are laid over them:
    /// the `--env` values, then the task's resolved `[environment] env` (Harbor's precedence: the
    /// task's table over the operator's environment).
    pub fn compose_variables(&self, task: &Task) -> HashMap<String, String> {
        let mut vars: HashMap<String, String> = self.given.clone().into_iter().collect();
        for (k, v) in &task.config.environment.env {
            vars.insert(k.clone(), expand(v, |n| self.task_value(n)));
        }
        vars
    }
}

/// One variable a task names, and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnvUse {
    /// The variable.
    pub variable: String,
    /// Which table or file names it.
    pub table: EnvTable,
    /// Where, as messages name it: `[solution] env OPENAI_API_KEY`,
    /// `docker-compose.yaml services.main.environment[0]`.
    pub place: String,
    /// The file naming it, relative to the task folder, and its 1-based line.
    pub file: String,
    /// Its 1-based line in `file`, when found.
    pub line: Option<usize>,
    /// The default written beside it.
    pub default: Option<String>,
    /// True when the task cannot run honestly without a value (see the module docs).
    pub needed: bool,
}

impl EnvUse {
    /// `task.toml:12` (or the file alone when the line is unknown).
    pub fn evidence(&self) -> String {
        match self.line {
            Some(l) => format!("{}:{l}", self.file),
            None => self.file.clone(),
        }
    }
}

/// Host variables a compose file may read that never make a task unrunnable (`${HOME}` of a
/// harness's credentials mount): needed only when demanded with `${NAME:?err}`.
const HOST_VARIABLES: &[&str] = &[
    "HOME", "USER", "PWD", "UID", "GID", "PATH", "SHELL", "LANG", "TMPDIR", "HOSTNAME",
];

/// Every variable `task` names (see the module docs), in file order; `[solution] env` only when
/// `solution` (the oracle agent runs the solution). Unreadable files name nothing here: loading
/// the task reports them.
pub fn uses(task: &Task, solution: bool) -> Vec<EnvUse> {
    let mut out = Vec::new();
    let toml_text = std::fs::read_to_string(task.dir.join("task.toml")).unwrap_or_default();
    let c = &task.config;
    let mut tables = vec![
        (EnvTable::Environment, "environment", &c.environment.env),
        (EnvTable::Verifier, "verifier", &c.verifier.env),
    ];
    if solution {
        tables.push((EnvTable::Solution, "solution", &c.solution.env));
    }
    for (table, name, map) in tables {
        for (key, value) in map {
            for r in references(value, false) {
                out.push(EnvUse {
                    line: line_of(&toml_text, &format!("${{{}", r.name)),
                    place: format!("[{name}] env {key}"),
                    file: "task.toml".into(),
                    needed: r.default.is_none(),
                    variable: r.name,
                    table,
                    default: r.default,
                });
            }
        }
    }
    out.extend(compose_uses(task));
    out
}

/// The variables of the task's compose file.
fn compose_uses(task: &Task) -> Vec<EnvUse> {
    let env_dir = task.environment_dir();
    let Some(path) = compose::find(&env_dir) else {
        return Vec::new();
    };
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Vec::new();
    };
    let Ok(root) = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(&text) else {
        return Vec::new();
    };
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut found = Vec::new();
    walk_strings(&root, "", &mut |place, s| {
        for r in references(s, true) {
            if !HARBOR_VARIABLES.contains(&r.name.as_str()) {
                found.push((place.to_string(), r));
            }
        }
    });
    let mut named: HashMap<String, bool> = HashMap::new();
    found
        .into_iter()
        .map(|(place, r)| {
            let needed = r.demands
                || (r.default.is_none()
                    && !HOST_VARIABLES.contains(&r.name.as_str())
                    && *named
                        .entry(r.name.clone())
                        .or_insert_with(|| named_by_task(task, &path, &r.name)));
            EnvUse {
                line: line_of(&text, &format!("${{{}", r.name))
                    .or_else(|| line_of(&text, &format!("${}", r.name))),
                place: format!("{file_name} {}", place.trim_start_matches('.')),
                file: format!("environment/{file_name}"),
                variable: r.name,
                table: EnvTable::Compose,
                default: r.default,
                needed,
            }
        })
        .collect()
}

/// Calls `f(path, text)` for every string value (not keys) of a YAML tree.
fn walk_strings(v: &serde_yaml_ng::Value, path: &str, f: &mut impl FnMut(&str, &str)) {
    use serde_yaml_ng::Value;
    match v {
        Value::String(s) => f(path, s),
        Value::Sequence(items) => {
            for (i, item) in items.iter().enumerate() {
                walk_strings(item, &format!("{path}[{i}]"), f);
            }
        }
        Value::Mapping(m) => {
            for (k, item) in m {
                let key = k.as_str().unwrap_or("?");
                walk_strings(item, &format!("{path}.{key}"), f);
            }
        }
        Value::Tagged(t) => walk_strings(&t.value, path, f),
        _ => {}
    }
}

/// Largest file read when looking for a variable's name: data files are not scripts.
const MAX_SCANNED_FILE: u64 = 1024 * 1024;

/// True when a file of the task other than its compose file names `name` as a word: its
/// Dockerfiles and scripts, solution, tests, instruction or `task.toml` (skills left out).
fn named_by_task(task: &Task, compose_file: &Path, name: &str) -> bool {
    let skills = task.environment_dir().join("skills");
    walkdir::WalkDir::new(&task.dir)
        .into_iter()
        .filter_entry(|e| e.path() != skills)
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file() && e.path() != compose_file)
        .filter(|e| e.metadata().is_ok_and(|m| m.len() <= MAX_SCANNED_FILE))
        .filter_map(|e| std::fs::read(e.path()).ok())
        .any(|bytes| contains_word(&bytes, name.as_bytes()))
}

/// True when `word` occurs in `hay` not inside a longer name (`[A-Za-z0-9_]` on neither side).
fn contains_word(hay: &[u8], word: &[u8]) -> bool {
    if word.is_empty() || hay.len() < word.len() {
        return false;
    }
    let part = |c: Option<&u8>| c.is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_');
    (0..=hay.len() - word.len()).any(|i| {
        &hay[i..i + word.len()] == word
            && !part(i.checked_sub(1).and_then(|j| hay.get(j)))
            && !part(hay.get(i + word.len()))
    })
}

/// 1-based number of the first line of `text` holding `needle`.
fn line_of(text: &str, needle: &str) -> Option<usize> {
    text.lines().position(|l| l.contains(needle)).map(|i| i + 1)
}

/// A variable a task needs and the operator has not set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MissingEnv {
    /// Task id.
    pub task: String,
    /// The variable.
    pub variable: String,
    /// Every place naming it (`[solution] env OPENAI_API_KEY`, …).
    pub used_in: Vec<String>,
    /// The first place's file and line, `task.toml:12`.
    pub evidence: String,
    /// How to give it, when not the usual `--env NAME=VALUE` or an exported variable.
    pub hint: Option<String>,
}

impl MissingEnv {
    /// `OPENAI_API_KEY ([solution] env OPENAI_API_KEY, [verifier] env OPENAI_API_KEY)`.
    pub fn describe(&self) -> String {
        let mut s = format!("{} ({})", self.variable, self.used_in.join(", "));
        if let Some(h) = &self.hint {
            s.push_str(&format!("; {h}"));
        }
        s
    }
}

/// The variables `task` needs that `values` do not provide, one entry per variable (every place
/// it is used), in the order the task names them. `solution`: the oracle agent runs the task's
/// solution, so `[solution] env` counts.
pub fn missing(task: &Task, solution: bool, values: &EnvValues) -> Vec<MissingEnv> {
    let compose_vars = values.compose_variables(task);
    let mut out: Vec<MissingEnv> = Vec::new();
    for u in uses(task, solution).into_iter().filter(|u| u.needed) {
        let has = match u.table {
            EnvTable::Compose => compose_vars.get(&u.variable).is_some_and(|v| !v.is_empty()),
            _ => values.task_value(&u.variable).is_some(),
        };
        if has {
            continue;
        }
        match out.iter_mut().find(|m| m.variable == u.variable) {
            Some(m) => {
                if !m.used_in.contains(&u.place) {
                    m.used_in.push(u.place.clone());
                }
            }
            None => out.push(MissingEnv {
                task: task.id.clone(),
                evidence: u.evidence(),
                hint: None,
                variable: u.variable.clone(),
                used_in: vec![u.place.clone()],
            }),
        }
        if u.table == EnvTable::Compose
            && values.process
            && std::env::var(&u.variable).is_ok_and(|v| !v.is_empty())
            && let Some(m) = out.iter_mut().find(|m| m.variable == u.variable)
        {
            m.hint = Some(format!(
                "it is set here, but a compose file sees only what --env passes: add --env {}",
                u.variable
            ));
        }
    }
    out
}

/// [`missing`] over every task of a run (the preflight's and the run start's check).
pub fn missing_in(tasks: &[Task], solution: bool, values: &EnvValues) -> Vec<MissingEnv> {
    tasks
        .iter()
        .filter(|t| t.is_runnable())
        .flat_map(|t| missing(t, solution, values))
        .collect()
}

/// The refusal of a run whose tasks need values nobody set, naming each task, variable and
/// place, and the ways out.
pub fn refusal(missing: &[MissingEnv]) -> String {
    let mut by_task: Vec<(&str, Vec<String>)> = Vec::new();
    for m in missing {
        match by_task.iter_mut().find(|(t, _)| *t == m.task) {
            Some((_, v)) => v.push(m.describe()),
            None => by_task.push((&m.task, vec![m.describe()])),
        }
    }
    let tasks: Vec<String> = by_task
        .iter()
        .map(|(t, vars)| format!("{t} needs {}", vars.join(", ")))
        .collect();
    format!(
        "{} task(s) need environment values that are not set, so their trials could only score 0 for a reason \
         that is not the agent's: {}. Set them (--env NAME=VALUE, or export NAME and pass --env NAME), \
         leave those tasks out (--task), or run them anyway with --allow-missing-env (their trials are marked)",
        by_task.len(),
        tasks.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_follow_compose_forms() {
        let r = references("a-${KEY}-${D:-x}-${E-y}-${F:?no}-${G:+alt}-$$H-$BARE", true);
        let names: Vec<(&str, Option<&str>, bool)> = r
            .iter()
            .map(|r| (r.name.as_str(), r.default.as_deref(), r.demands))
            .collect();
        assert_eq!(
            names,
            [
                ("KEY", None, false),
                ("D", Some("x"), false),
                ("E", Some("y"), false),
                ("F", None, true),
                ("G", Some(""), false),
                ("BARE", None, false),
            ]
        );
        assert!(references("$BARE", false).is_empty());
        assert_eq!(references("${A:-${B}}", false).len(), 1);
        assert!(references("${UNCLOSED", false).is_empty());
    }

    #[test]
    fn env_templates() {
        let look = |n: &str| (n == "KEY").then(|| "secret".to_string());
        assert_eq!(expand("${KEY}", look), "secret");
        assert_eq!(expand("a-${MISSING:-dflt}-b", look), "a-dflt-b");
        assert_eq!(expand("plain", look), "plain");
        assert_eq!(expand("${UNCLOSED", look), "${UNCLOSED");
    }

    #[test]
    fn words_are_whole() {
        assert!(contains_word(b"export GH_TOKEN=1", b"GH_TOKEN"));
        assert!(!contains_word(b"MY_GH_TOKEN", b"GH_TOKEN"));
        assert!(!contains_word(b"GH_TOKENS", b"GH_TOKEN"));
        assert!(contains_word(b"GH_TOKEN", b"GH_TOKEN"));
    }

    fn task_at(dir: &Path, toml: &str, compose: Option<&str>, solve: &str) -> Task {
        std::fs::create_dir_all(dir.join("environment")).unwrap();
        std::fs::create_dir_all(dir.join("tests")).unwrap();
        std::fs::create_dir_all(dir.join("solution")).unwrap();
        std::fs::write(dir.join("task.toml"), toml).unwrap();
        std::fs::write(dir.join("instruction.md"), "do it").unwrap();
        std::fs::write(dir.join("environment/Dockerfile"), "FROM x\n").unwrap();
        std::fs::write(dir.join("tests/test.sh"), "#!/bin/sh\n").unwrap();
        std::fs::write(dir.join("solution/solve.sh"), solve).unwrap();
        if let Some(c) = compose {
            std::fs::write(dir.join("environment/docker-compose.yaml"), c).unwrap();
        }
        Task::load(dir, |_| None)
    }

    #[test]
    fn missing_values_name_task_variable_and_place() {
        let tmp = tempfile::tempdir().unwrap();
        let toml = "[verifier]\nenv = { KEY = \"${SS_TEST_KEY}\", OPT = \"${SS_TEST_OPT:-x}\" }\n\
                    [solution]\nenv = { KEY = \"${SS_TEST_KEY}\", TOKEN = \"${SS_TEST_TOKEN}\" }\n";
        let compose = "services:\n  main:\n    environment:\n      - GH=${SS_TEST_GH}\n      \
                       - VERTEX=${SS_TEST_VERTEX}\n      - CTX=${CONTEXT_DIR}\n    volumes:\n      \
                       - ${HOME}/.config:/root/.config:ro\n";
        let task = task_at(
            &tmp.path().join("t1"),
            toml,
            Some(compose),
            "#!/bin/sh\necho \"$SS_TEST_GH\"\n",
        );
        let none = EnvValues::only(&[]);
        let m = missing(&task, true, &none);
        let vars: Vec<&str> = m.iter().map(|m| m.variable.as_str()).collect();
        // The compose variable the solution names is needed; the harness's is not; Harbor's and
        // HOME never are.
        assert_eq!(vars, ["SS_TEST_KEY", "SS_TEST_TOKEN", "SS_TEST_GH"]);
        assert_eq!(
            m[0].used_in,
            ["[verifier] env KEY", "[solution] env KEY"],
            "{m:?}"
        );
        assert_eq!(m[0].evidence, "task.toml:2");
        assert_eq!(
            m[2].used_in,
            ["docker-compose.yaml services.main.environment[0]"]
        );
        assert_eq!(m[2].evidence, "environment/docker-compose.yaml:4");
        // Without the oracle, the solution's table does not count.
        assert_eq!(missing(&task, false, &none).len(), 2);
        // Given values satisfy them; an empty one does not.
        let given = [
            "SS_TEST_KEY=k".to_string(),
            "SS_TEST_TOKEN=".to_string(),
            "SS_TEST_GH=g".to_string(),
        ];
        let m = missing(&task, true, &EnvValues::only(&given));
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].variable, "SS_TEST_TOKEN");
        let text = refusal(&m);
        assert!(
            text.contains("t1 needs SS_TEST_TOKEN ([solution] env TOKEN)"),
            "{text}"
        );
        assert!(text.contains("--allow-missing-env"), "{text}");
        assert!(!text.contains("=k"), "values never appear: {text}");
    }

    #[test]
    fn environment_table_feeds_the_container_and_the_compose_file() {
        let tmp = tempfile::tempdir().unwrap();
        let toml = "[environment.env]\nAPI = \"${SS_TEST_API}\"\nMODE = \"fast\"\n";
        let compose = "services:\n  main:\n    environment:\n      - M=${MODE}\n";
        let task = task_at(
            &tmp.path().join("t2"),
            toml,
            Some(compose),
            "#!/bin/sh\necho $MODE\n",
        );
        let m = missing(&task, true, &EnvValues::only(&[]));
        assert_eq!(m.len(), 1, "{m:?}");
        assert_eq!(m[0].used_in, ["[environment] env API"]);
        let v = EnvValues::only(&["SS_TEST_API=a".to_string()]);
        assert!(missing(&task, true, &v).is_empty());
        assert_eq!(
            v.resolve(&task.config.environment.env),
            ["API=a", "MODE=fast"]
        );
        assert_eq!(v.compose_variables(&task)["MODE"], "fast");
    }
}
