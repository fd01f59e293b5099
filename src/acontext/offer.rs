//! Which Acontext API a server offers: the released one (main, Python SDK 0.1.22), the
//! `skill-bench` branch's, or the released one with the branch's status PATCH. Acontext has no
//! version endpoint and the branch's swagger was not regenerated, so it is told by route probes on
//! a nil id, which change nothing: a route that exists answers with an envelope (an error about
//! the nil resource), a route that does not answers gin's plain-text 404
//! ([`AcontextError::RouteMissing`]).
//!
//! | probe | released | skill-bench |
//! |---|---|---|
//! | `PATCH /session/{nil}/task/{nil}/status` | plain 404 | envelope 404 |
//! | `GET /project/configs` | 200 | plain 404 |
//! | `GET /agent_skills/{nil}/download_zip` | envelope 404 | plain 404 |

use serde_json::json;

use super::{AcontextError, Client};

/// An id no session, task or skill has.
const NIL: &str = "00000000-0000-0000-0000-000000000000";

/// What the probes found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offer {
    /// `PATCH /session/{id}/task/{task_id}/status` exists (manual task status).
    pub status_patch: bool,
    /// `/project/configs` exists (task success/failure criteria).
    pub project_configs: bool,
    /// `GET /agent_skills/{id}/download_zip` exists (exports as one ZIP per skill).
    pub download_zip: bool,
}

/// Which API, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Acontext as released (main, SDK 0.1.22).
    Released,
    /// The `skill-bench` branch.
    SkillBench,
    /// The released API with the branch's status PATCH.
    ReleasedWithStatusPatch,
    /// Some other mix of these routes.
    Other,
}

impl Offer {
    /// Probes `client`'s server (three requests on a nil id; nothing is created or changed).
    ///
    /// # Errors
    /// The first error that is not an answer about the nil resource or a missing route
    /// (unreachable server, refused key, 5xx).
    pub async fn probe(client: &Client) -> Result<Offer, AcontextError> {
        let exists = |r: Result<serde_json::Value, AcontextError>| match r {
            Ok(_) => Ok(true),
            Err(AcontextError::RouteMissing { .. }) => Ok(false),
            Err(AcontextError::Api { status, .. })
                if status < 500 && status != 401 && status != 403 =>
            {
                Ok(true)
            }
            Err(e) => Err(e),
        };
        let status_patch = exists(
            client
                .probe(
                    "PATCH",
                    &format!("/session/{NIL}/task/{NIL}/status"),
                    &[],
                    Some(json!({ "status": "failed" })),
                )
                .await,
        )?;
        let project_configs = exists(client.probe("GET", "/project/configs", &[], None).await)?;
        let download_zip = exists(
            client
                .probe(
                    "GET",
                    &format!("/agent_skills/{NIL}/download_zip"),
                    &[],
                    None,
                )
                .await,
        )?;
        Ok(Offer {
            status_patch,
            project_configs,
            download_zip,
        })
    }

    /// Which API these routes make.
    pub fn kind(&self) -> Kind {
        match (self.status_patch, self.project_configs, self.download_zip) {
            (false, true, true) => Kind::Released,
            (true, false, false) => Kind::SkillBench,
            (true, true, true) => Kind::ReleasedWithStatusPatch,
            _ => Kind::Other,
        }
    }

    /// One line for the operator: which API, how verdicts reach it, its learning statuses, how
    /// exports download.
    pub fn describe(&self) -> String {
        let what = match self.kind() {
            Kind::Released => "the released API (main, SDK 0.1.22)",
            Kind::SkillBench => "the skill-bench branch's API",
            Kind::ReleasedWithStatusPatch => {
                "the released API with the skill-bench branch's status PATCH"
            }
            Kind::Other => "an Acontext API of its own mix",
        };
        let verdicts = match (self.status_patch, self.project_configs) {
            (true, true) => "verdicts by status PATCH (or project criteria)",
            (true, false) => "verdicts by status PATCH; no project criteria",
            (false, true) => "verdicts by project criteria and verdict lines; no status PATCH",
            (false, false) => "no way to pass verdicts (neither status PATCH nor project criteria)",
        };
        let statuses = match self.kind() {
            Kind::SkillBench => "learning statuses pending → running → completed/failed",
            _ if self.project_configs => {
                "learning statuses pending → distilling → skill_writing → queued → completed/failed"
            }
            _ => "learning statuses pending … completed/failed",
        };
        let exports = if self.download_zip {
            "exports as one ZIP per skill"
        } else {
            "exports file by file (no download_zip)"
        };
        format!("{what}: {verdicts}; {statuses}; {exports}")
    }
}
