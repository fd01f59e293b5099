//! Reading a trial's logs for the health check: logical lines (a message wrapped over several
//! physical lines joined again, as NLTK's downloader wraps `[nltk_data] Error loading wordnet:
//! <urlopen error [Errno -2] Name or` / `[nltk_data]     service not known>`), and the causes
//! found in them, each with its 1-based line in the file: a missing environment value, a missing
//! data file, an unavailable package (apt, pip, a Python version uv would download, the headers a
//! compiled wheel needs), and a host the step could not reach. Pure: text in, findings out.

/// One log of a trial: its file (relative to the trial folder), its text (sanitized; possibly the
/// end of a long file) and the number of the first line it holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Log {
    /// `verifier/test-stdout.txt`, `agent/oracle.txt`, `environment/build.log`, …
    pub file: String,
    /// The text, terminal control sequences already removed.
    pub text: String,
    /// 1-based number of the text's first line in the file.
    pub first_line: usize,
}

impl Log {
    /// A whole file's text.
    pub fn new(file: &str, text: &str) -> Log {
        Log {
            file: file.to_string(),
            text: text.to_string(),
            first_line: 1,
        }
    }

    /// The logical lines of the text (see [`logical_lines`]), numbered in the file.
    pub fn lines(&self) -> Vec<Line> {
        let mut lines = logical_lines(&self.text);
        for l in &mut lines {
            l.number += self.first_line.max(1) - 1;
        }
        lines
    }

    /// `verifier/test-stdout.txt:12`.
    pub fn at(&self, line: usize) -> String {
        format!("{}:{line}", self.file)
    }
}

/// A logical line: physical lines joined where a message was wrapped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// 1-based number of its first physical line.
    pub number: usize,
    /// Its text, continuations joined with one space, trimmed.
    pub text: String,
}

/// The `[tag]` a line starts with (`[nltk_data]`), and the rest.
fn tagged(line: &str) -> Option<(&str, &str)> {
    let t = line.trim_start();
    if !t.starts_with('[') {
        return None;
    }
    let end = t.find(']')?;
    (end > 1 && end < 40).then(|| (&t[..=end], &t[end + 1..]))
}

/// Physical lines to logical ones. A line continues the one before when both carry the same
/// `[tag]` and the continuation is indented past it (NLTK's wrapped messages), or when the one
/// before ends inside an unclosed `<…>` or `(…)` and this one is indented (a wrapped error repr).
pub fn logical_lines(text: &str) -> Vec<Line> {
    let mut out: Vec<Line> = Vec::new();
    let mut open_tag: Option<String> = None;
    for (i, raw) in text.lines().enumerate() {
        let continues = match (open_tag.as_deref(), tagged(raw)) {
            (Some(tag), Some((t, rest))) => t == tag && rest.starts_with("  "),
            (None, None) => {
                raw.starts_with([' ', '\t']) && out.last().is_some_and(|l| unclosed(&l.text))
            }
            _ => false,
        };
        if continues && let Some(last) = out.last_mut() {
            let rest = tagged(raw).map(|(_, r)| r).unwrap_or(raw);
            last.text.push(' ');
            last.text.push_str(rest.trim());
            continue;
        }
        open_tag = tagged(raw).map(|(t, _)| t.to_string());
        out.push(Line {
            number: i + 1,
            text: raw.trim().to_string(),
        });
    }
    out
}

/// True when `s` opened more `<` or `(` than it closed.
fn unclosed(s: &str) -> bool {
    let count = |c: char| s.matches(c).count();
    count('<') > count('>') || count('(') > count(')')
}

/// How a found cause ranks: the health check reports the first (missing env value, missing data
/// file, missing base image or package, network).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// A needed environment value was empty.
    Env,
    /// A data file the task's Dockerfile copies is missing from the checkout.
    DataFile,
    /// A base image, package or interpreter the step needed is not available here.
    Package,
    /// A host the step needed could not be reached.
    Network,
}

/// A cause found in a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Its rank.
    pub level: Level,
    /// What it is (`OPENAI_API_KEY`, `dataset.csv`, `libgbm1`, `astral.sh`).
    pub what: String,
    /// The logical line that shows it.
    pub line: Line,
}

