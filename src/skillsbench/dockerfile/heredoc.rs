//! Dockerfile heredocs, and their rewrite into forms the classic builder accepts.
//!
//! BuildKit's Dockerfile frontend (Dockerfile reference, "Here-Documents"; `dockerfile/parser` and
//! `dispatchRun` in moby/buildkit) reads heredocs in `RUN`, `COPY` and `ADD`: a shell word
//! `[n]<<[-]WORD` (`WORD` possibly quoted) opens one, its body is the following lines up to a
//! line equal to the unquoted `WORD` (leading tabs stripped first with `<<-`). The classic builder
//! behind the Docker API's `/build` (and the BuildKit of Docker 20.10, whose frontend predates
//! heredocs) rejects them, so every heredoc is rewritten in the build's copy of the Dockerfile into
//! what BuildKit itself runs:
//!
//! - `RUN <<WORD` alone (one heredoc that is the whole command): BuildKit writes the body (tabs
//!   stripped for `<<-`) to an executable file and runs `SHELL + [that file]`, so a `#!` line picks
//!   the interpreter. Here the body goes into the build context, is `COPY`-ed (mode 0755) to
//!   [`HEREDOC_IMAGE_DIR`]`/<n>/<WORD>` and the `RUN` names that path.
//! - Any other `RUN` with heredocs (`RUN cmd <<'EOF'`, several heredocs, heredocs ending a `\`
//!   continued `RUN`): BuildKit hands the shell the command line followed, for each heredoc, by a
//!   newline, its body and its delimiter — the shell then applies its own heredoc rules (quoted
//!   delimiters not expanded, `<<-` tabs stripped). Here that same text is passed in exec form,
//!   `RUN ["<SHELL…>", "<text>"]`, with the stage's `SHELL` (default `/bin/sh -c`); a text too
//!   long for one Dockerfile line is `COPY`-ed and sourced (`. <file>`) by the same shell instead.
//! - `COPY`/`ADD <<WORD <dest>`: the body becomes a context file named `WORD` (mode 0644) copied in
//!   its place. A body the builder would expand (unquoted delimiter containing `$`) is refused.
//!
//! Scripts copied for the first form stay in the image under [`HEREDOC_IMAGE_DIR`].

use std::collections::HashMap;

use super::{Instruction, parse_instructions};

/// Folder of heredoc bodies inside the build context.
pub const HEREDOC_CONTEXT_DIR: &str = ".skillscope/heredoc";
/// Folder the `RUN <<WORD` scripts are copied to inside the image.
pub const HEREDOC_IMAGE_DIR: &str = "/.skillscope-heredoc";
/// Longest rewritten `RUN` line; Docker's Dockerfile parser reads lines of at most 64 KiB.
const MAX_LINE: usize = 60_000;

/// One heredoc opened by an instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heredoc {
    /// The delimiter, quotes removed (`EOF` for `<<'EOF'`).
    pub name: String,
    /// `<<-`: leading tabs are stripped from the body and the delimiter line.
    pub chomp: bool,
    /// The delimiter was unquoted: a shell (or `COPY`) would expand `$…` in the body.
    pub expand: bool,
    /// The lines between, each ending in `\n`, as written (tabs kept).
    pub body: String,
    /// False when the Dockerfile ended before the delimiter line.
    pub terminated: bool,
}

impl Heredoc {
    /// The body as a file gets it: leading tabs stripped from every line for `<<-`.
    pub fn content(&self) -> String {
        if !self.chomp {
            return self.body.clone();
        }
        self.body
            .split_inclusive('\n')
            .map(|l| l.trim_start_matches('\t'))
            .collect()
    }

    /// True when `line` ends this heredoc.
    pub fn is_end(&self, line: &str) -> bool {
        let l = line.strip_suffix('\r').unwrap_or(line);
        let l = if self.chomp {
            l.trim_start_matches('\t')
        } else {
            l
        };
        l == self.name
    }
}

