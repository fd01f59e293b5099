//! skillscope runs and watches the SkillsBench × Acontext skill-learning evaluation: SkillsBench
//! tasks in Docker under skill conditions, results in SQLite, scored the way the paper scores them.
//!
//! Module map: [`skillsbench`] (tasks, skills, conditions, catalog — pure), [`store`] (SQLite),
//! [`runner`] (Docker: images, containers, agents, verifier, one trial), [`harbor`] (Harbor's
//! formats: job folders, ATIF, CTRF, rewards), [`import`] (Harbor jobs and published results into
//! the store), [`analysis`] (pass rates), [`engine`] (owns a run), [`preflight`] (checks before any trial), [`commands`], [`cli`] and
//! [`console`] (the binary and what it prints); docs/architecture.md has every layer.

pub mod acontext;
pub mod agent_logs;
pub mod analysis;
pub mod cli;
pub mod commands;
pub mod config;
pub mod console;
pub mod engine;
pub mod experiment;
pub mod fs_facts;
pub mod harbor;
pub mod import;
pub mod perf;
pub mod preflight;
pub mod report;
pub mod runner;
pub mod safe_fs;
pub mod skillsbench;
pub mod store;
pub mod text;
pub mod tui;
