//! Group-sequential designs for the evaluation's paired Method D comparisons: look at the data
//! at stage boundaries (after every task's trial 1, 2, … in both conditions), stop a comparison
//! once its question is answered, and say what the estimate is after stopping.
//!
//! - [`spending`]: Lan–DeMets O'Brien–Fleming-type α- and β-spending functions.
//! - [`recursion`]: the recursive numerical integration of crossing probabilities.
//! - [`boundaries`]: efficacy bounds, non-binding futility bounds, power, stopping probabilities.
//! - [`design`]: a design, the paired statistic and the decision at a look ([`design::evaluate`]).
//! - [`estimate`]: the median-unbiased estimate and stage-wise-ordering interval after stopping.
//! - [`live`]: the design the engine applies during a run, and its look at a stage boundary.
//! - [`planned`]: the design `plan` prints for a comparison, with its bounds in pp.
//! - [`replay`]: a design applied to finished data stage by stage, and simulated.
//! - [`signflip`]: the within-task sign-flip test at each look, exact at any number of tasks.
//! - [`normal`], [`roots`]: the normal distribution and Brent's root finder they rest on.

pub mod boundaries;
pub mod design;
pub mod estimate;
pub mod live;
pub mod normal;
pub mod planned;
pub mod recursion;
pub mod replay;
pub mod roots;
pub mod signflip;
pub mod spending;

#[cfg(test)]
mod properties;
