//! gitignore patterns as the Python `pathspec` package (1.x) compiles and matches them, in its two
//! dialects: `PathSpec.from_lines("gitignore", …)` ([`Dialect::Basic`]: the documented rules, the
//! last matching pattern wins for each path on its own) and `GitIgnoreSpec` ([`Dialect::Git`]:
//! git's edge cases — a pattern matching a path through one of its folders ranks below one
//! matching the path itself, invalid ranges drop the pattern, a lone `/` matches nothing).
//!
//! Harbor 0.26 filters a task's files with the first (its root `.gitignore`, or its default
//! ignores) and its `.harborignore` files with the second; the task digest must match Harbor's
//! byte for byte, so every rule below follows `pathspec/patterns/gitignore/{base,basic,spec}.py`
//! and `_backends/simple/{pathspec,gitignore}.py` (pathspec 1.1.1, the version Harbor 0.26.0
//! installs): a pattern becomes a regular expression searched in the path relative to the task
//! (`/`-separated; a folder's path ends with `/` where Harbor adds one).

use regex::Regex;

/// Which of pathspec's gitignore implementations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dialect {
    /// `GitIgnoreBasicPattern` in a plain `PathSpec`.
    Basic,
    /// `GitIgnoreSpecPattern` in a `GitIgnoreSpec`.
    Git,
}

/// One compiled pattern: its expression and whether a match excludes (`true`, a plain pattern)
/// or re-includes (`false`, a `!` pattern).
#[derive(Debug, Clone)]
struct Pattern {
    regex: Regex,
    include: bool,
}

/// A compiled list of patterns.
#[derive(Debug, Clone)]
pub(super) struct Spec {
    dialect: Dialect,
    patterns: Vec<Pattern>,
}

/// The regex group a [`Dialect::Git`] pattern sets when it matched through a folder.
const DIR_MARK: &str = "ps_d";

impl Spec {
    /// Compiles `lines` (one pattern each; blank lines and `#` comments are no-ops).
    ///
    /// # Errors
    /// The pattern and why, for a pattern pathspec refuses too (a trailing backslash, `!` alone).
    pub(super) fn from_lines<S: AsRef<str>>(dialect: Dialect, lines: &[S]) -> Result<Spec, String> {
        let mut patterns = Vec::new();
        for line in lines {
            let line = line.as_ref();
            if let Some((source, include)) = pattern_to_regex(dialect, line)? {
                let regex =
                    Regex::new(&source).map_err(|e| format!("invalid pattern {line:?}: {e}"))?;
                patterns.push(Pattern { regex, include });
            }
        }
        Ok(Spec { dialect, patterns })
    }

    /// What the patterns say of `path` (relative, `/`-separated): `Some(true)` excluded,
    /// `Some(false)` re-included by a `!` pattern, `None` no pattern matched (`check_file`'s
    /// `include`).
    pub(super) fn check(&self, path: &str) -> Option<bool> {
        let path = path
            .strip_prefix('/')
            .or_else(|| path.strip_prefix("./"))
            .unwrap_or(path);
        match self.dialect {
            // The last matching pattern wins.
            Dialect::Basic => self
                .patterns
                .iter()
                .rev()
                .find(|p| p.regex.is_match(path))
                .map(|p| p.include),
            // From the last pattern back: the first that matches the path itself wins; else
            // the last that matched it through a folder.
            Dialect::Git => {
                let mut out = None;
                for p in self.patterns.iter().rev() {
                    let Some(c) = p.regex.captures(path) else {
                        continue;
                    };
                    if c.name(DIR_MARK).is_some() {
                        if out.is_none() {
                            out = Some(p.include);
                        }
                    } else {
                        return Some(p.include);
                    }
                }
                out
            }
        }
    }

    /// True when `path` is excluded (`match_file`).
    pub(super) fn matches(&self, path: &str) -> bool {
        self.check(path) == Some(true)
    }
}

