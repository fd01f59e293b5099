//! The model provider of an LLM harness: its key and model accepted by the cheapest call that
//! proves them — the provider's models endpoint, which costs nothing (Anthropic `GET
//! /v1/models/{model}`, OpenAI `GET /models`, Gemini `GET /v1beta/models/{model}`), at the base
//! URL the harness will use (`ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL`, `GOOGLE_GEMINI_BASE_URL`, as
//! a proxy sets them). The oracle and nop agents call no model.

use reqwest::StatusCode;
use serde_json::Value;

use super::{Check, timed};
use crate::runner::agents::harness::{Harness, key_vars};

/// What a models call costs.
const FREE: &str = "free (models endpoint, no tokens)";

/// The provider check of `agent` with `model` (none for the oracle and nop).
pub async fn checks(agent: &str, model: Option<&str>) -> Vec<Check> {
    let Some(h) = Harness::from_name(agent) else {
        return Vec::new();
    };
    let what = format!(
        "{} key and model{}",
        provider_name(h),
        model.map(|m| format!(" {m}")).unwrap_or_default()
    );
    let Some((var, key)) = key_vars(h).iter().find_map(|v| {
        std::env::var(v)
            .ok()
            .filter(|k| !k.is_empty())
            .map(|k| (*v, k))
    }) else {
        return vec![Check::fail(
            "provider",
            what,
            format!("no key: {} is not set", key_vars(h).join(" or ")),
            format!("export {}=… (the agent's provider key)", key_vars(h)[0]),
        )];
    };
    let call = Call {
        h,
        var,
        key,
        model: model.map(str::to_string),
    };
    let base = call.base();
    vec![
        timed(
            "provider",
            &what,
            &format!("check that {base} is reachable from here (a proxy, a firewall)"),
            call.check(what.clone()),
        )
        .await,
    ]
}

fn provider_name(h: Harness) -> &'static str {
    match h {
        Harness::ClaudeCode => "Anthropic",
        Harness::Codex => "OpenAI",
        Harness::GeminiCli => "Gemini",
    }
}

/// One provider call: the harness, the variable holding the key and its value (never shown).
struct Call {
    h: Harness,
    var: &'static str,
    key: String,
    model: Option<String>,
}

impl Call {
    /// The base URL the harness will use.
    fn base(&self) -> String {
        let (var, default) = match self.h {
            Harness::ClaudeCode => ("ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
            Harness::Codex => ("OPENAI_BASE_URL", "https://api.openai.com/v1"),
            Harness::GeminiCli => (
                "GOOGLE_GEMINI_BASE_URL",
                "https://generativelanguage.googleapis.com",
            ),
        };
        std::env::var(var)
            .ok()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| default.to_string())
            .trim_end_matches('/')
            .to_string()
    }

    /// A Claude Code model alias (`sonnet`, `opus[1m]`, `opusplan`, `default`) that Claude Code
    /// resolves itself: only the key can be checked.
    fn alias(&self) -> bool {
        self.h == Harness::ClaudeCode
            && self.model.as_deref().is_some_and(|m| {
                matches!(
                    m.trim_end_matches("[1m]"),
                    "default" | "sonnet" | "opus" | "haiku" | "opusplan"
                )
            })
    }

    /// The request: URL and headers.
    fn request(&self, http: &reqwest::Client) -> reqwest::RequestBuilder {
        let base = self.base();
        let model = self.model.as_deref().filter(|_| !self.alias());
        match self.h {
            Harness::ClaudeCode => {
                let url = match model {
                    Some(m) => format!("{base}/v1/models/{m}"),
                    None => format!("{base}/v1/models?limit=1"),
                };
                let req = http.get(url).header("anthropic-version", "2023-06-01");
                if self.var == "ANTHROPIC_AUTH_TOKEN" {
                    req.bearer_auth(&self.key)
                } else {
                    req.header("x-api-key", &self.key)
                }
            }
            Harness::Codex => {
                let url = match model {
                    Some(m) => format!("{base}/models/{m}"),
                    None => format!("{base}/models"),
                };
                http.get(url).bearer_auth(&self.key)
            }
            Harness::GeminiCli => {
                let url = match model {
                    Some(m) => format!("{base}/v1beta/models/{m}"),
                    None => format!("{base}/v1beta/models?pageSize=1"),
                };
                http.get(url).header("x-goog-api-key", &self.key)
            }
        }
    }

    async fn check(self, what: String) -> Check {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = match reqwest::Client::builder()
            .timeout(super::TIMEOUT)
            .connect_timeout(std::time::Duration::from_secs(5))
            .build()
        {
            Ok(c) => c,
            Err(e) => return Check::fail("provider", what, e.to_string(), "report this as a bug"),
        };
        let base = crate::acontext::client::public_base_url(&self.base());
        let resp = match self.request(&http).send().await {
            Ok(r) => r,
            Err(e) => {
                return Check::fail(
                    "provider",
                    what,
                    format!(
                        "cannot reach {base}: {}",
                        if e.is_timeout() {
                            "timed out"
                        } else if e.is_connect() {
                            "cannot connect"
                        } else {
                            "request failed"
                        }
                    ),
                    format!("check the network path to {base} (or the base-URL variable)"),
                );
            }
        };
        let status = resp.status();
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        self.judge(what, &base, status, &body)
    }

