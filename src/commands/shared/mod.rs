//! What the commands share, so that no command imports another: signal handling, progress, output
//! redirection and theme choice ([`session`]), the tables they print ([`table`]), the run request
//! from flags and the config file ([`request`]), Acontext client setup and learning output
//! ([`acontext`]), a run's status ([`status`]), what a plan stands for and its dry run ([`plan`])
//! and the preflight's inputs and table ([`preflight`]).

pub mod acontext;
pub mod plan;
pub mod preflight;
pub mod request;
pub mod session;
pub mod status;
pub mod table;
