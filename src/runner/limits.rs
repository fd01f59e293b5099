//! A task's CPU and memory request against what the Docker host has. A request above the host's
//! is cut to it (a container cannot have more CPUs than the machine), and the cut is said — in
//! the trial's `config.json` (`override_cpus` is what was applied; `environment.kwargs.clamped`
//! the request and the applied value), in the store (`trials.clamped`), in the report and in the
//! health check — because a task whose tests measure speedup can then fail for the host's size,
//! not the agent's work.

use serde::Serialize;

use super::DockerHost;
use crate::skillsbench::task::EnvironmentSection;

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
    /// Memory applied, MiB (`None`: no limit).
    pub memory_mb: Option<u64>,
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
        let memory_mb = env
            .memory_mb
            .map(|m| host_mb.map_or(m, |h| m.min(h.max(1))));
        Limits {
            cpus,
            memory_mb,
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

    /// The limits of a task on `host`.
    pub fn on(env: &EnvironmentSection, host: &DockerHost) -> Limits {
        Limits::of(env, host.ncpu, host.mem_total)
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
}
