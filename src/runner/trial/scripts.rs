//! The static scripts a trial runs in an environment between the agent and the verifier, and
//! the codes they answer with: the kill of every process ([`kill_script`]) and the hand-over in
//! one exec ([`handover_script`], read by [`super::changes::hand_over`]). Each runs in
//! skillscope's static shell and calls only its static tools: nothing of the agent's runs.

use std::time::Duration;

use crate::runner::work;

/// The script that stops every process of an environment but its PID 1 and itself (SIGSTOP,
/// first of all: a stopped process can no longer end the script or write), lists them, ends them
/// (the shell's builtin `kill`: a `kill` program would end the shell that ran it), and lists
/// them again: one `pid ppid state name` line each, the two lists apart by a line `--`. Left out
/// of both: PID 1, the script and its children, zombies (they run nothing; a zombie leader
/// whose other threads still run is listed), and PID 1's own `sleep`s (children of PID 1
/// running skillscope's static busybox as `sleep 3600`, by name, program and command line: a
/// busybox shell started under the name `sleep` has another command line: `sleep 3600 N`, N
/// the count [`crate::runner::docker::OWN_INIT`] carries).
pub(super) fn kill_script() -> String {
    format!(
        "kill -STOP -1 2>/dev/null; {}; l; printf %s \"$o\"; echo --; kill -9 -1 2>/dev/null; l; \
         printf %s \"$o\"; true",
        list_processes()
    )
}

/// The shell function `l`, which sets `$o` to the environment's processes, one
/// `pid ppid state name` line each, leaving out what [`kill_script`] leaves out. It runs in the
/// script's own shell (never in a `$(…)`, whose children would not be the script's).
fn list_processes() -> String {
    let s = crate::runner::sandbox::STATIC_SHELL_DIR;
    format!(
        "l() {{ o=; for d in /proc/[0-9]*; do p=${{d#/proc/}}; \
         [ \"$p\" = 1 ] || [ \"$p\" = $$ ] && continue; \
         st=$({s}/cat $d/status 2>/dev/null) || continue; \
         n=$(echo \"$st\" | {s}/sed -n 's/^Name:[[:space:]]*//p'); \
         pp=$(echo \"$st\" | {s}/sed -n 's/^PPid:[[:space:]]*//p'); \
         t=$(echo \"$st\" | {s}/sed -n 's/^State:[[:space:]]*\\([A-Z]\\).*/\\1/p'); \
         th=$(echo \"$st\" | {s}/sed -n 's/^Threads:[[:space:]]*//p'); \
         [ \"$pp\" = $$ ] || {{ [ \"$t\" = Z ] && [ \"$th\" = 1 ]; }} && continue; \
         e=$({s}/readlink $d/exe 2>/dev/null); \
         [ \"$pp\" = 1 ] && [ \"$n\" = sleep ] && [ \"$e\" = {s}/busybox ] \
         && case \"$({s}/tr '\\0' ' ' < $d/cmdline 2>/dev/null)\" in \
         \"{s}/sleep 3600 \"[0-9]*\" \") continue;; esac; \
         o=\"$o$p $pp $t $n\n\"; done; }}"
    )
}

/// The hand-over's exit code when processes were still there after the kill's limit.
pub(super) const PROCESSES_LEFT: i64 = 3;
/// The hand-over's exit code when no nonce could be drawn.
pub(super) const NO_NONCE: i64 = 4;
/// Length of the kernel's random UUID, the hand-over's nonce.
pub(super) const NONCE_LEN: u64 = 36;

/// The hand-over in one exec: `kill -9 -1` repeated every 50 ms until no process is left or
/// `limit` passes — then, when none is left, a line `== <nonce>`, what the agent changed
/// ([`work::listing::after_kill_script`] over `pruned` and the last `minutes`) and the nonce
/// again, last. The nonce is the kernel's random UUID, drawn once no process of the agent is
/// left: whatever the agent wrote into the exec's output before it died (as root it can open
/// `/proc/<pid>/fd/1` of the script) comes before the first `== <nonce>` and cannot name it.
/// Exits [`PROCESSES_LEFT`], after the processes still there, when some are left; [`NO_NONCE`]
/// when no nonce can be drawn; else as [`work::listing::after_kill_script`].
pub(super) fn handover_script(pruned: &[String], minutes: u64, limit: Duration) -> String {
    let s = crate::runner::sandbox::STATIC_SHELL_DIR;
    let rounds = limit.as_millis() / 50;
    format!(
        "{}; kill -9 -1 2>/dev/null; i=0; \
         while l; [ -n \"$o\" ] && [ $i -lt {rounds} ]; do \
         {s}/sleep 0.05 2>/dev/null && i=$((i+1)) || {{ {s}/sleep 1; i=$((i+20)); }}; \
         kill -9 -1 2>/dev/null; done; [ -z \"$o\" ] || {{ printf %s \"$o\"; exit {PROCESSES_LEFT}; }}; \
         r=$({s}/cat /proc/sys/kernel/random/uuid) && [ ${{#r}} = {NONCE_LEN} ] || exit {NO_NONCE}; \
         echo \"== $r\"; {}; printf %s \"$r\"; exit $t",
        list_processes(),
        work::listing::after_kill_script(pruned, minutes)
    )
}

/// What [`kill_script`] saw: the processes before the kill and those still there after it.
pub(super) fn parse_kill(out: &str) -> (Vec<String>, Vec<String>) {
    let mut parts = out.splitn(2, "--\n");
    let lines = |t: Option<&str>| -> Vec<String> {
        t.unwrap_or_default()
            .lines()
            .filter(|l| !l.trim().is_empty() && *l != "--")
            .map(str::to_string)
            .collect()
    };
    (lines(parts.next()), lines(parts.next()))
}

/// How many times an exec of skillscope's that was ended early is run again, PID 1 asked first
/// to end every other process ([`crate::runner::Sandbox::end_all_from_pid_1`]).
pub(super) const RETRIES: u32 = 3;

/// True when an exec's exit code says it was ended before it could finish: by a signal
/// (`128 + n`, as the shell reports it), before its program started (126: the runtime's setup
/// process was ended), or without a code.
pub(super) fn ended_early(code: Option<i64>) -> bool {
    code.is_none_or(|c| c == 126 || c > 128)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kill_script_uses_only_the_static_tools() {
        let s = kill_script();
        assert!(s.contains("; kill -9 -1"), "the shell's builtin: {s}");
        assert!(
            s.starts_with("kill -STOP -1 "),
            "stopped before anything else: {s}"
        );
        assert_eq!(
            parse_kill("12 1 S loop\n--\n"),
            (vec!["12 1 S loop".to_string()], Vec::new())
        );
        assert_eq!(parse_kill("--\n"), (Vec::new(), Vec::new()));
        for tool in ["cat", "sed"] {
            assert!(
                s.contains(&format!("/skillscope/static/{tool} ")),
                "{tool}: {s}"
            );
        }
    }

    #[test]
    fn an_exec_ended_early_is_told_from_an_exit() {
        assert!(ended_early(Some(137)) && ended_early(None) && ended_early(Some(126)));
        assert!(!ended_early(Some(0)) && !ended_early(Some(PROCESSES_LEFT)));
        assert!(!ended_early(Some(NO_NONCE)) && !ended_early(Some(128)));
    }
}
