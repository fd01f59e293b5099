//! What the commands share, so that no command imports another: signal handling ([`signals`]),
//! headless progress and the run's start and end in its event log ([`progress`]), the log of a
//! run without a terminal ([`headless`]), the command that resumes a run ([`resume`]), the
//! dashboard's theme ([`theme`]), the tables they print ([`table`]), the run request
//! from flags and the config file ([`request`]), Acontext client setup and learning output
//! ([`acontext`]), a run's status ([`status`]), what a plan stands for and its dry run ([`plan_setup`])
//! the preflight's inputs and table ([`preflight`]) and the forecast's tables ([`forecast`]).

pub mod acontext;
pub mod forecast;
pub mod headless;
pub mod plan_setup;
pub mod preflight;
pub mod progress;
pub mod request;
pub mod resume;
pub mod signals;
pub mod status;
pub mod table;
pub mod theme;