/// What the task says that logs are read against.
#[derive(Debug, Clone, Copy, Default)]
pub struct Context<'a> {
    /// Variables the task names (its env tables and compose file).
    pub env_vars: &'a [String],
    /// Files its Dockerfiles copy that the checkout lacks.
    pub missing_files: &'a [String],
}

/// Markers of a step that could not reach the network (curl, wget, pip, npm, git, Python, Go).
const NETWORK_MARKERS: &[&str] = &[
    "Could not resolve host",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Failed to establish a new connection",
    "Network is unreachable",
    "No route to host",
    "getaddrinfo",
    "EAI_AGAIN",
    "ENOTFOUND",
    "ECONNREFUSED",
    "Could not connect to",
    "unable to access 'http",
    "Connection timed out",
    "Max retries exceeded",
    "nodename nor servname",
    "dial tcp",
    "unable to resolve host address",
    "Failed to connect to",
    "urlopen error",
];

/// Words that, beside a variable's name, say its value was missing.
const UNSET_WORDS: &[&str] = &[
    "not set",
    "is missing",
    "missing",
    "required",
    "keyerror",
    "unset",
    "must be set",
    "not found",
    "no api key",
    "empty",
];

/// Words that, beside a file's name, say it was not there.
const NOT_FOUND_WORDS: &[&str] = &[
    "no such file",
    "not found",
    "filenotfounderror",
    "does not exist",
    "cannot stat",
    "copy failed",
];

/// The best cause in `lines`: the lowest [`Level`], the earliest line within it.
pub fn find(lines: &[Line], cx: &Context<'_>) -> Option<Found> {
    let mut best: Option<Found> = None;
    for (i, l) in lines.iter().enumerate() {
        let Some((level, what)) = cause_of(l, cx).or_else(|| {
            // A marker split over two lines that no rule joined.
            let next = lines.get(i + 1)?;
            let joined = Line {
                number: l.number,
                text: format!("{} {}", l.text, next.text),
            };
            let (level, what) = cause_of(&joined, cx)?;
            (level == Level::Network && network_marker(&next.text).is_none())
                .then_some((level, what))
        }) else {
            continue;
        };
        let what = if level == Level::Network && what.is_empty() {
            host_near(lines, i).unwrap_or_else(|| "a host the log does not name".into())
        } else {
            what
        };
        if best.as_ref().is_none_or(|b| level < b.level) {
            best = Some(Found {
                level,
                what,
                line: l.clone(),
            });
        }
    }
    best
}

/// The cause one line shows, if any: its level and what (empty for a host not named on it).
fn cause_of(l: &Line, cx: &Context<'_>) -> Option<(Level, String)> {
    let lower = l.text.to_ascii_lowercase();
    for v in cx.env_vars {
        if contains_word(&l.text, v) && UNSET_WORDS.iter().any(|w| lower.contains(w)) {
            return Some((Level::Env, v.clone()));
        }
    }
    for f in cx.missing_files {
        let base = f.rsplit('/').next().unwrap_or(f);
        if !base.is_empty()
            && l.text.contains(base)
            && NOT_FOUND_WORDS.iter().any(|w| lower.contains(w))
        {
            return Some((Level::DataFile, f.clone()));
        }
    }
    if let Some(p) = unavailable_package(&l.text) {
        return Some((Level::Package, p));
    }
    network_marker(&l.text).map(|_| (Level::Network, host_of(&l.text).unwrap_or_default()))
}

/// The network marker on a line, if any.
pub fn network_marker(text: &str) -> Option<&'static str> {
    NETWORK_MARKERS.iter().copied().find(|m| text.contains(m))
}

/// True when `word` occurs in `hay` not inside a longer name.
fn contains_word(hay: &str, word: &str) -> bool {
    let part = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    hay.match_indices(word).any(|(i, _)| {
        !part(hay[..i].chars().next_back()) && !part(hay[i + word.len()..].chars().next())
    })
}

