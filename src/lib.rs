//! skillscope runs and watches the SkillsBench × Acontext skill-learning evaluation: SkillsBench
//! tasks in Docker under skill conditions, results in SQLite, scored the way the paper scores them.
//!
//! The modules below are layers, listed from the bottom floor up: a module imports only those
//! above it in this list (`scripts/check-cycles.py` keeps each folder free of cycles).
//! docs/architecture.md follows one trial through them.

// Floor 1: the nouns and the pure domain.
pub mod domain; // a trial's status, outcome, row, key and plan; a run; timestamps
pub mod format; // number formats every output shares: rate, pp, g, CI, undefined
pub mod fs; // files in folders a container can write: no link followed, reads capped
pub mod sanitize; // untrusted text made safe for a terminal
pub mod skillsbench;
pub mod toml_text; // TOML files as written: a key's line and column, syntax errors in one line // tasks, task.toml, SKILL.md, conditions, Dockerfiles, compose, catalog
// Floor 2: storage and settings.
pub mod config; // skillscope.toml and run settings
pub mod console; // the one error line, colour rules, tables fitted to the terminal
pub mod store; // SQLite: schema, the single writer, typed ledgers, queries
// Floor 3: formats.
pub mod harbor; // Harbor's formats: job and trial folders, ATIF, CTRF, rewards
// Floor 4: what is read, learned and scored.
pub mod acontext; // the Acontext client, learning, export, the stand-in server
pub mod agent_logs; // the harnesses' native logs: trajectory, tokens, cost, provider failures
pub mod analysis; // Method D, Δ, g, CIs, comparisons, hypotheses, the rubric, the health check
// Floor 5: Docker, imports and reports.
pub mod import; // Harbor jobs, the published CSV and registry into the store
pub mod report; // skillscope report: Markdown, CSV, charts
pub mod runner; // Docker: images, containers, agents, verifier, one trial
// Floor 6: a run.
pub mod cli; // the command line (clap)
pub mod engine; // owns a run: registering, scheduling, hosts, attempts
// Floor 7: what builds on runs.
pub mod experiment; // the two-round experiment, its plan and forecast
pub mod perf; // skillscope bench: runner, import and analysis benchmarks
pub mod preflight; // checks before any trial starts
// Floor 8: the dashboard.
pub mod tui; // the dashboard: screens, views, worker, keys and themes as data
// Floor 9: the subcommands.
pub mod commands; // one file per subcommand
