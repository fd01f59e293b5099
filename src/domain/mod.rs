//! The nouns every layer shares, on the bottom floor: a trial attempt's status and outcome
//! and a judged failure's category ([`outcome`]), its row, key and plan ([`trial`]), a run and
//! its tasks ([`run`]), an attempt's tamper flag ([`tamper`]), what a set of trials ran with and
//! how two differ ([`provenance`]) and the one timestamp format ([`time`]). Plain data: no I/O,
//! no SQL. The store keeps them in SQLite, the runner reports them, Harbor's formats and
//! the analysis read them — each from here, so the runner knows nothing of the store.

pub mod outcome;
pub mod provenance;
pub mod run;
pub mod sequential;
pub mod tamper;
pub mod time;
pub mod trial;

pub(crate) use outcome::text_enum;
pub use outcome::{FailureCategory, Outcome, ParseEnumError, TrialStatus};
pub use run::{RunRow, RunTaskRow, TaskDrift, TaskSetPin, describe_drift};
pub use tamper::{CONTRADICTION_RULE, FlagKind, TAMPER_RULE, TamperFlag};
pub use time::now_rfc3339;
pub use trial::{SkillUseRow, TrialBrief, TrialKey, TrialPlan, TrialRow};
