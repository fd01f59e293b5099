//! Acontext: reachable, the key accepted, which API it offers (released or the `skill-bench`
//! branch's, [`crate::acontext::offer`]), the pipeline's routes answering — reads and no-op probes
//! on a nil id only, so nothing is created on the server.

use serde_json::json;

use super::{Check, timed};
use crate::acontext::learn::StatusMode;
use crate::acontext::{AcontextConfig, AcontextError, Client};

/// An id no session or task has: probes on it answer "not found" from a route that exists.
const NIL: &str = "00000000-0000-0000-0000-000000000000";

/// How to reach the server, and which verdict route the plan needs.
#[derive(Debug, Clone)]
pub struct Target {
    /// Connection settings (the key is redacted in `Debug`).
    pub config: AcontextConfig,
    /// The plan's status mode.
    pub status_mode: StatusMode,
    /// Where the key came from (`ACONTEXT_API_KEY`), for the fix.
    pub key_env: String,
}

/// The Acontext checks: the key with an authenticated read, then each route the pipeline calls.
/// When the server cannot be reached or refuses the key, the route checks are not tried (one
/// failure, one fix).
pub async fn checks(t: &Target) -> Vec<Check> {
    let mut config = t.config.clone();
    config.timeout = super::TIMEOUT;
    config.retries = 0;
    let client = match Client::new(&config) {
        Ok(c) => c,
        Err(e) => {
            return vec![Check::fail(
                "acontext",
                "client",
                e.to_string(),
                "check [acontext] base_url",
            )];
        }
    };
    let base = client.base_url().to_string();
    let first = timed(
        "acontext",
        "reachable, key accepted (GET /learning_spaces)",
        &format!("check that the server at {base} is up and reachable from here"),
        key_check(&client, t),
    )
    .await;
    if first.verdict == super::Verdict::Fail {
        return vec![first];
    }
    let mut out = vec![first];
    let probes: Vec<(&str, &str, String, Option<serde_json::Value>)> = vec![
        (
            "skill catalog (GET /agent_skills)",
            "GET",
            "/agent_skills".into(),
            None,
        ),
        (
            "sessions (GET /session/{id}/task)",
            "GET",
            format!("/session/{NIL}/task"),
            None,
        ),
    ];
    let routes = probes.into_iter().map(|(what, method, path, body)| {
        let client = client.clone();
        let base = base.clone();
        async move {
            timed(
                "acontext",
                what,
                &format!("check the server at {base}"),
                route_check(client, what, method, path, body),
            )
            .await
        }
    });
    out.extend(futures_util::future::join_all(routes).await);
    out.push(
        timed(
            "acontext",
            "API offered",
            &format!("check the server at {base}"),
            offer_check(&client, t.status_mode),
        )
        .await,
    );
    out.push(
        timed(
            "acontext",
            "task status PATCH",
            &format!("check the server at {base}"),
            status_check(&client, t.status_mode),
        )
        .await,
    );
    out
}

/// Which API the server offers, and whether the plan's status mode can pass verdicts to it:
/// `criteria` needs the project configs (released servers), `patch` the status PATCH (the
/// skill-bench branch), `auto` either.
async fn offer_check(client: &Client, mode: StatusMode) -> Check {
    let what = "API offered";
    let offer = match crate::acontext::offer::Offer::probe(client).await {
        Ok(o) => o,
        Err(e) => {
            return Check::fail(
                "acontext",
                what,
                e.to_string(),
                "check the server's logs; the learning phase would meet the same error",
            );
        }
    };
    let line = offer.describe();
    let missing = match mode {
        StatusMode::Criteria if !offer.project_configs => Some(
            "status_mode = criteria needs /project/configs (task criteria), which this server lacks; set status_mode = \"patch\" or \"auto\"",
        ),
        StatusMode::Auto if !offer.project_configs && !offer.status_patch => Some(
            "use an Acontext release (project criteria) or the skill-bench branch (status PATCH)",
        ),
        _ => None,
    };
    match missing {
        Some(fix) => Check::fail("acontext", what, line, fix),
        None => Check::ok("acontext", what, line).costing("free (no-op probes on a nil id)"),
    }
}

