//! What the commands share, so that no command imports another: signal handling, progress, output
//! redirection and theme choice ([`session`]), the tables they print ([`table`]), the run request
//! from flags and the config file ([`request`]), Acontext client setup and learning output
//! ([`acontext`]), a run's status ([`status`]), what a plan stands for and its dry run ([`plan_setup`])
//! the preflight's inputs and table ([`preflight`]) and the forecast's tables ([`forecast`]).

pub mod acontext;
pub mod forecast;
pub mod plan_setup;
pub mod preflight;
pub mod request;
pub mod session;
pub mod status;
pub mod table;
