//! A task's CPU and memory request against what the Docker host has. A request above the host's
//! is cut to it (a container cannot have more CPUs than the machine), and the cut is said — in
//! the trial's `config.json` (`override_cpus` is what was applied; `environment.kwargs.clamped`
//! the request and the applied value), in the store (`trials.clamped`), in the report and in the
//! health check — because a task whose tests measure speedup can then fail for the host's size,
//! not the agent's work.
//!
//! Every trial container also gets a memory ceiling when its task sets none
//! ([`DEFAULT_MEMORY_MB`], cut to the host's) and a process limit (`[environment] pids_limit`,
//! else [`DEFAULT_PIDS_LIMIT`]).

use serde::Serialize;

use super::backend::Capacity;
pub use crate::skillsbench::task::DEFAULT_PIDS_LIMIT;
use crate::skillsbench::task::EnvironmentSection;

/// The memory ceiling of a trial's container when its task sets no `memory_mb`, MiB (the value
/// most SkillsBench tasks ask for; cut to the host's memory). Not reserved by the scheduler: a
/// ceiling, not a request.
pub const DEFAULT_MEMORY_MB: u64 = 4096;

/// A request and what was applied.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Cut<T> {
    /// What the task asked (`[environment] cpus`, `memory_mb`).
    pub requested: T,
    /// What the container got.
    pub applied: T,
}

/// The limits a trial's container gets, and what was cut.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Limits {
    /// CPUs applied (`None`: no limit).
    pub cpus: Option<f64>,
    /// Memory applied, MiB (`None`: no limit): the task's request (cut to the host's), else
    /// [`DEFAULT_MEMORY_MB`] (cut likewise).
    pub memory_mb: Option<u64>,
    /// The process limit applied (`[environment] pids_limit`, else [`DEFAULT_PIDS_LIMIT`]).
    pub pids_limit: u64,
    /// The CPU request cut to the host's CPUs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus_clamped: Option<Cut<f64>>,
    /// The memory request cut to the host's memory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_clamped: Option<Cut<u64>>,
}

impl Limits {
    /// The task's request on a host with `ncpu` CPUs and `mem_total` bytes of memory (0 or less:
    /// unknown, nothing cut).
    pub fn of(env: &EnvironmentSection, ncpu: u32, mem_total: i64) -> Limits {
        let host_cpus = f64::from(ncpu.max(1));
        let host_mb = (mem_total > 0).then_some((mem_total as u64) >> 20);
        let cpus = env.cpus.map(|c| c.min(host_cpus));
        let cut = |m: u64| host_mb.map_or(m, |h| m.min(h.max(1)));
        let memory_mb = env.memory_mb.map(cut);
        Limits {
            cpus,
            memory_mb: memory_mb.or(Some(cut(DEFAULT_MEMORY_MB))),
            pids_limit: env.pids_limit.unwrap_or(DEFAULT_PIDS_LIMIT),
            cpus_clamped: env
                .cpus
                .zip(cpus)
                .filter(|(r, a)| a < r)
                .map(|(requested, applied)| Cut { requested, applied }),
            memory_clamped: env
                .memory_mb
                .zip(memory_mb)
                .filter(|(r, a)| a < r)
                .map(|(requested, applied)| Cut { requested, applied }),
        }
    }

    /// The limits of a task on a host offering `capacity`.
    pub fn on(env: &EnvironmentSection, capacity: Capacity) -> Limits {
        Limits::of(env, capacity.cpus, capacity.memory_bytes)
    }

    /// What was cut, as stored in `trials.clamped` and the trial's `config.json`:
    /// `{"cpus": {"requested": 8.0, "applied": 2.0}, "memory_mb": {…}}`; `None` when nothing was.
    pub fn clamped(&self) -> Option<serde_json::Value> {
        let mut m = serde_json::Map::new();
        if let Some(c) = &self.cpus_clamped {
            m.insert("cpus".into(), serde_json::json!(c));
        }
        if let Some(c) = &self.memory_clamped {
            m.insert("memory_mb".into(), serde_json::json!(c));
        }
        (!m.is_empty()).then_some(serde_json::Value::Object(m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_above_the_host_are_cut_and_said() {
        let env = EnvironmentSection {
            cpus: Some(8.0),
            memory_mb: Some(16384),
            ..Default::default()
        };
        let l = Limits::of(&env, 2, 8 * 1024 * 1024 * 1024);
        assert_eq!((l.cpus, l.memory_mb), (Some(2.0), Some(8192)));
        assert_eq!(
            l.clamped().unwrap(),
            serde_json::json!({"cpus": {"requested": 8.0, "applied": 2.0}, "memory_mb": {"requested": 16384, "applied": 8192}})
        );
        let fits = EnvironmentSection {
            cpus: Some(1.0),
            memory_mb: Some(256),
            ..Default::default()
        };
        let l = Limits::of(&fits, 2, 0);
        assert_eq!(
            (l.cpus, l.memory_mb, l.clamped()),
            (Some(1.0), Some(256), None)
        );
        assert_eq!(
            Limits::of(&EnvironmentSection::default(), 2, 1 << 30).clamped(),
            None
        );
    }

    /// A task that sets no memory gets the default ceiling (cut to a smaller host, and that cut
    /// is no request's, so nothing is marked clamped); the process limit is the task's or the
    /// default.
    #[test]
    fn defaults_bound_memory_and_processes() {
        let none = EnvironmentSection::default();
        let l = Limits::of(&none, 2, 64 << 30);
        assert_eq!(
            (l.memory_mb, l.pids_limit),
            (Some(DEFAULT_MEMORY_MB), DEFAULT_PIDS_LIMIT)
        );
        let small = Limits::of(&none, 2, 1 << 30);
        assert_eq!((small.memory_mb, small.clamped()), (Some(1024), None));
        let raised = EnvironmentSection {
            pids_limit: Some(8192),
            ..Default::default()
        };
        assert_eq!(Limits::of(&raised, 2, 0).pids_limit, 8192);
    }
}
