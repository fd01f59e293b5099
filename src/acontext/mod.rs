//! Acontext: the REST client, the learning pipeline (trajectories → learning spaces) and skill
//! export (learning spaces → SkillsBench `skills/` folders).

pub mod availability;
pub mod client;
pub mod export;
pub mod learn;
pub mod model;
pub mod offer;
pub mod standin;
pub mod versions;

pub use client::{AcontextConfig, AcontextError, Client};
