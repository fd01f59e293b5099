//! A test that sets its process environment (an operator's variable passed with `--env NAME`), so
//! it runs alone in its own binary: setting the environment while other threads read it is not
//! race-free.

#[allow(dead_code)]
#[path = "../support/mod.rs"]
mod support;

mod settings;
