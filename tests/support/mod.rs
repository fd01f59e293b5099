//! What the test binaries share: fixtures and helpers ([`common`]), running the binary
//! ([`process`]), the Acontext stand-in (`skillscope::acontext::standin`), the
//! scripted model server, private Docker daemons, and the builders of stores: trial rows of a
//! planned run ([`planned_run`]), a dashboard over a filled store ([`dashboard`]), an experiment in
//! its learn phase ([`learning_fixture`]). Each binary uses a part of it.

pub mod common;
pub mod container_gateway;
pub mod dashboard;
pub mod docker_tcp_proxy;
/// The Acontext stand-in the tests use is the one shipped in the binary.
#[allow(unused_imports)]
pub use skillscope::acontext::standin as fake_acontext;
pub mod glibc_image;
pub mod harness_env;
pub mod harness_run;
pub mod learning_fixture;
pub mod lifecycle;
pub mod planned_run;
pub mod private_dockerd;
pub mod process;
pub mod python_images;
pub mod scripted_model;
