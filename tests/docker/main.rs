//! Tests that need a real Docker daemon (CI starts one with `scripts/docker-up.sh`): the engine, the runner, faults with private daemons, the harness CLIs against a scripted model, experiments against the fake Acontext server, Harbor's models reading the files of real trials, and container output drawn by the dashboard.

#[allow(dead_code)]
#[path = "../support/mod.rs"]
mod support;

mod acontext_experiment;
mod acontext_learn;
mod acontext_wait;
mod baseline;
mod cli;
mod conditions;
mod faults;
mod harbor_conformance;
mod harbor_environments;
mod harness_agents;
mod hostile;
mod hostile_pytest;
mod outcomes;
mod own_init;
mod plan;
mod preflight;
mod read_only;
mod resume;
mod self_generated;
mod sequential;
mod sequential_stop;
mod shared_cases;
mod skill_exposure;
mod tui_hostile;