/// Python's `str.isspace()` for the characters `rstrip()` removes.
fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// Python's `str.splitlines()`: lines split at `\n`, `\r\n`, `\r`, `\v`, `\f`, `\x1c`–`\x1e`,
/// `\x85`, U+2028 and U+2029, without their ends.
pub(super) fn split_lines(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let end = match c {
            '\r' => {
                if let Some((_, '\n')) = chars.peek() {
                    chars.next();
                    i + 2
                } else {
                    i + 1
                }
            }
            '\n' | '\x0b' | '\x0c' | '\x1c' | '\x1d' | '\x1e' | '\u{85}' | '\u{2028}'
            | '\u{2029}' => i + c.len_utf8(),
            _ => continue,
        };
        out.push(&text[start..i]);
        start = end;
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// `pattern_to_regex`: the expression of one line and whether it excludes, `None` for a no-op.
fn pattern_to_regex(dialect: Dialect, line: &str) -> Result<Option<(String, bool)>, String> {
    let invalid = || format!("invalid gitignore pattern {line:?}");
    let mut p: &str = line;
    if !p.ends_with("\\ ") {
        p = p.trim_end_matches(is_py_space);
    }
    if p.is_empty() || p.starts_with('#') {
        return Ok(None);
    }
    if dialect == Dialect::Git && p == "/" {
        return Ok(None);
    }
    let include = !p.starts_with('!');
    if !include {
        p = &p[1..];
    }
    let mut segs: Vec<&str> = p.split('/').collect();
    let mut is_dir_pattern = segs.last().is_some_and(|s| s.is_empty());
    if dialect == Dialect::Basic && p == "/" {
        is_dir_pattern = false;
    }
    let regex = match normalize(dialect, is_dir_pattern, &mut segs).ok_or_else(invalid)? {
        Normalized::Override(r) => r.to_string(),
        Normalized::Segments => match translate(dialect, is_dir_pattern, &segs) {
            Ok(r) => r,
            Err(GlobError::Range) if dialect == Dialect::Git => return Ok(None),
            Err(_) => return Err(invalid()),
        },
    };
    Ok(Some((regex, include)))
}

enum Normalized {
    /// A fixed expression replaces the translation.
    Override(&'static str),
    /// Translate the (normalized) segments.
    Segments,
}

/// `__normalize_segments`: `None` when the pattern normalizes to nothing.
fn normalize(dialect: Dialect, is_dir_pattern: bool, segs: &mut Vec<&str>) -> Option<Normalized> {
    if segs[0].is_empty() {
        segs.remove(0);
    } else if (segs.len() == 1 || (segs.len() == 2 && segs[1].is_empty())) && segs[0] != "**" {
        segs.insert(0, "**");
    }
    if segs.is_empty() {
        return None;
    }
    let last = segs.len() - 1;
    if segs[last].is_empty() {
        segs[last] = "**";
    }
    let mut i = segs.len() - 1;
    while i > 0 {
        if segs[i - 1] == "**" && segs[i] == "**" {
            segs.remove(i);
        }
        i -= 1;
    }
    let git = dialect == Dialect::Git;
    let dir_mark = "(?P<ps_d>/)";
    Some(match segs.as_slice() {
        ["**"] if is_dir_pattern => Normalized::Override(if git { dir_mark } else { "/" }),
        ["**"] | ["**", "*"] => Normalized::Override("."),
        ["**", "*", "**"] if git && is_dir_pattern => Normalized::Override(dir_mark),
        ["**", "*", "**"] => Normalized::Override("/"),
        _ => Normalized::Segments,
    })
}

/// Python's `$` without `re.MULTILINE`: the end, or just before a newline that ends the text.
const END: &str = r"\n?\z";

/// `__translate_segments`.
fn translate(dialect: Dialect, is_dir_pattern: bool, segs: &[&str]) -> Result<String, GlobError> {
    let git = dialect == Dialect::Git;
    let mut out = String::new();
    let mut need_slash = false;
    let end = segs.len() - 1;
    for (i, seg) in segs.iter().enumerate() {
        if *seg == "**" {
            if i == 0 {
                out.push_str("^(?:.+/)?");
            } else if i < end {
                out.push_str("(?:/.+)?");
                need_slash = true;
            } else if git && is_dir_pattern {
                out.push_str("(?P<ps_d>/)");
            } else {
                out.push('/');
            }
            continue;
        }
        if i == 0 {
            out.push('^');
        }
        if need_slash {
            out.push('/');
        }
        if *seg == "*" {
            out.push_str("[^/]+");
        } else {
            out.push_str(&segment_glob(seg, git)?);
        }
        if i == end {
            if git {
                out.push_str(&format!("(?:(?P<ps_d>/)|{END})"));
            } else if *seg == "*" {
                out.push_str(&format!("/?{END}"));
            } else {
                out.push_str(&format!("(?:/|{END})"));
            }
        }
        need_slash = true;
    }
    Ok(out)
}

/// Why a segment's glob does not translate.
#[derive(Debug)]
enum GlobError {
    /// An unclosed `[` (git drops the pattern; the basic dialect reads it as a literal).
    Range,
    /// A trailing backslash.
    Escape,
}

/// `_translate_segment_glob`: `*` and `?` within a segment, bracket expressions (`!` or `^`
/// negates), backslash escapes. An unclosed `[` is a literal in the basic dialect and an error
/// in git's (`raise_range`).
fn segment_glob(pattern: &str, raise_range: bool) -> Result<String, GlobError> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::new();
    let mut escape = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if escape {
            escape = false;
            out.push_str(&regex::escape(&c.to_string()));
        } else if c == '\\' {
            escape = true;
        } else if c == '*' {
            out.push_str("[^/]*");
        } else if c == '?' {
            out.push_str("[^/]");
        } else if c == '[' {
            let mut j = i;
            if j < chars.len() && (chars[j] == '!' || chars[j] == '^') {
                j += 1;
            }
            if j < chars.len() && chars[j] == ']' {
                j += 1;
            }
            while j < chars.len() && chars[j] != ']' {
                j += 1;
            }
            if j < chars.len() {
                j += 1;
                let mut expr = String::from("[");
                if chars[i] == '!' || chars[i] == '^' {
                    expr.push('^');
                    i += 1;
                }
                // The class as written (closing bracket included); a backslash is a literal
                // backslash. Characters the `regex` crate reads as class operators (`[`, `&`,
                // `~`) are escaped, which Python's `re` reads as literals anyway.
                for &k in &chars[i..j] {
                    match k {
                        '\\' => expr.push_str(r"\\"),
                        '[' | '&' | '~' => {
                            expr.push('\\');
                            expr.push(k);
                        }
                        _ => expr.push(k),
                    }
                }
                out.push_str(&expr);
                i = j;
            } else if raise_range {
                return Err(GlobError::Range);
            } else {
                out.push_str(r"\[");
            }
        } else {
            out.push_str(&regex::escape(&c.to_string()));
        }
    }
    if escape {
        return Err(GlobError::Escape);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(lines: &[&str]) -> Spec {
        Spec::from_lines(Dialect::Basic, lines).unwrap()
    }
    fn git(lines: &[&str]) -> Spec {
        Spec::from_lines(Dialect::Git, lines).unwrap()
    }

    #[test]
    fn basic_patterns_match_as_pathspec_does() {
        // Harbor's default ignores.
        let d = basic(&["__pycache__/", "*.pyc", ".DS_Store", "*.swp", "*.swo", "*~"]);
        for (path, excluded) in [
            ("environment/__pycache__/a.pyc", true),
            ("environment/__pycache__/x.txt", true),
            ("environment/x.pyc", true),
            ("environment/.DS_Store", true),
            ("a.swp", true),
            ("environment/b~", true),
            ("environment/Dockerfile", false),
            ("environment/pycache/a.py", false),
        ] {
            assert_eq!(d.matches(path), excluded, "{path}");
        }
        // Anchoring, folders, negation of a file in an excluded folder (pathspec, not git).
        let s = basic(&[
            "/instruction.md",
            "build/",
            "!environment/build/keep.txt",
            "Dockerfile",
        ]);
        assert!(s.matches("instruction.md"));
        assert!(!s.matches("tests/instruction.md"));
        assert!(s.matches("environment/build/drop.txt"));
        assert!(!s.matches("environment/build/keep.txt"));
        assert!(s.matches("environment/sub/Dockerfile"));
        // `*` ignores everything; a bare name matches a whole folder; escapes; comments.
        assert!(basic(&["*"]).matches("task.toml"));
        assert!(basic(&["tests"]).matches("tests/test.sh"));
        assert!(basic(&[r"\#x"]).matches("environment/#x"));
        assert!(!basic(&["#x"]).matches("#x"));
        // A lone `/` is `**` in the basic dialect and nothing in git's.
        assert!(basic(&["/"]).matches("a"));
        assert_eq!(git(&["/"]).check("a"), None);
        // A bare `!` normalizes to nothing: pathspec refuses it.
        assert!(Spec::from_lines(Dialect::Basic, &["!"]).is_err());
        assert!(Spec::from_lines(Dialect::Basic, &["a\\"]).is_err());
    }

    #[test]
    fn git_dialect_ranks_file_matches_above_folder_matches() {
        // pathspec's reversed check: a match of the path itself wins over a match through a
        // folder, whatever their order.
        let s = git(&["fixtures/", "!fixtures/keep"]);
        assert_eq!(s.check("fixtures/keep"), Some(false));
        assert_eq!(s.check("fixtures/"), Some(true));
        let s = git(&["!fixtures/keep", "fixtures/"]);
        assert_eq!(s.check("fixtures/keep"), Some(false));
        // Invalid ranges drop the pattern in git's dialect, are literal in the basic one.
        assert_eq!(git(&["a[b"]).check("a[b"), None);
        assert!(basic(&["a[b"]).matches("a[b"));
        assert!(git(&["[!a]x"]).matches("bx"));
        assert!(!git(&["[!a]x"]).matches("ax"));
    }

    #[test]
    fn lines_split_as_python_splits_them() {
        assert_eq!(
            split_lines("a\r\nb\rc\nd\x0be\u{2028}f\n"),
            ["a", "b", "c", "d", "e", "f"]
        );
        assert_eq!(split_lines(""), Vec::<&str>::new());
        assert_eq!(split_lines("\n\n"), ["", ""]);
    }
}
