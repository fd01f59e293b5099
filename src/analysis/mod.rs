//! Scoring: pass rates the way the SkillsBench paper computes them, their confidence intervals,
//! the evaluation plan's comparisons and breakdowns, the paper's reference numbers, the skill
//! quality rubric, and — before the money is spent — power and the plan's cost ([`power`],
//! [`forecast`]).

pub mod ci;
pub mod exposure;
pub mod failure_category;
pub mod forecast;
pub mod health_check;
pub mod hypotheses;
pub mod invocations;
pub mod metrics;
pub mod noise;
pub mod paper;
pub mod pass_at_k;
pub mod power;
pub mod results;
pub mod rubric;
pub mod sequential;
pub mod skill_content;
pub mod spend;
pub mod success;
pub mod tamper;
