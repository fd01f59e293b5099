//! The command line that resumes a run: this process's own arguments, secrets dropped.

use std::path::PathBuf;

/// The command line that resumes the run this process runs: this process's own arguments (with
/// values of `--env NAME=VALUE` dropped, which may be secrets, and `--detach` dropped), run in
/// the current folder, with `--run NAME` added when the name was derived.
pub fn resume_command(run: &str) -> String {
    let mut args: Vec<String> = std::env::args().collect();
    if let Some(first) = args.first_mut() {
        let p = PathBuf::from(&*first);
        if p.components().count() > 1
            && p.is_relative()
            && let Ok(abs) = std::fs::canonicalize(&p)
        {
            *first = abs.display().to_string();
        }
    }
    let mut out: Vec<String> = Vec::new();
    let mut it = args.into_iter().peekable();
    let mut has_run = false;
    while let Some(a) = it.next() {
        if a == "--detach" {
            continue;
        }
        if a == "--env" {
            out.push(a);
            if let Some(v) = it.next() {
                out.push(v.split('=').next().unwrap_or_default().to_string());
            }
            continue;
        }
        if let Some(v) = a.strip_prefix("--env=") {
            out.push(format!("--env={}", v.split('=').next().unwrap_or_default()));
            continue;
        }
        has_run |= a == "--run" || a.starts_with("--run=");
        out.push(a);
    }
    if !has_run {
        out.push("--run".into());
        out.push(run.into());
    }
    let cwd = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|_| ".".into());
    let quoted: Vec<String> = out.iter().map(|a| quote(a)).collect();
    format!("cd {} && {}", quote(&cwd), quoted.join(" "))
}

/// A word as the shell reads it back.
fn quote(word: &str) -> String {
    shlex::try_quote(word)
        .map(|q| q.into_owned())
        .unwrap_or_else(|_| word.replace('\0', ""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_round_trips_through_the_shell() {
        assert_eq!(quote("plain-word_1.toml"), "plain-word_1.toml");
        assert_eq!(quote("two words"), "'two words'");
        assert_eq!(quote("it's"), "\"it's\"");
    }
}
