//! Secrets kept out of trial folders: the operator's `--env` values and the harness's provider
//! keys ([`super::Agent::secrets`]) are replaced by `[redacted NAME]` in every byte skillscope
//! writes into a trial folder from a container — an exec's output as it streams
//! ([`Redactor`]), each file copied out, and, at the end of the attempt, every file of the folder
//! ([`Secrets::redact_tree`]).
//!
//! Each value is looked for as written, percent-encoded (RFC 3986: every byte but the letters,
//! digits and `-._~` as `%XX`, upper and lower case hex) and base64-encoded (standard and URL-safe
//! alphabets, at each of the three alignments a value can take inside a longer encoded text, so
//! `Basic dXNlcjpLRVk=` is found as well as the key encoded alone). Values shorter than
//! [`MIN_SECRET_LEN`] bytes are not looked for: redacting `1` or `true` everywhere would destroy
//! the files and protect nothing.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;

use base64::Engine;

/// Shortest value redacted, bytes.
pub const MIN_SECRET_LEN: usize = 8;

/// The values to redact, each with the forms it is looked for in.
#[derive(Default)]
pub struct Secrets {
    /// `(needle, mark)`, longest needle first (a longer form wins over a shorter one it holds).
    needles: Vec<(Vec<u8>, Vec<u8>)>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({} forms)", self.needles.len())
    }
}

impl Secrets {
    /// The secrets `named` (`(NAME, value)`); values shorter than [`MIN_SECRET_LEN`] are left out.
    pub fn new<'a>(named: impl IntoIterator<Item = (&'a str, &'a str)>) -> Secrets {
        let mut needles: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for (name, value) in named {
            if value.len() < MIN_SECRET_LEN {
                continue;
            }
            let mark = format!("[redacted {name}]").into_bytes();
            for form in forms(value.as_bytes()) {
                if form.len() >= MIN_SECRET_LEN.min(value.len())
                    && !needles.iter().any(|(n, _)| *n == form)
                {
                    needles.push((form, mark.clone()));
                }
            }
        }
        needles.sort_by_key(|(n, _)| std::cmp::Reverse(n.len()));
        Secrets { needles }
    }

    /// The secrets among `KEY=VALUE` lines (the operator's `--env`), named by their key.
    pub fn of_env(lines: &[String], more: &[(String, String)]) -> Secrets {
        let pairs = lines
            .iter()
            .filter_map(|l| l.split_once('='))
            .chain(more.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        Secrets::new(pairs)
    }

    /// True when there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }

    /// Replaces every form of every secret in `bytes`; true when one was found.
    pub fn redact(&self, bytes: &mut Vec<u8>) -> bool {
        let mut hit = false;
        for (needle, mark) in &self.needles {
            let mut from = 0;
            while let Some(at) = find(&bytes[from..], needle) {
                let at = from + at;
                bytes.splice(at..at + needle.len(), mark.iter().copied());
                from = at + mark.len();
                hit = true;
            }
        }
        hit
    }

    /// The length of the longest end of `bytes` that begins some form of a secret (and could
    /// become one with what follows); 0 when none does.
    fn partial_at_end(&self, bytes: &[u8]) -> usize {
        let mut keep = 0;
        for (needle, _) in &self.needles {
            let most = (needle.len() - 1).min(bytes.len());
            for k in (keep + 1..=most).rev() {
                if bytes.ends_with(&needle[..k]) {
                    keep = k;
                    break;
                }
            }
        }
        keep
    }

    /// Copies `from` to `to`, redacted; true when a secret was found.
    ///
    /// # Errors
    /// Read and write errors.
    pub fn copy(
        self: &Arc<Self>,
        from: &mut dyn Read,
        to: &mut dyn Write,
    ) -> std::io::Result<bool> {
        let mut r = Redactor::new(self.clone());
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    to.write_all(&r.finish())?;
                    return Err(e);
                }
            };
            to.write_all(&r.push(&buf[..n]))?;
        }
        to.write_all(&r.finish())?;
        Ok(r.hit)
    }

    /// Redacts every regular file under `dir` in place (no link followed; a file is rewritten
    /// only when it held a secret, through a fresh file renamed over it). Returns the files
    /// rewritten. Files that cannot be read are left as they are.
    pub fn redact_tree(self: &Arc<Self>, dir: &Path) -> usize {
        if self.is_empty() {
            return 0;
        }
        let mut n = 0;
        for e in walkdir::WalkDir::new(dir)
            .follow_links(false)
            .into_iter()
            .flatten()
        {
            if e.file_type().is_file() && self.redact_file(e.path()).unwrap_or(false) {
                n += 1;
            }
        }
        n
    }

    /// Redacts one regular file in place; true when it held a secret.
    fn redact_file(self: &Arc<Self>, path: &Path) -> std::io::Result<bool> {
        use std::os::unix::fs::OpenOptionsExt;
        let mut src = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)?;
        if !src.metadata()?.is_file() {
            return Ok(false);
        }
        let Some(name) = path.file_name() else {
            return Ok(false);
        };
        let tmp = path.with_file_name(format!(".{}.redacting", name.to_string_lossy()));
        let mut out = std::io::BufWriter::new(crate::fs::create_fresh(&tmp)?);
        let hit = match self.copy(&mut src, &mut out) {
            Ok(hit) => hit,
            Err(e) => {
                drop(out);
                let _ = std::fs::remove_file(&tmp);
                return Err(e);
            }
        };
        out.flush()?;
        drop(out);
        if hit {
            std::fs::rename(&tmp, path)?;
        } else {
            std::fs::remove_file(&tmp)?;
        }
        Ok(hit)
    }
}