/// Splits a command line into shell words at unquoted blanks, keeping quotes and backslashes as
/// written (`'a b'` stays one word with its quotes).
pub fn raw_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                cur.push(c);
                for q in chars.by_ref() {
                    cur.push(q);
                    if q == '\'' {
                        break;
                    }
                }
            }
            '"' => {
                in_word = true;
                cur.push(c);
                while let Some(q) = chars.next() {
                    cur.push(q);
                    match q {
                        '\\' => {
                            if let Some(n) = chars.next() {
                                cur.push(n);
                            }
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '\\' => {
                in_word = true;
                cur.push(c);
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            _ => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    words
}

/// Removes quotes and backslash escapes from one shell word.
pub fn unquote(word: &str) -> String {
    let mut out = String::new();
    let mut chars = word.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    out.push(q);
                }
            }
            '"' => {
                while let Some(q) = chars.next() {
                    match q {
                        '\\' => {
                            if let Some(n) = chars.next() {
                                out.push(n);
                            }
                        }
                        '"' => break,
                        _ => out.push(q),
                    }
                }
            }
            '\\' => {
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// The heredoc a raw shell word opens, as BuildKit reads it (`^\d*<<(-?)([^<]*)$` and a single
/// word after it): `(name, chomp, expand)`.
pub fn heredoc_of_word(word: &str) -> Option<(String, bool, bool)> {
    let rest = word.trim_start_matches(|c: char| c.is_ascii_digit());
    let rest = rest.strip_prefix("<<")?;
    let (chomp, rest) = match rest.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, rest),
    };
    if rest.is_empty() || rest.contains('<') || raw_words(rest).len() != 1 {
        return None;
    }
    let name = unquote(rest);
    if name.is_empty() {
        return None;
    }
    let expand = !rest.contains(['\'', '"', '\\']);
    Some((name, chomp, expand))
}

/// Heredocs a `RUN`/`COPY`/`ADD` command line opens, in order: `(name, chomp, expand)`.
pub fn heredocs_in(command: &str) -> Vec<(String, bool, bool)> {
    raw_words(command)
        .iter()
        .filter_map(|w| heredoc_of_word(w))
        .collect()
}

/// True for the instructions whose heredocs BuildKit reads.
pub fn takes_heredocs(keyword: &str) -> bool {
    matches!(keyword, "RUN" | "COPY" | "ADD")
}

/// A file the rewrite adds to the build context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    /// Path inside the context (under [`HEREDOC_CONTEXT_DIR`]).
    pub path: String,
    /// Contents.
    pub data: Vec<u8>,
    /// Unix mode.
    pub mode: u32,
}

/// The Dockerfile without heredocs, the files it now copies, and what changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeredocRewrite {
    /// New Dockerfile text.
    pub text: String,
    /// Files to add to the build context.
    pub files: Vec<ContextFile>,
    /// Human-readable changes, one per rewritten instruction.
    pub changes: Vec<String>,
}

