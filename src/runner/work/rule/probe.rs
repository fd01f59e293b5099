//! The image's Python search paths, read once per image by running its own interpreters
//! ([`python_probe`], [`parse_python_probe`]).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// What one of the image's Python interpreters searches, as it reported itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PythonPaths {
    /// The interpreter's path as found on `PATH`.
    pub interpreter: String,
    /// Its standard library and site folders (and zip entries): the toolchain.
    pub toolchain: Vec<String>,
    /// Other folders of its `sys.path` (`PYTHONPATH`, folders a `.pth` file adds): project
    /// folders, where a module of the toolchain's name would shadow it.
    pub project: Vec<String>,
    /// The top-level module names of its standard library and site folders.
    pub modules: BTreeSet<String>,
}

/// The image's search paths, read once per image.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Toolchain {
    /// The folders of `PATH` (the image's, else [`DEFAULT_PATH`](super::DEFAULT_PATH)).
    pub path: Vec<String>,
    /// Each Python interpreter found on `PATH`.
    pub python: Vec<PythonPaths>,
    /// The user the image runs as (`root` when it names none).
    pub user: String,
}

/// The script that asks each Python interpreter on `PATH` what it searches: for each of
/// `python3`, `python` and `python3.N` in the `PATH` folders, one line
/// `SKILLSCOPE-PYTHON <path> <json>`. Run with skillscope's static shell in a helper
/// environment of the image (nothing of an agent's in it), with the image's environment.
pub fn python_probe(path: &[String]) -> String {
    // Run with `-S`, then `site.main()` under a finder of last resort: the names the
    // interpreter's start-up looks for and misses (Debian's `sitecustomize` tries
    // `apport_python_hook`) are the toolchain's names too.
    let code = r#"import sys, json, os
class _Miss:
    names = set()
    def find_spec(self, name, path=None, target=None):
        _Miss.names.add(name.split(".")[0])
        return None
_miss = _Miss()
sys.meta_path.append(_miss)
try:
    import site
    site.main()
except Exception:
    site = None
try:
    sys.meta_path.remove(_miss)
except ValueError:
    pass
try:
    import sysconfig
    paths = sysconfig.get_paths()
except Exception:
    paths = {}
tool = set()
for k in ("stdlib", "platstdlib", "purelib", "platlib"):
    if paths.get(k):
        tool.add(paths[k])
if site is not None:
    for f in ("getsitepackages",):
        try:
            tool.update(getattr(site, f)())
        except Exception:
            pass
    try:
        tool.add(site.getusersitepackages())
        tool.add(site.getuserbase())
    except Exception:
        pass
project = []
for p in sys.path:
    if not p:
        continue
    if p in tool or p.endswith((".zip", "site-packages", "dist-packages", "lib-dynload")) or any(p.startswith(t + os.sep) for t in tool if t):
        tool.add(p)
    else:
        project.append(p)
# A `.pth` line naming a folder the image lacks: `site` adds it once it exists (the agent's).
for d in list(tool):
    try:
        names = [n for n in os.listdir(d) if n.endswith(".pth")]
    except Exception:
        names = []
    for n in names:
        try:
            with open(os.path.join(d, n)) as f:
                for line in f:
                    line = line.strip()
                    if line and line[0] != chr(35) and not line.startswith(("import ", "import\t")):
                        q = os.path.normpath(os.path.join(d, line))
                        if not os.path.exists(q):
                            tool.add(q)
        except Exception:
            pass
mods = set(getattr(sys, "stdlib_module_names", ())) | set(sys.builtin_module_names) | _Miss.names | {n.split(".")[0] for n in sys.modules}
for d in tool:
    try:
        for n in os.listdir(d):
            m = n.split(".")[0] if (n.endswith(".py") or ".so" in n) else (n if os.path.isdir(os.path.join(d, n)) and "." not in n else None)
            if m:
                mods.add(m)
    except Exception:
        pass
print(json.dumps({"toolchain": sorted(t for t in tool if t), "project": project, "modules": sorted(mods)}))
"#;
    let dirs: Vec<String> = path.iter().map(|d| shell_quote(d)).collect();
    format!(
        "seen=''; for d in {dirs}; do for n in python3 python python3.8 python3.9 python3.10 python3.11 python3.12 python3.13 python3.14; do \
           p=\"$d/$n\"; [ -x \"$p\" ] || continue; r=$(readlink -f \"$p\" 2>/dev/null || echo \"$p\"); \
           case \" $seen \" in *\" $r \"*) continue;; esac; seen=\"$seen $r\"; \
           out=$(\"$p\" -S -c {code} 2>/dev/null) && echo \"SKILLSCOPE-PYTHON $p $out\"; done; done; true",
        dirs = if dirs.is_empty() {
            "/usr/bin".to_string()
        } else {
            dirs.join(" ")
        },
        code = shell_quote(code),
    )
}

/// Parses [`python_probe`]'s output; lines that are not its own are left out.
pub fn parse_python_probe(out: &str) -> Vec<PythonPaths> {
    #[derive(Deserialize)]
    struct Reported {
        toolchain: Vec<String>,
        project: Vec<String>,
        modules: Vec<String>,
    }
    out.lines()
        .filter_map(|l| l.strip_prefix("SKILLSCOPE-PYTHON "))
        .filter_map(|rest| {
            let (interpreter, json) = rest.split_once(' ')?;
            let r: Reported = serde_json::from_str(json).ok()?;
            let clean = |v: Vec<String>| -> Vec<String> {
                v.into_iter()
                    .filter(|p| p.starts_with('/'))
                    .map(|p| p.trim_end_matches('/').to_string())
                    .filter(|p| !p.is_empty())
                    .collect()
            };
            Some(PythonPaths {
                interpreter: interpreter.to_string(),
                toolchain: clean(r.toolchain),
                project: clean(r.project),
                modules: r.modules.into_iter().collect(),
            })
        })
        .collect()
}

/// `s` quoted for a POSIX shell.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}