/// Redacts a stream given in chunks: what [`Redactor::push`] returns never ends inside a
/// secret — only an end that could begin one of its forms is held back, until more arrives or
/// [`Redactor::finish`] (so a live view sees every line as it comes, unless it ends halfway into
/// what looks like a secret).
pub struct Redactor {
    secrets: Arc<Secrets>,
    held: Vec<u8>,
    /// A secret was found.
    pub hit: bool,
}

impl Redactor {
    /// A redactor of `secrets`.
    pub fn new(secrets: Arc<Secrets>) -> Redactor {
        Redactor {
            secrets,
            held: Vec::new(),
            hit: false,
        }
    }

    /// Takes `chunk`; returns the bytes that are safe to write now.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        if self.secrets.is_empty() {
            return chunk.to_vec();
        }
        self.held.extend_from_slice(chunk);
        self.hit |= self.secrets.redact(&mut self.held);
        let keep = self.secrets.partial_at_end(&self.held);
        let cut = self.held.len() - keep;
        let out: Vec<u8> = self.held.drain(..cut).collect();
        out
    }

    /// The bytes held back, redacted: the end of the stream.
    pub fn finish(&mut self) -> Vec<u8> {
        self.hit |= self.secrets.redact(&mut self.held);
        std::mem::take(&mut self.held)
    }
}

/// Where `needle` first occurs in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The forms a value is looked for in: itself, percent-encoded (upper and lower hex), and its
/// base64 at each alignment in both alphabets (only the characters that depend on the value
/// alone).
fn forms(value: &[u8]) -> Vec<Vec<u8>> {
    let mut out = vec![value.to_vec()];
    let pct = percent_encoding::percent_encode(value, UNRESERVED).to_string();
    if pct.as_bytes() != value {
        out.push(pct.clone().into_bytes());
        out.push(lower_hex_escapes(&pct).into_bytes());
    }
    for engine in [
        &base64::engine::general_purpose::STANDARD_NO_PAD,
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ] {
        for offset in 0..3usize {
            let mut padded = vec![0u8; offset];
            padded.extend_from_slice(value);
            let enc = engine.encode(&padded);
            // Characters wholly made of the value's bits: from the first sextet after the
            // offset's bytes to the last sextet inside the value.
            let start = (offset * 8).div_ceil(6);
            let end = ((offset + value.len()) * 8) / 6;
            if end > start {
                out.push(enc.as_bytes()[start..end].to_vec());
            }
        }
    }
    out
}

