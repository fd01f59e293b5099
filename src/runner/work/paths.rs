//! Absolute paths of a container's file system as text (`/a/b`): the folder of one, one under
//! another, a relative one read from a folder. Never this machine's paths.

/// `rel` (relative) read from folder `dir` (`./x/` → `dir/x`; `.` → `dir`).
pub fn join(dir: &str, rel: &str) -> String {
    let rel = rel.trim_start_matches("./").trim_end_matches('/');
    match (dir, rel) {
        (d, "" | ".") => d.to_string(),
        ("/", r) => format!("/{r}"),
        (d, r) => format!("{d}/{r}"),
    }
}

/// `path` (absolute) with its `.` and `..` parts read as the kernel reads them (`..` of `/` is
/// `/`; links are not followed).
pub fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("/{}", parts.join("/"))
}

/// `path` is `dir` or under it.
pub fn within(path: &str, dir: &str) -> bool {
    dir == "/"
        || path == dir
        || (path.len() > dir.len() && path.starts_with(dir) && path.as_bytes()[dir.len()] == b'/')
}

/// The folder of an absolute path (`/a/b` → `/a`, `/a` → `/`).
pub fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}