/// The package (or interpreter) a line says is not available: apt's `Unable to locate package X`
/// and `Package 'X' has no installation candidate`, pip's `No matching distribution found for X`,
/// the Python headers a compiled wheel needs (`Python.h`, in `python3-dev`), a Python version uv
/// cannot find here and would download (`uv init --python 3.12` on a base image with 3.11), and
/// a base image no registry here provides.
pub fn unavailable_package(line: &str) -> Option<String> {
    let name_of = |s: &str| -> String {
        s.trim_start_matches(['\'', '"', '`'])
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || "._+-:=<>!~/".contains(*c))
            .collect::<String>()
            .trim_end_matches(['.', ':'])
            .to_string()
    };
    let after = |marker: &str| {
        line.split(marker)
            .nth(1)
            .map(name_of)
            .filter(|n| !n.is_empty())
    };
    if let Some(n) = after("Unable to locate package ") {
        return Some(n);
    }
    if line.contains("has no installation candidate") {
        return after("Package '");
    }
    if let Some(n) = after("No matching distribution found for ") {
        return Some(format!("pip {n}"));
    }
    if line.contains("Python.h: No such file or directory") {
        return Some("Python.h (python3-dev)".into());
    }
    for marker in [
        "No interpreter found for Python ",
        "No download found for request: ",
        "No Python at ",
    ] {
        if let Some(n) = after(marker) {
            return Some(format!(
                "Python {} (not in the base image; uv would download it)",
                n.trim_start_matches("cpython-")
            ));
        }
    }
    if (line.contains("Failed to download") || line.contains("Failed to fetch"))
        && (line.contains("cpython-") || line.contains("python-build-standalone"))
    {
        let version = line
            .split("cpython-")
            .nth(1)
            .map(|v| {
                v.chars()
                    .take_while(|c| c.is_ascii_digit() || *c == '.')
                    .collect::<String>()
            })
            .filter(|v| !v.is_empty())
            .map(|v| format!(" {}", v.trim_end_matches('.')))
            .unwrap_or_default();
        return Some(format!(
            "Python{version} (not in the base image; uv tried to download it)"
        ));
    }
    for marker in ["pull access denied for ", "manifest for "] {
        if let Some(n) = after(marker) {
            return Some(format!("base image {}", n.trim_end_matches(',')));
        }
    }
    None
}

/// Every package [`unavailable_package`] finds in `text`, once each, in order.
pub fn unavailable_packages(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for l in logical_lines(text) {
        if let Some(n) = unavailable_package(&l.text)
            && !out.contains(&n)
        {
            out.push(n);
        }
    }
    out
}

/// The host a network failure line names: `Could not resolve host: X`, urllib3's `host='X'`,
/// npm's `ENOTFOUND X`, Go's `lookup X`, curl's `Failed to connect to X`, git's `unable to access
/// 'https://X/…'`, or any URL's host.
pub fn host_of(text: &str) -> Option<String> {
    let token = |s: &str| -> Option<String> {
        let h: String = s
            .trim_start_matches(['\'', '"', ' '])
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '.' || *c == '-')
            .collect();
        let h = h.trim_end_matches('.').to_string();
        (h.contains('.') && h.chars().any(|c| c.is_ascii_alphabetic())).then_some(h)
    };
    for marker in [
        "resolve host: ",
        "resolve host ",
        "host='",
        "host=\"",
        "ENOTFOUND ",
        "EAI_AGAIN ",
        "lookup ",
        "connect to ",
        "Could not connect to ",
    ] {
        if let Some(h) = text.split(marker).nth(1).and_then(token) {
            return Some(h);
        }
    }
    text.split("://").skip(1).find_map(token)
}

/// The host named on the line `i` or on one of the five lines before it (a download announced
/// before its failure: `Downloading https://astral.sh/uv/install.sh`).
fn host_near(lines: &[Line], i: usize) -> Option<String> {
    (i.saturating_sub(5)..=i)
        .rev()
        .find_map(|j| lines.get(j).and_then(|l| host_of(&l.text)))
}

