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

/// The path `path` (absolute) names once every link in it is followed (`link_at`: the target
/// of the link at a path, as written, or `None` where there is none), with `.` and `..` read
/// as the kernel reads them; `None` in a loop of links (more than 40 hops, the kernel's own
/// bound).
pub fn follow(path: &str, link_at: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let mut pending: Vec<String> = path
        .split('/')
        .rev()
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect();
    let mut cur: Vec<String> = Vec::new();
    let mut hops = 0;
    while let Some(part) = pending.pop() {
        match part.as_str() {
            "." => continue,
            ".." => {
                cur.pop();
                continue;
            }
            _ => {}
        }
        cur.push(part);
        let here = format!("/{}", cur.join("/"));
        if let Some(t) = link_at(&here) {
            hops += 1;
            if hops > 40 {
                return None;
            }
            cur.pop();
            if t.starts_with('/') {
                cur.clear();
            }
            pending.extend(
                t.split('/')
                    .rev()
                    .filter(|c| !c.is_empty())
                    .map(str::to_string),
            );
        }
    }
    Some(format!("/{}", cur.join("/")))
}
