//! Tests of the dashboard in a real terminal (tmux) over a real run.

#[allow(dead_code)]
#[path = "../support/mod.rs"]
mod support;

mod status_notes;
mod tui_keys;
mod tui_tmux;