/// The segment of a Docker build log from its last `Step N/M :` line (the step that failed) to
/// the end; the whole log when it has no steps.
pub fn failing_step(lines: &[Line]) -> &[Line] {
    let start = lines
        .iter()
        .rposition(|l| {
            l.text.starts_with("Step ")
                && l.text
                    .split_whitespace()
                    .nth(1)
                    .is_some_and(|s| s.contains('/'))
        })
        .unwrap_or(0);
    &lines[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nltk_wrapped_error_is_one_line_with_its_number() {
        let log = Log {
            file: "agent/oracle.txt".into(),
            text: "start\n[nltk_data] Error loading wordnet: <urlopen error [Errno -2] Name or\n\
                   [nltk_data]     service not known>\nTraceback (most recent call last):\n"
                .into(),
            first_line: 10,
        };
        let lines = log.lines();
        assert_eq!(
            lines[1],
            Line {
                number: 11,
                text: "[nltk_data] Error loading wordnet: <urlopen error [Errno -2] Name or service not known>".into()
            }
        );
        let f = find(&lines, &Context::default()).unwrap();
        assert_eq!((f.level, f.line.number), (Level::Network, 11));
        assert_eq!(f.what, "a host the log does not name");
    }

    #[test]
    fn levels_rank_and_hosts_are_named() {
        let text = "Downloading https://astral.sh/uv/install.sh\ncurl: (6) Could not resolve host: astral.sh\n\
                    error: No interpreter found for Python 3.12 in managed installations or search path\n";
        let lines = logical_lines(text);
        let f = find(&lines, &Context::default()).unwrap();
        assert_eq!(f.level, Level::Package);
        assert_eq!(
            f.what,
            "Python 3.12 (not in the base image; uv would download it)"
        );
        assert_eq!(f.line.number, 3);
        let net = find(&lines[..2], &Context::default()).unwrap();
        assert_eq!(
            (net.level, net.what.as_str()),
            (Level::Network, "astral.sh")
        );
        for (line, host) in [
            (
                "HTTPSConnectionPool(host='pypi.org', port=443): Max retries exceeded",
                "pypi.org",
            ),
            (
                "npm ERR! getaddrinfo ENOTFOUND registry.npmjs.org",
                "registry.npmjs.org",
            ),
            (
                "fatal: unable to access 'https://github.com/x/y/': Could not resolve host: github.com",
                "github.com",
            ),
            (
                "dial tcp: lookup proxy.golang.org on 10.0.0.1:53: no such host",
                "proxy.golang.org",
            ),
        ] {
            assert_eq!(host_of(line).as_deref(), Some(host), "{line}");
        }
        // A wrapped repr without a tag joins when its first line left a bracket open.
        let wrapped = logical_lines(
            "error: <urlopen error [Errno -3] Temporary\n    failure in name resolution>\n",
        );
        assert_eq!(wrapped.len(), 1);
    }

    #[test]
    fn env_and_data_file_outrank_network() {
        let vars = ["OPENAI_API_KEY".to_string()];
        let files = ["data/wave.mseed".to_string()];
        let cx = Context {
            env_vars: &vars,
            missing_files: &files,
        };
        let text = "curl: (6) Could not resolve host: x.org\nFileNotFoundError: [Errno 2] No such file or directory: '/root/data/wave.mseed'\n\
                    openai.OpenAIError: The api_key client option must be set either by passing api_key or by setting the OPENAI_API_KEY environment variable\n";
        let f = find(&logical_lines(text), &cx).unwrap();
        assert_eq!(
            (f.level, f.what.as_str(), f.line.number),
            (Level::Env, "OPENAI_API_KEY", 3)
        );
        let f = find(&logical_lines(text)[..2], &cx).unwrap();
        assert_eq!(
            (f.level, f.what.as_str()),
            (Level::DataFile, "data/wave.mseed")
        );
    }

    #[test]
    fn packages_and_failing_step() {
        assert_eq!(
            unavailable_packages(
                "E: Unable to locate package libasound2t64\nE: Package 'libgbm1' has no installation candidate\nERROR: No matching distribution found for torch==9\n  x.c:1: fatal error: Python.h: No such file or directory\n"
            ),
            [
                "libasound2t64",
                "libgbm1",
                "pip torch==9",
                "Python.h (python3-dev)"
            ]
        );
        let lines = logical_lines(
            "Step 1/3 : FROM x\nStep 2/3 : RUN curl https://a.org || true\ncurl: (6) Could not resolve host: a.org\nStep 3/3 : RUN apt-get install -y foo\nE: Unable to locate package foo\n",
        );
        let step = failing_step(&lines);
        assert_eq!(step[0].number, 4);
        assert_eq!(find(step, &Context::default()).unwrap().what, "foo");
    }
}
