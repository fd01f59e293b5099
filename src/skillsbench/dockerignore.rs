//! `.dockerignore` matching as Docker applies it to a build context.
//!
//! Source of the rules: the Docker build reference (".dockerignore files") and the matcher the
//! Docker CLI uses (moby/patternmatcher): one pattern per line, `#` comment lines and blank lines
//! skipped, surrounding blanks trimmed, `!` marks an exception, each pattern is cleaned like Go's
//! `filepath.Clean` and a leading `/` dropped, so patterns are anchored at the context root. Globs
//! follow Go's `filepath.Match` (`*` and `?` never cross `/`, `[…]` classes, `\` escapes) plus `**`
//! for any number of folders. A pattern that matches a folder also matches everything inside it;
//! the last pattern that matches a path decides. The globs themselves are compiled by `globset`.

use globset::{GlobBuilder, GlobMatcher};

/// A parsed `.dockerignore`.
#[derive(Debug, Clone, Default)]
pub struct DockerIgnore {
    patterns: Vec<Pattern>,
}

#[derive(Debug, Clone)]
struct Pattern {
    glob: GlobMatcher,
    /// `!pattern`: re-includes what earlier patterns excluded.
    exception: bool,
    /// Number of `/`-separated parts, for matching a path's parent folders.
    parts: usize,
}

/// Go's `filepath.Clean` for slash-separated relative patterns: repeated `/`, `.` parts and
/// `dir/..` pairs removed.
fn clean(p: &str) -> String {
    let rooted = p.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|l| *l != "..") {
                    out.pop();
                } else if !rooted {
                    out.push("..");
                }
            }
            _ => out.push(part),
        }
    }
    let joined = out.join("/");
    if rooted {
        format!("/{joined}")
    } else if joined.is_empty() {
        ".".to_string()
    } else {
        joined
    }
}

impl DockerIgnore {
    /// Parses the text of a `.dockerignore` file.
    ///
    /// # Errors
    /// One message per pattern that is not a valid glob, naming its line.
    pub fn parse(text: &str) -> Result<DockerIgnore, Vec<String>> {
        let mut patterns = Vec::new();
        let mut errors = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (exception, pat) = match line.strip_prefix('!') {
                Some(rest) => (true, rest.trim()),
                None => (false, line),
            };
            let mut pat = clean(pat);
            if pat.len() > 1 && pat.starts_with('/') {
                pat.remove(0);
            }
            let built = GlobBuilder::new(&pat)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                // `**` inside a part (`a**b`) is no recursive match in Go either: two stars.
                .or_else(|_| {
                    GlobBuilder::new(&pat.replace("**", "*"))
                        .literal_separator(true)
                        .backslash_escape(true)
                        .build()
                });
            match built {
                Ok(g) => patterns.push(Pattern {
                    glob: g.compile_matcher(),
                    exception,
                    parts: pat.split('/').count(),
                }),
                Err(e) => errors.push(format!("line {}: {line:?}: {e}", n + 1)),
            }
        }
        if errors.is_empty() {
            Ok(DockerIgnore { patterns })
        } else {
            Err(errors)
        }
    }

    /// True when `rel` (a `/`-separated path relative to the context root) is left out of the
    /// context: the last pattern matching it or one of its parent folders is not an exception.
    pub fn excludes(&self, rel: &str) -> bool {
        let rel = rel.trim_start_matches("./");
        let parts: Vec<&str> = rel.split('/').collect();
        let mut excluded = false;
        for p in &self.patterns {
            let mut hit = p.glob.is_match(rel);
            if !hit && parts.len() > 1 && p.parts < parts.len() {
                hit = p.glob.is_match(parts[..p.parts].join("/"));
            }
            if hit {
                excluded = !p.exception;
            }
        }
        excluded
    }

    /// True when some exception pattern exists, so an excluded folder may still hold files to
    /// keep (the folder must then be walked).
    pub fn has_exceptions(&self) -> bool {
        self.patterns.iter().any(|p| p.exception)
    }

    /// True when there are no patterns.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn di(text: &str) -> DockerIgnore {
        DockerIgnore::parse(text).unwrap()
    }

    #[test]
    fn anchored_at_the_root_like_docker() {
        let d = di("# comment\n*.md\n/secret.txt\ntemp?\n");
        assert!(d.excludes("README.md"));
        assert!(!d.excludes("docs/README.md"), "`*` does not cross folders");
        assert!(d.excludes("secret.txt"));
        assert!(!d.excludes("sub/secret.txt"));
        assert!(d.excludes("temp1"));
        assert!(
            d.excludes("temp1/inside/file"),
            "a matched folder excludes its contents"
        );
        assert!(!d.excludes("main.py"));
    }

    #[test]
    fn double_star_and_exceptions() {
        let d = di("**/*.log\ndata\n!data/keep.csv\n./build/../cache\n");
        assert!(d.excludes("a.log") && d.excludes("x/y/z.log"));
        assert!(d.excludes("data/big.bin"));
        assert!(!d.excludes("data/keep.csv"));
        assert!(d.excludes("cache/x"));
        assert!(d.has_exceptions());
        // Last match wins.
        let d = di("!a.txt\n*.txt\n");
        assert!(d.excludes("a.txt"));
    }

    #[test]
    fn bad_pattern_is_named() {
        let e = DockerIgnore::parse("ok\n[unclosed\n").unwrap_err();
        assert!(e[0].starts_with("line 2:"), "{e:?}");
    }

    #[test]
    fn clean_matches_go() {
        assert_eq!(clean("./a//b/../c/"), "a/c");
        assert_eq!(clean("/x"), "/x");
        assert_eq!(clean("."), ".");
    }
}
