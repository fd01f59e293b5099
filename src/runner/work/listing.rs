//! The script of the hand-over that lists and packs what the agent changed, run by
//! skillscope's static tools once every process of the agent has ended (its output is read by
//! [`super::collect::sort`]).

use super::rule::shell_quote;
use crate::runner::STATIC_SHELL_DIR;

/// The script run once every process of the agent has ended: on stdout, the listing of every
/// folder changed in the last `minutes` minutes (by `ctime`) and of `/` — for each folder a
/// marker `D<folder>` and then its entries, every item NUL-terminated (a superset of the changed
/// image folders', for what the agent deleted) — one more NUL, then a tar of every path changed
/// in those minutes (several archives one after the other) — outside `pruned` and outside every
/// read-only mount of the environment. Leaves its status in `$t`: [`LISTING_FAILED`] when a
/// folder could not be listed, else the tar's.
///
/// Read-only mounts (a compose service's `:ro` volume, an operator's `--mount …:ro`, the
/// oracle's solution) are read from the kernel's `/proc/self/mountinfo` (field 5, its octal
/// escapes decoded; options field 6): the agent cannot have written there, the verifier gets the
/// same mount, and a folder freshly made on the host (a task checked out a minute ago) would
/// otherwise be carried into a mount the verifier cannot write. Read-write mounts stay read: an
/// image's `VOLUME` is a fresh anonymous volume per environment, so the agent's work there
/// reaches the verifier only by this copy.
pub fn after_kill_script(pruned: &[String], minutes: u64) -> String {
    let s = STATIC_SHELL_DIR;
    format!(
        "{}; {}; lf=$?; {} / || lf=1; printf '\\0'; {}; t=$?; [ $lf = 0 ] || t={LISTING_FAILED}",
        read_only_mounts(),
        changed(
            pruned,
            minutes,
            "-type d ",
            &format!("{s}/xargs -0 -r {}", entries_of())
        ),
        entries_of(),
        changed(pruned, minutes, "", &tar_of_paths()),
    )
}

/// The status of [`after_kill_script`] when a changed folder could not be listed.
pub const LISTING_FAILED: i64 = 100;

/// Sets the shell's arguments to `-o -path <mount>` for every read-only mount of the
/// environment but `/` (see [`after_kill_script`]), and changes to `/`.
fn read_only_mounts() -> String {
    let s = STATIC_SHELL_DIR;
    format!(
        "cd / && set -- && while read -r _ _ _ _ mp opts _; do case \",$opts,\" in *,ro,*) \
         [ \"$mp\" = / ] || set -- \"$@\" -o -path \"$({s}/busybox printf '%b' \"$mp\")\";; esac; \
         done < /proc/self/mountinfo"
    )
}

/// `find` of every path of kind `kind` (a `find` test, or empty) changed in the last `minutes`
/// minutes outside `pruned` and the read-only mounts, NUL-separated into `then`.
fn changed(pruned: &[String], minutes: u64, kind: &str, then: &str) -> String {
    let prune: Vec<String> = pruned
        .iter()
        .map(|p| format!("-path {}", shell_quote(p)))
        .collect();
    format!(
        "{}/find / \\( {} \"$@\" \\) -prune -o {kind}-cmin -{minutes} -print0 | {then}",
        STATIC_SHELL_DIR,
        prune.join(" -o ")
    )
}

/// `tar` of the paths on stdin (NUL-separated), no recursion, to stdout.
fn tar_of_paths() -> String {
    let s = STATIC_SHELL_DIR;
    format!("{s}/xargs -0 -r {s}/tar -c --no-recursion -f -")
}

/// A command that lists the folders given as its arguments: for each, `D<folder>` and then its
/// entries, NUL-terminated; exits 1 when one could not be listed.
fn entries_of() -> String {
    let s = STATIC_SHELL_DIR;
    format!(
        "{s}/sh -c 'e=0; for d; do printf \"D%s\\0\" \"$d\"; \
         {s}/find \"$d\" -mindepth 1 -maxdepth 1 -print0 || e=1; done; exit $e' sh"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scripts_use_only_the_static_tools() {
        let s = after_kill_script(&["/proc".into(), "/it's".into()], 3);
        assert!(s.contains("-type d -cmin -3"), "{s}");
        assert!(s.contains(" -cmin -3"), "{s}");
        assert!(s.contains("'/it'\\''s'"), "{s}");
        for word in s
            .split_whitespace()
            .filter(|w| w.ends_with("find") || w.ends_with("tar") || w.ends_with("xargs"))
        {
            assert!(word.starts_with(STATIC_SHELL_DIR), "{word} in {s}");
        }
    }
}
