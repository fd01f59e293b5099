//! Tests against real model providers: `#[ignore]`d, run them with `cargo test --test live -- --ignored` and a provider key in the environment.

#[allow(dead_code)]
#[path = "../support/mod.rs"]
mod support;

mod harness_live;
