//! Harbor interop: the job/trial folder layout and its JSON files, ATIF trajectories, CTRF test
//! reports and the evidence a reward must agree with, the verifier's reward files, and what is read out of trajectories (summaries for the
//! learning phase, skill use). Importing Harbor job folders into the store is [`crate::import`].

pub mod agreement;
pub mod atif;
pub mod ctrf;
pub mod error_policy;
pub mod jobdir;
pub mod lock;
pub mod result;
pub mod reward;
pub mod skill_use;
pub mod summary;