async fn key_check(client: &Client, t: &Target) -> Check {
    let what = "reachable, key accepted (GET /learning_spaces)";
    match client
        .probe("GET", "/learning_spaces", &[("limit", "1".into())], None)
        .await
    {
        Ok(_) => Check::ok("acontext", what, format!("{} answered", client.base_url()))
            .costing("free (a read)"),
        Err(AcontextError::Api {
            status: 401 | 403,
            msg,
            ..
        }) => Check::fail(
            "acontext",
            what,
            format!("the server refused the key in {} ({msg})", t.key_env),
            format!(
                "set {} to a project key (sk-ac-…) of the server at {}",
                t.key_env,
                client.base_url()
            ),
        ),
        Err(e @ AcontextError::Transport { .. }) => Check::fail(
            "acontext",
            what,
            e.to_string(),
            format!(
                "start the server or fix [acontext] base_url / ACONTEXT_BASE_URL (now {})",
                client.base_url()
            ),
        ),
        Err(e @ AcontextError::RouteMissing { .. }) => Check::fail(
            "acontext",
            what,
            e.to_string(),
            "the base URL must end in the API's prefix, e.g. http://host:8029/api/v1",
        ),
        Err(e) => Check::fail(
            "acontext",
            what,
            e.to_string(),
            "check the server's logs; the learning phase would meet the same error",
        ),
    }
}

/// A route exists when it answers with an envelope — data, or an error about the (nil) resource.
async fn route_check(
    client: Client,
    what: &str,
    method: &str,
    path: String,
    body: Option<serde_json::Value>,
) -> Check {
    let query: Vec<(&str, String)> = if path.ends_with("_skills") {
        vec![("limit", "1".into())]
    } else {
        Vec::new()
    };
    match client.probe(method, &path, &query, body).await {
        Ok(_) => Check::ok("acontext", what, "answered").costing("free (a read)"),
        Err(AcontextError::Api { status, .. })
            if status < 500 && status != 401 && status != 403 =>
        {
            Check::ok(
                "acontext",
                what,
                format!("answered (HTTP {status} for a nil id)"),
            )
            .costing("free (a read)")
        }
        Err(e @ AcontextError::RouteMissing { .. }) => Check::fail(
            "acontext",
            what,
            e.to_string(),
            "this server lacks a route the learning pipeline calls; use a current Acontext release",
        ),
        Err(e) => Check::fail(
            "acontext",
            what,
            e.to_string(),
            "check the server's logs; the learning phase would meet the same error",
        ),
    }
}

/// Whether verdicts can reach the server the way the plan says: the status PATCH (the
/// `skill-bench` server) for `patch`; either way for `auto` (which one is said); nothing to
/// check for `criteria`.
async fn status_check(client: &Client, mode: StatusMode) -> Check {
    let what = "task status PATCH";
    if mode == StatusMode::Criteria {
        return Check::ok(
            "acontext",
            what,
            "not needed: status_mode = criteria (verdict lines and project criteria)",
        );
    }
    let r = client
        .probe(
            "PATCH",
            &format!("/session/{NIL}/task/{NIL}/status"),
            &[],
            Some(json!({ "status": "success" })),
        )
        .await;
    let present = match &r {
        Ok(_) => true,
        Err(AcontextError::Api { status, .. }) => *status < 500,
        Err(_) => false,
    };
    match (r, mode) {
        (_, StatusMode::Auto) if present => Check::ok(
            "acontext",
            what,
            "present: verdicts will be set with the PATCH (status_mode auto → patch)",
        )
        .costing("free (a no-op on a nil id)"),
        (Err(AcontextError::RouteMissing { .. }), StatusMode::Auto) => Check::ok(
            "acontext",
            what,
            "absent: verdicts will go as verdict lines and project criteria (status_mode auto → criteria)",
        )
        .costing("free (a no-op on a nil id)"),
        (_, StatusMode::Patch) if present => Check::ok("acontext", what, "present")
            .costing("free (a no-op on a nil id)"),
        (Err(e @ AcontextError::RouteMissing { .. }), _) => Check::fail(
            "acontext",
            what,
            format!("status_mode = patch, but {e}"),
            "set [acontext] status_mode = \"criteria\" (or \"auto\"), or use a server with manual task status (the skill-bench branch)",
        ),
        (Err(e), _) => Check::fail(
            "acontext",
            what,
            e.to_string(),
            "check the server's logs; the learning phase would meet the same error",
        ),
        (Ok(_), _) => Check::ok("acontext", what, "present"),
    }
}