/// `%2F` → `%2f` for every escape of a percent-encoded text.
fn lower_hex_escapes(pct: &str) -> String {
    let mut out = String::with_capacity(pct.len());
    let mut chars = pct.chars();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '%' {
            for _ in 0..2 {
                if let Some(h) = chars.next() {
                    out.push(h.to_ascii_lowercase());
                }
            }
        }
    }
    out
}

/// RFC 3986's unreserved characters stay as they are; every other byte is escaped.
const UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-live/Secret+Value=42";

    fn secrets() -> Arc<Secrets> {
        Arc::new(Secrets::new([("OPENAI_API_KEY", KEY), ("SHORT", "abc")]))
    }

    #[test]
    fn every_form_of_the_value_is_redacted() {
        let s = secrets();
        let b64 = base64::engine::general_purpose::STANDARD.encode(format!("user:{KEY}"));
        let url = base64::engine::general_purpose::URL_SAFE.encode(format!("ab{KEY}"));
        let pct = percent_encoding::percent_encode(KEY.as_bytes(), UNRESERVED).to_string();
        let text = format!(
            "raw {KEY}\nbasic {b64}\nurl-safe {url}\nquery ?key={pct}&k2={}\nshort abc\n",
            lower_hex_escapes(&pct)
        );
        let mut bytes = text.clone().into_bytes();
        assert!(s.redact(&mut bytes));
        let out = String::from_utf8(bytes).unwrap();
        assert!(!out.contains(KEY), "{out}");
        assert!(
            !out.contains(&pct) && !out.contains(&lower_hex_escapes(&pct)),
            "{out}"
        );
        let inner = &b64[8..b64.len() - 4];
        assert!(!out.contains(inner), "{out}");
        assert!(!out.contains(&url[4..url.len() - 4]), "{out}");
        assert_eq!(out.matches("[redacted OPENAI_API_KEY]").count(), 5, "{out}");
        // Too short to be redacted.
        assert!(out.contains("short abc"));
    }

    #[test]
    fn a_value_cut_across_chunks_is_still_redacted() {
        let s = secrets();
        let text = format!("a{KEY}b{KEY}c").into_bytes();
        for cut in 1..text.len() {
            let mut r = Redactor::new(s.clone());
            let mut out = Vec::new();
            for chunk in text.chunks(cut) {
                out.extend(r.push(chunk));
            }
            out.extend(r.finish());
            assert_eq!(
                String::from_utf8(out).unwrap(),
                "a[redacted OPENAI_API_KEY]b[redacted OPENAI_API_KEY]c",
                "cut {cut}"
            );
            assert!(r.hit);
        }
    }

    /// Output that cannot begin a secret is passed on at once (a live view is not delayed).
    #[test]
    fn only_a_possible_start_of_a_secret_is_held_back() {
        let mut r = Redactor::new(secrets());
        assert_eq!(r.push(b"tool_use: sleep 8\n"), b"tool_use: sleep 8\n");
        assert_eq!(r.push(b"key sk-li"), b"key ");
        assert_eq!(
            r.push(b"ve/Secret+Value=42 done"),
            b"[redacted OPENAI_API_KEY] done"
        );
        assert_eq!(r.finish(), b"");
    }

    #[test]
    fn files_are_rewritten_without_following_links() {
        let s = secrets();
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim");
        std::fs::write(&victim, format!("host {KEY}")).unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join("link")).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/log.txt"), format!("env {KEY}\n")).unwrap();
        std::fs::write(dir.path().join("clean.txt"), "nothing").unwrap();
        assert_eq!(s.redact_tree(dir.path()), 1);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("sub/log.txt")).unwrap(),
            "env [redacted OPENAI_API_KEY]\n"
        );
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            format!("host {KEY}")
        );
        assert_eq!(
            std::fs::read_dir(dir.path().join("sub")).unwrap().count(),
            1,
            "no temporary file left"
        );
    }
}
