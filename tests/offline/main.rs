//! Tests that need no Docker daemon: the store, analysis, reports, imports, the Acontext client against the in-repo fake server, and the dashboard drawn into a test backend.

#[allow(dead_code)]
#[path = "../support/mod.rs"]
mod support;

mod acontext_client;
mod acontext_export;
mod analysis;
mod arguments;
mod baseline;
mod drift;
mod failure_categories;
mod import;
mod import_published;
mod leaderboard;
mod plan_forecast;
mod properties;
mod replay;
mod report;
mod rubric;
mod scoring;
mod sequential_design;
mod skillsbench_tasks;
mod status;
mod tables;
mod task_set;
mod tui_app;
mod tui_snapshots;