/// Rewrites every heredoc of `text` (see the module docs). A Dockerfile without heredocs comes
/// back unchanged.
///
/// # Errors
/// One message per heredoc that cannot be rewritten (naming its line): a `COPY`/`ADD` body that
/// would be expanded, a delimiter that is not a plain file name, or a heredoc without its end.
pub fn rewrite_heredocs(text: &str) -> Result<HeredocRewrite, Vec<String>> {
    let lines: Vec<&str> = text.lines().collect();
    let default_shell = vec!["/bin/sh".to_string(), "-c".to_string()];
    let mut stage_shells: HashMap<String, Vec<String>> = HashMap::new();
    let mut stage: Option<String> = None;
    let mut shell = default_shell.clone();
    let mut out = String::with_capacity(text.len());
    let mut files = Vec::new();
    let mut changes = Vec::new();
    let mut errors = Vec::new();
    let mut next_line = 0;
    for ins in parse_instructions(text) {
        match ins.keyword.as_str() {
            "FROM" => {
                if let Some(name) = stage.take() {
                    stage_shells.insert(name, shell.clone());
                }
                let words: Vec<&str> = ins
                    .args
                    .split_whitespace()
                    .filter(|w| !w.starts_with("--"))
                    .collect();
                let base = words.first().map(|w| w.to_ascii_lowercase());
                shell = base
                    .and_then(|b| stage_shells.get(&b).cloned())
                    .unwrap_or_else(|| default_shell.clone());
                if words.len() >= 3 && words[1].eq_ignore_ascii_case("as") {
                    stage = Some(words[2].to_ascii_lowercase());
                }
            }
            "SHELL" => {
                if let Ok(v) = serde_json::from_str::<Vec<String>>(&ins.args) {
                    shell = v;
                }
            }
            _ => {}
        }
        if ins.heredocs.is_empty() {
            continue;
        }
        let line_no = ins.start + 1;
        if let Some(h) = ins.heredocs.iter().find(|h| !h.terminated) {
            errors.push(format!(
                "line {line_no}: heredoc <<{} has no closing `{}` line",
                h.name, h.name
            ));
            continue;
        }
        let new = match ins.keyword.as_str() {
            "RUN" => Ok(rewrite_run(&ins, &shell, files.len(), &mut files)),
            _ => rewrite_copy(&ins, files.len(), &mut files),
        };
        match new {
            Ok((new_lines, what)) => {
                for l in &lines[next_line..ins.start] {
                    out.push_str(l);
                    out.push('\n');
                }
                out.push_str(&format!(
                    "# skillscope: line {line_no} rewritten without heredocs for the classic builder\n"
                ));
                for l in new_lines {
                    out.push_str(&l);
                    out.push('\n');
                }
                next_line = ins.end;
                changes.push(format!("line {line_no}: {what}"));
            }
            Err(e) => errors.push(format!("line {line_no}: {e}")),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    if changes.is_empty() {
        return Ok(HeredocRewrite {
            text: text.to_string(),
            files,
            changes,
        });
    }
    for l in &lines[next_line..] {
        out.push_str(l);
        out.push('\n');
    }
    Ok(HeredocRewrite {
        text: out,
        files,
        changes,
    })
}

/// Leading `--flag` words of an instruction's arguments, and the rest.
fn split_flags(command: &str) -> (Vec<String>, String) {
    let mut flags = Vec::new();
    let mut rest = command.trim_start();
    while rest.starts_with("--") {
        let (flag, tail) = rest.split_once([' ', '\t']).unwrap_or((rest, ""));
        flags.push(flag.to_string());
        rest = tail.trim_start();
    }
    (flags, rest.to_string())
}

/// A delimiter usable as a file name.
fn file_name(name: &str) -> String {
    if !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        name.to_string()
    } else {
        "heredoc".to_string()
    }
}

fn rewrite_run(
    ins: &Instruction,
    shell: &[String],
    n: usize,
    files: &mut Vec<ContextFile>,
) -> (Vec<String>, String) {
    let (flags, cmd) = split_flags(&ins.command);
    let prefix = std::iter::once("RUN".to_string())
        .chain(flags)
        .collect::<Vec<_>>()
        .join(" ");
    let words = raw_words(&cmd);
    let mut copy_in = |data: Vec<u8>, name: &str| {
        let rel = format!("{}/{n}/{}", HEREDOC_CONTEXT_DIR, file_name(name));
        let dest = format!("{}/{n}/{}", HEREDOC_IMAGE_DIR, file_name(name));
        files.push(ContextFile {
            path: rel.clone(),
            data,
            mode: 0o755,
        });
        (format!("COPY {rel} {dest}"), dest)
    };
    if ins.heredocs.len() == 1 && words.len() == 1 && heredoc_of_word(&words[0]).is_some() {
        let doc = &ins.heredocs[0];
        let (copy, dest) = copy_in(doc.content().into_bytes(), &doc.name);
        return (
            vec![copy, format!("{prefix} {dest}")],
            format!(
                "RUN <<{} runs its body as a script copied to {dest}",
                doc.name
            ),
        );
    }
    let mut script = cmd;
    for h in &ins.heredocs {
        script.push('\n');
        script.push_str(&h.body);
        script.push_str(&h.name);
    }
    let exec = |last: String| {
        let mut argv: Vec<String> = shell.to_vec();
        argv.push(last);
        serde_json::to_string(&argv).expect("strings serialize")
    };
    let names: Vec<&str> = ins.heredocs.iter().map(|h| h.name.as_str()).collect();
    let line = format!("{prefix} {}", exec(script.clone()));
    if line.len() <= MAX_LINE {
        return (
            vec![line],
            format!(
                "RUN with heredoc(s) {} passed whole to {} in exec form",
                names.join(", "),
                shell.join(" ")
            ),
        );
    }
    script.push('\n');
    let (copy, dest) = copy_in(script.into_bytes(), "script");
    (
        vec![copy, format!("{prefix} {}", exec(format!(". {dest}")))],
        format!(
            "RUN with heredoc(s) {} copied to {dest} and sourced by {}",
            names.join(", "),
            shell.join(" ")
        ),
    )
}

fn rewrite_copy(
    ins: &Instruction,
    n: usize,
    files: &mut Vec<ContextFile>,
) -> Result<(Vec<String>, String), String> {
    let (flags, rest) = split_flags(&ins.command);
    let mut docs = ins.heredocs.iter();
    let mut words = vec![ins.keyword.clone()];
    words.extend(flags);
    let mut names = Vec::new();
    for w in raw_words(&rest) {
        if heredoc_of_word(&w).is_none() {
            words.push(w);
            continue;
        }
        let Some(h) = docs.next() else {
            return Err("heredoc without a body".into());
        };
        let doc = h;
        if doc.expand && doc.body.contains('$') {
            return Err(format!(
                "{} <<{} would expand variables in its body; quote the delimiter (<<'{}')",
                ins.keyword, doc.name, doc.name
            ));
        }
        if file_name(&doc.name) != doc.name {
            return Err(format!(
                "{} <<{}: the delimiter is not a plain file name",
                ins.keyword, doc.name
            ));
        }
        let rel = format!("{HEREDOC_CONTEXT_DIR}/{n}/{}", doc.name);
        files.push(ContextFile {
            path: rel.clone(),
            data: doc.content().into_bytes(),
            mode: 0o644,
        });
        names.push(doc.name.clone());
        words.push(rel);
    }
    Ok((
        vec![words.join(" ")],
        format!(
            "{} heredoc(s) {} written into the build context",
            ins.keyword,
            names.join(", ")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_delimiters() {
        assert_eq!(
            raw_words(r#"python3 - <<'PY' "a b" c\ d"#),
            vec!["python3", "-", "<<'PY'", "\"a b\"", "c\\ d"]
        );
        assert_eq!(
            heredoc_of_word("<<EOF"),
            Some(("EOF".to_string(), false, true))
        );
        assert_eq!(
            heredoc_of_word("<<-'EOF'"),
            Some(("EOF".to_string(), true, false))
        );
        assert_eq!(
            heredoc_of_word("2<<\"X\""),
            Some(("X".to_string(), false, false))
        );
        assert_eq!(heredoc_of_word("<<"), None);
        assert_eq!(heredoc_of_word("a<<EOF"), None);
        assert_eq!(heredoc_of_word("<<<EOF"), None);
        // Quoted words open nothing.
        assert!(heredocs_in(r#"echo "<<EOF" '<<X'"#).is_empty());
        assert_eq!(heredocs_in("cat <<A <<-B").len(), 2);
    }

    #[test]
    fn dockerfile_without_heredocs_is_unchanged() {
        let df = "FROM x\nRUN echo 'a << b'\n";
        let r = rewrite_heredocs(df).unwrap();
        assert_eq!(r.text, df);
        assert!(r.files.is_empty() && r.changes.is_empty());
    }

    #[test]
    fn run_forms() {
        let df = "FROM x\nSHELL [\"/bin/bash\", \"-o\", \"pipefail\", \"-c\"]\nRUN <<'EOF'\nset -e\necho $HOME\nEOF\nRUN python3 - <<'PY'\nprint(1)\nPY\nRUN <<-EOF\n\techo hi\n\tEOF\nRUN mkdir -p /a && \\\n    cd /a && \\\n    cat > f <<'POM'\n<x/>\nPOM\nCMD [\"sh\"]\n";
        let r = rewrite_heredocs(df).unwrap();
        let lines: Vec<&str> = r.text.lines().collect();
        assert!(lines.contains(&"COPY .skillscope/heredoc/0/EOF /.skillscope-heredoc/0/EOF"));
        assert!(lines.contains(&"RUN /.skillscope-heredoc/0/EOF"));
        assert_eq!(r.files[0].data, b"set -e\necho $HOME\n");
        assert_eq!(r.files[0].mode, 0o755);
        assert!(
            lines.contains(
                &r#"RUN ["/bin/bash","-o","pipefail","-c","python3 - <<'PY'\nprint(1)\nPY"]"#
            ),
            "{}",
            r.text
        );
        // <<- alone: tabs stripped from the script.
        assert_eq!(r.files[1].data, b"echo hi\n");
        // Continued RUN: the lines concatenated as BuildKit does, then the heredoc.
        assert!(
            lines.contains(
                &r#"RUN ["/bin/bash","-o","pipefail","-c","mkdir -p /a &&     cd /a &&     cat > f <<'POM'\n<x/>\nPOM"]"#
            ),
            "{}",
            r.text
        );
        assert!(lines.last() == Some(&"CMD [\"sh\"]"));
        assert!(!r.text.contains("\nPY\n") && !r.text.contains("\nPOM\n"));
        assert_eq!(r.changes.len(), 4, "{:?}", r.changes);
    }

    #[test]
    fn stage_shells_follow_from() {
        let df = "FROM x AS base\nSHELL [\"/bin/bash\", \"-c\"]\nFROM y\nRUN cat <<E\nE\nFROM base\nRUN cat <<E\nE\n";
        let r = rewrite_heredocs(df).unwrap();
        assert!(
            r.text.contains(r#"RUN ["/bin/sh","-c","cat <<E\nE"]"#),
            "{}",
            r.text
        );
        assert!(
            r.text.contains(r#"RUN ["/bin/bash","-c","cat <<E\nE"]"#),
            "{}",
            r.text
        );
    }

    #[test]
    fn copy_heredocs() {
        let df = "FROM x\nCOPY <<'A' <<B /etc/\nx $y\nA\nplain\nB\nCOPY <<C /c\n$HOME\nC\n";
        let e = rewrite_heredocs(df).unwrap_err();
        assert_eq!(e.len(), 1);
        assert!(e[0].starts_with("line 7:"), "{e:?}");
        let ok = rewrite_heredocs("FROM x\nCOPY --chown=1 <<'A' <<B /etc/\nx $y\nA\nplain\nB\n")
            .unwrap();
        assert!(
            ok.text
                .contains("COPY --chown=1 .skillscope/heredoc/0/A .skillscope/heredoc/0/B /etc/")
        );
        assert_eq!(ok.files[1].data, b"plain\n");
    }

    #[test]
    fn unterminated_heredoc_is_an_error() {
        let e = rewrite_heredocs("FROM x\nRUN <<EOF\necho\n").unwrap_err();
        assert!(e[0].contains("no closing"), "{e:?}");
    }
}