    /// The verdict on the provider's answer.
    fn judge(&self, what: String, base: &str, status: StatusCode, body: &Value) -> Check {
        let var = self.var;
        let message = provider_message(body);
        let refused = status == StatusCode::UNAUTHORIZED
            || status == StatusCode::FORBIDDEN
            || (self.h == Harness::GeminiCli
                && status == StatusCode::BAD_REQUEST
                && message.to_lowercase().contains("key"));
        if refused {
            return Check::fail(
                "provider",
                what,
                format!(
                    "the provider at {base} refused the key in {var} (HTTP {}{})",
                    status.as_u16(),
                    if message.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", crate::sanitize::head(&message, 120))
                    }
                ),
                format!("set {var} to a valid key for {base}"),
            )
            .costing(FREE);
        }
        let model = self.model.as_deref();
        if status == StatusCode::NOT_FOUND {
            // A 404 without the provider's error body: the endpoint itself is missing (a gateway).
            let endpoint_missing = !body.get("error").is_some_and(Value::is_object);
            return match (self.h, model) {
                (_, _) if endpoint_missing => Check::warn(
                    "provider",
                    what,
                    format!("{base} has no models endpoint; the key and model were not verified"),
                    "the first trial will show whether the key and model work",
                ),
                (_, Some(m)) => Check::fail(
                    "provider",
                    what,
                    format!("the provider at {base} does not know model {m} (HTTP 404)"),
                    "use a model id the provider lists (its models endpoint), e.g. claude-opus-4-6",
                ),
                (_, None) => Check::warn(
                    "provider",
                    what,
                    format!("{base} has no models endpoint; the key was not verified"),
                    "the first trial will show whether the key works",
                ),
            }
            .costing(FREE);
        }
        if !status.is_success() {
            return Check::warn(
                "provider",
                what,
                format!(
                    "the provider answered HTTP {}{}",
                    status.as_u16(),
                    if message.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", crate::sanitize::head(&message, 120))
                    }
                ),
                "a provider failure during the run is retried, never counted against a task",
            )
            .costing(FREE);
        }
        let detail = match model {
            Some(m) if self.alias() => format!(
                "key in {var} accepted by {base}; model {m} is an alias Claude Code resolves"
            ),
            Some(m) => format!("key in {var} accepted by {base}; model {m} available"),
            None => format!("key in {var} accepted by {base} (the harness's default model)"),
        };
        Check::ok("provider", what, detail).costing(FREE)
    }
}

/// The error message of a provider's error body (Anthropic, OpenAI and Gemini shapes).
fn provider_message(body: &Value) -> String {
    body.pointer("/error/message")
        .or_else(|| body.get("message"))
        .and_then(Value::as_str)
        .map(crate::sanitize::text)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(h: Harness, model: Option<&str>) -> Call {
        Call {
            h,
            var: "ANTHROPIC_API_KEY",
            key: "sk-secret".into(),
            model: model.map(str::to_string),
        }
    }

    #[test]
    fn answers_are_judged_as_a_run_would_meet_them() {
        let c = call(Harness::ClaudeCode, Some("claude-opus-4-6"));
        let base = "http://p";
        let ok = c.judge(
            "w".into(),
            base,
            StatusCode::OK,
            &json!({"id": "claude-opus-4-6"}),
        );
        assert_eq!(ok.verdict, super::super::Verdict::Ok);
        assert_eq!(ok.cost, FREE);
        let refused = c.judge(
            "w".into(),
            base,
            StatusCode::UNAUTHORIZED,
            &json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
        );
        assert_eq!(refused.verdict, super::super::Verdict::Fail);
        assert!(
            refused.detail.contains("ANTHROPIC_API_KEY")
                && refused.detail.contains("invalid x-api-key")
        );
        assert!(!format!("{refused:?}").contains("sk-secret"));
        let unknown = c.judge(
            "w".into(),
            base,
            StatusCode::NOT_FOUND,
            &json!({"type": "error", "error": {"type": "not_found_error", "message": "model: x"}}),
        );
        assert!(
            unknown.detail.contains("does not know model"),
            "{unknown:?}"
        );
        // A gateway without the endpoint: not verified, not failed.
        let gateway = c.judge("w".into(), base, StatusCode::NOT_FOUND, &json!(null));
        assert_eq!(gateway.verdict, super::super::Verdict::Warn);
        let busy = c.judge(
            "w".into(),
            base,
            StatusCode::from_u16(529).unwrap(),
            &json!({}),
        );
        assert_eq!(busy.verdict, super::super::Verdict::Warn);
        // Claude Code aliases are resolved by the CLI: only the key is checked.
        assert!(call(Harness::ClaudeCode, Some("sonnet")).alias());
        assert!(call(Harness::ClaudeCode, Some("opus[1m]")).alias());
        assert!(!call(Harness::ClaudeCode, Some("claude-sonnet-4-5")).alias());
        assert!(!call(Harness::ClaudeCode, Some("no-such-model")).alias());
    }
}
