//! The Acontext REST client (`shared/acontext/openapi.json`, base `…/api/v1`).
//!
//! Every call sends `Authorization: Bearer <key>` and unwraps the `{code, data, msg}` envelope:
//! an HTTP status ≥ 400 or a body `code` ≥ 400 is an [`AcontextError::Api`] carrying the endpoint,
//! HTTP status, code and message. Transport failures, 5xx and 429 are retried with exponential
//! backoff and jitter (`backon`); other 4xx are not. A 404/405 whose body is not an envelope means
//! the route does not exist on this server ([`AcontextError::RouteMissing`]) — how optional
//! endpoints are detected. Cursor-paginated lists (`limit` ≤ 200, `cursor`, `has_more`) are read
//! page by page. The API key is never logged, stored or shown: `Debug` redacts it and errors
//! never carry it.

use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use futures_util::{Stream, TryStreamExt, stream};
use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::model::*;

/// Default base URL: a self-hosted server (`acontext server up`).
pub const DEFAULT_BASE_URL: &str = "http://localhost:8029/api/v1";
/// Least time a flush may take: it runs the task agent (LLM calls) before answering.
pub const FLUSH_TIMEOUT: Duration = Duration::from_secs(600);
/// Largest page the API serves.
pub const MAX_PAGE: u32 = 200;

/// Client errors.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AcontextError {
    /// The server answered with an error.
    #[error("{endpoint}: HTTP {status}, code {code}: {msg}")]
    Api {
        /// `METHOD /path` at the base URL.
        endpoint: String,
        /// HTTP status.
        status: u16,
        /// Envelope `code` (the HTTP status when there was no envelope).
        code: i64,
        /// Envelope `msg` (and `error` when the server sent one).
        msg: String,
    },
    /// The route does not exist on this server (404/405 without an envelope).
    #[error("{endpoint}: not available on this server (HTTP {status})")]
    RouteMissing {
        /// `METHOD /path` at the base URL.
        endpoint: String,
        /// HTTP status.
        status: u16,
    },
    /// The server could not be reached (after retries).
    #[error("{endpoint}: {message}")]
    Transport {
        /// `METHOD /path` at the base URL.
        endpoint: String,
        /// What failed.
        message: String,
        /// The connection was never made, so the server did nothing.
        connect: bool,
    },
    /// The answer did not have the expected shape.
    #[error("{endpoint}: unexpected response: {message}")]
    Decode {
        /// `METHOD /path` at the base URL.
        endpoint: String,
        /// What was wrong.
        message: String,
    },
    /// Settings are missing or wrong.
    #[error("{0}")]
    Config(String),
}

impl AcontextError {
    /// Safe to retry a request that is not idempotent: the server certainly did not act (no
    /// connection, or 429 Too Many Requests).
    pub fn is_unsent(&self) -> bool {
        match self {
            AcontextError::Transport { connect, .. } => *connect,
            AcontextError::Api { status, .. } => *status == 429,
            _ => false,
        }
    }

    /// Worth retrying: transport errors, 5xx and 429.
    pub fn is_retryable(&self) -> bool {
        match self {
            AcontextError::Transport { .. } => true,
            AcontextError::Api { status, .. } => *status >= 500 || *status == 429,
            _ => false,
        }
    }

    /// HTTP status of an API error.
    pub fn status(&self) -> Option<u16> {
        match self {
            AcontextError::Api { status, .. } | AcontextError::RouteMissing { status, .. } => {
                Some(*status)
            }
            _ => None,
        }
    }
}

/// Connection settings.
#[derive(Clone)]
pub struct AcontextConfig {
    /// Base URL, e.g. `http://localhost:8029/api/v1`.
    pub base_url: String,
    /// Project key (`sk-ac-…`).
    pub api_key: String,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Retries for transport errors, 5xx and 429.
    pub retries: usize,
    /// Upper bound of one backoff wait.
    pub max_backoff: Duration,
}

impl std::fmt::Debug for AcontextConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcontextConfig")
            .field("base_url", &public_base_url(&self.base_url))
            .field("api_key", &"<redacted>")
            .field("timeout", &self.timeout)
            .field("retries", &self.retries)
            .finish()
    }
}

impl AcontextConfig {
    /// Settings: `base_url`, else `ACONTEXT_BASE_URL`, else [`DEFAULT_BASE_URL`]; the key from
    /// the variable `api_key_env`.
    ///
    /// # Errors
    /// [`AcontextError::Config`] when no key is set.
    pub fn from_env(
        base_url: Option<&str>,
        api_key_env: &str,
    ) -> Result<AcontextConfig, AcontextError> {
        let base_url = base_url
            .map(str::to_string)
            .or_else(|| {
                std::env::var("ACONTEXT_BASE_URL")
                    .ok()
                    .filter(|s| !s.is_empty())
            })
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
        let api_key = std::env::var(api_key_env)
            .ok()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                AcontextError::Config(format!(
                    "set {api_key_env} to the Acontext project key (sk-ac-…)"
                ))
            })?;
        Ok(AcontextConfig {
            base_url,
            api_key,
            timeout: Duration::from_secs(60),
            retries: 6,
            max_backoff: Duration::from_secs(20),
        })
    }
}

impl AcontextConfig {
    /// Settings from a merged `[acontext]` table (see `commands::shared::acontext::acontext_settings` for
    /// the precedence); the key from the variable `api_key_env` names.
    ///
    /// # Errors
    /// [`AcontextError::Config`] when the key variable is unset.
    pub fn from_settings(
        s: &crate::config::AcontextFileSettings,
    ) -> Result<AcontextConfig, AcontextError> {
        let env = s.api_key_env.as_deref().unwrap_or("ACONTEXT_API_KEY");
        let mut c = AcontextConfig::from_env(s.base_url.as_deref(), env)?;
        if let Some(t) = s.timeout_secs {
            c.timeout = Duration::from_secs(t.max(1));
        }
        Ok(c)
    }
}

/// The client. Cheap to clone.
#[derive(Clone)]
pub struct Client {
    /// Whether the server is answering, shared by every clone (see [`super::availability`]).
    availability: super::availability::Availability,
    http: reqwest::Client,
    base: String,
    key: std::sync::Arc<str>,
    retries: usize,
    max_backoff: Duration,
    flush_timeout: Duration,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base", &public_base_url(&self.base))
            .field("key", &"<redacted>")
            .finish()
    }
}

#[derive(serde::Deserialize)]
struct Envelope {
    #[serde(default)]
    code: i64,
    #[serde(default)]
    data: Option<Value>,
    #[serde(default)]
    msg: String,
    #[serde(default)]
    error: Option<String>,
}

/// A request body.
enum Body {
    None,
    Json(Value),
    /// A ZIP upload: (file name, bytes, extra text fields).
    Zip(String, Vec<u8>, Vec<(String, String)>),
}

impl Client {
    /// A client for `config`.
    ///
    /// # Errors
    /// [`AcontextError::Config`] when the HTTP client cannot be built.
    pub fn new(config: &AcontextConfig) -> Result<Client, AcontextError> {
        // reqwest is built without a default TLS provider; rustls uses ring, as bollard does.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| AcontextError::Config(format!("HTTP client: {e}")))?;
        Ok(Client {
            availability: Default::default(),
            http,
            base: config.base_url.trim_end_matches('/').to_string(),
            key: config.api_key.as_str().into(),
            retries: config.retries,
            max_backoff: config.max_backoff,
            flush_timeout: config.timeout.max(FLUSH_TIMEOUT),
        })
    }

    /// The base URL.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// Whether the server is answering, as every user of this client (and its clones) saw it.
    pub fn availability(&self) -> &super::availability::Availability {
        &self.availability
    }

    /// One request, never retried, for checks that must answer in seconds (`skillscope
    /// preflight`): `method` on `path` with `query` and an optional JSON body. The envelope is
    /// decoded as for every call, so an error says whether the server refused the key (401), lacks
    /// the route ([`AcontextError::RouteMissing`]) or answered for the resource (an envelope).
    ///
    /// # Errors
    /// Any API or transport error.
    pub async fn probe(
        &self,
        method: &str,
        path: &str,
        query: &[(&str, String)],
        body: Option<Value>,
    ) -> Result<Value, AcontextError> {
        let method = Method::from_bytes(method.as_bytes())
            .map_err(|e| AcontextError::Config(format!("method {method}: {e}")))?;
        let body = match body {
            Some(v) => Body::Json(v),
            None => Body::None,
        };
        self.once(&method, path, query, &body).await
    }

    fn endpoint(&self, method: &Method, path: &str) -> String {
        format!("{method} {path} at {}", public_base_url(&self.base))
    }

    async fn once(
        &self,
        method: &Method,
        path: &str,
        query: &[(&str, String)],
        body: &Body,
    ) -> Result<Value, AcontextError> {
        let endpoint = self.endpoint(method, path);
        let mut req = self
            .http
            .request(method.clone(), format!("{}{path}", self.base))
            .bearer_auth(&*self.key)
            .query(query);
        if path.ends_with("/flush") {
            // Flush runs the task agent (LLM calls) before it answers.
            req = req.timeout(self.flush_timeout);
        }
        req = match body {
            Body::None => req,
            Body::Json(v) => req.json(v),
            Body::Zip(name, bytes, fields) => {
                let part = reqwest::multipart::Part::bytes(bytes.clone())
                    .file_name(name.clone())
                    .mime_str("application/zip")
                    .map_err(|e| AcontextError::Config(e.to_string()))?;
                let mut form = reqwest::multipart::Form::new().part("file", part);
                for (k, v) in fields {
                    form = form.text(k.clone(), v.clone());
                }
                req.multipart(form)
            }
        };
        let resp = req
            .send()
            .await
            .map_err(|e| transport_error(&endpoint, &e))?;
        let status = resp.status();
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| transport_error(&endpoint, &e))?;
        decode_envelope(&endpoint, status, &bytes)
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Body,
    ) -> Result<Value, AcontextError> {
        let backoff = ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(200).min(self.max_backoff))
            .with_max_delay(self.max_backoff)
            .with_max_times(self.retries)
            .with_jitter();
        let idempotent = is_idempotent(&method, path, &body);
        (|| self.once(&method, path, query, &body))
            .retry(backoff)
            .when(|e| {
                if idempotent {
                    e.is_retryable()
                } else {
                    e.is_unsent()
                }
            })
            // Quiet: a wait that outlasts these retries is one "waiting for Acontext" state
            // ([`super::availability`]), not a line per request.
            .notify(|e, wait| tracing::debug!("acontext: {e}; retrying in {wait:?}"))
            .await
    }

    async fn call_as<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Body,
    ) -> Result<T, AcontextError> {
        let data = self.call(method.clone(), path, query, body).await?;
        serde_json::from_value(data).map_err(|e| AcontextError::Decode {
            endpoint: self.endpoint(&method, path),
            message: e.to_string(),
        })
    }

    /// The items of a cursor-paginated list as a stream, fetching the next page (`limit` = 200,
    /// `cursor` = the previous page's `next_cursor`) only when the consumer gets there; ends after
    /// a page with `has_more = false`. A failed page ends the stream with its error.
    pub fn list_stream<T: DeserializeOwned + 'static>(
        &self,
        path: String,
        extra: Vec<(&'static str, String)>,
    ) -> impl Stream<Item = Result<T, AcontextError>> + 'static {
        let client = self.clone();
        // State: Some(cursor) = fetch that page next (None cursor = the first); None = done.
        let pages = stream::try_unfold(Some(None::<String>), move |state| {
            let client = client.clone();
            let path = path.clone();
            let extra = extra.clone();
            async move {
                let Some(cursor) = state else {
                    return Ok(None);
                };
                let mut q = extra;
                q.push(("limit", MAX_PAGE.to_string()));
                if let Some(c) = cursor {
                    q.push(("cursor", c));
                }
                let page: Page<T> = client.call_as(Method::GET, &path, &q, Body::None).await?;
                let next = page
                    .next_cursor
                    .filter(|c| page.has_more && !c.is_empty())
                    .map(Some);
                Ok(Some((page.items, next)))
            }
        });
        pages
            .map_ok(|items| stream::iter(items.into_iter().map(Ok)))
            .try_flatten()
    }

    /// Every item of a cursor-paginated list ([`Client::list_stream`], collected).
    async fn list_all<T: DeserializeOwned + 'static>(
        &self,
        path: &str,
        extra: &[(&'static str, String)],
    ) -> Result<Vec<T>, AcontextError> {
        self.list_stream(path.to_string(), extra.to_vec())
            .try_collect()
            .await
    }

    // ---- sessions -------------------------------------------------------------------------------

    /// `POST /session`. A `use_uuid` the project already has returns the existing session (200)
    /// on current servers; older servers answer 409, surfaced as [`AcontextError::Api`].
    ///
    /// # Errors
    /// Any API or transport error.
    pub async fn create_session(&self, req: &CreateSession) -> Result<Session, AcontextError> {
        let body = serde_json::to_value(req).map_err(|e| AcontextError::Config(e.to_string()))?;
        self.call_as(Method::POST, "/session", &[], Body::Json(body))
            .await
    }

    /// `DELETE /session/{id}`.
    ///
    /// # Errors
    /// Any API or transport error.
    pub async fn delete_session(&self, session_id: &str) -> Result<(), AcontextError> {
        self.call(
            Method::DELETE,
            &format!("/session/{session_id}"),
            &[],
            Body::None,
        )
        .await
        .map(|_| ())
    }

    /// `POST /session/{id}/messages` with `{blob, format, meta}`.
    ///
    /// # Errors
    /// Any API or transport error.
    pub async fn store_message(
        &self,
        session_id: &str,
        blob: Value,
        format: &str,
        meta: Option<Value>,
    ) -> Result<Message, AcontextError> {
        let mut body = json!({ "blob": blob, "format": format });
        if let Some(m) = meta {
            body["meta"] = m;
        }
        self.call_as(
            Method::POST,
            &format!("/session/{session_id}/messages"),
            &[],
            Body::Json(body),
        )
        .await
    }

    /// `GET /session/{id}/messages?format=acontext` — every page of them (`limit` = 200,
    /// following `next_cursor` while `has_more`), in the server's order.
    ///
    /// # Errors
    /// Any API or transport error.
    pub async fn get_messages(&self, session_id: &str) -> Result<Vec<Message>, AcontextError> {
        self.list_all(
            &format!("/session/{session_id}/messages"),
            &[("format", "acontext".into())],
        )
        .await
    }

    /// `POST /session/{id}/flush`: runs the task agent on the session's messages (blocking).
    ///
    /// # Errors
    /// Any API or transport error.
    pub async fn flush(&self, session_id: &str) -> Result<Flag, AcontextError> {
        self.call_as(
            Method::POST,
            &format!("/session/{session_id}/flush"),
            &[],
            Body::None,
        )
        .await
    }

    /// `GET /session/{id}/task` (all pages).
    ///
    /// # Errors
    /// Any API or transport error.
    pub async fn get_tasks(&self, session_id: &str) -> Result<Vec<Task>, AcontextError> {
        self.list_all(&format!("/session/{session_id}/task"), &[])
            .await
    }

    /// `PATCH /session/{id}/task/{task_id}/status` — only on servers with manual task status
    /// (the `skill-bench` branch); elsewhere [`AcontextError::RouteMissing`].
    ///
    /// # Errors
    /// Any API or transport error.
    pub async fn update_task_status(
        &self,
        session_id: &str,
        task_id: &str,
        status: &str,
    ) -> Result<Task, AcontextError> {
        self.call_as(
            Method::PATCH,
            &format!("/session/{session_id}/task/{task_id}/status"),
            &[],
            Body::Json(json!({ "status": status })),
        )
        .await
    }

    // ---- learning spaces ------------------------------------------------------------------------

    /// `POST /learning_spaces` with `meta`.
    ///
    /// # Errors
    /// Any API or transport error.
    pub async fn create_learning_space(&self, meta: Value) -> Result<LearningSpace, AcontextError> {
        self.call_as(
            Method::POST,
            "/learning_spaces",
            &[],
            Body::Json(json!({ "meta": meta })),
        )
        .await
    }

    /// `GET /learning_spaces?filter_by_meta=…` (all pages).
    ///
    /// # Errors
    /// Any API or transport error.
    pub async fn list_learning_spaces(
        &self,
        filter_by_meta: Option<&Value>,
    ) -> Result<Vec<LearningSpace>, AcontextError> {
        let q: Vec<(&str, String)> = filter_by_meta
            .map(|f| vec![("filter_by_meta", f.to_string())])
            .unwrap_or_default();
        self.list_all("/learning_spaces", &q).await
    }

    /// `GET /learning_spaces/{id}`.
    ///
    /// # Errors
    /// Any API or transport error.
    pub async fn get_learning_space(&self, space_id: &str) -> Result<LearningSpace, AcontextError> {
        self.call_as(
            Method::GET,
            &format!("/learning_spaces/{space_id}"),
            &[],
            Body::None,
        )
        .await
    }

    /// `POST /learning_spaces/{id}/learn`: attaches a session; 409 when it already is (to any space).
    ///
    /// # Errors
    /// Any API or transport error.
    pub async fn learn(
        &self,
        space_id: &str,
        session_id: &str,
    ) -> Result<LearningSpaceSession, AcontextError> {
        self.call_as(
            Method::POST,
            &format!("/learning_spaces/{space_id}/learn"),
            &[],
            Body::Json(json!({ "session_id": session_id })),
        )
        .await
    }

    /// `GET /learning_spaces/{id}/sessions/{session_id}`: the session's learning status.
    ///
    /// # Errors
    /// Any API or transport error.
    pub async fn learning_session(
        &self,
        space_id: &str,
        session_id: &str,
    ) -> Result<LearningSpaceSession, AcontextError> {
        self.call_as(
            Method::GET,
            &format!("/learning_spaces/{space_id}/sessions/{session_id}"),
            &[],
            Body::None,
        )
        .await
    }

    /// `GET /learning_spaces/{id}/sessions`.
    ///
    /// # Errors
    /// Any API or transport error.
    pub async fn space_sessions(
        &self,
        space_id: &str,
    ) -> Result<Vec<LearningSpaceSession>, AcontextError> {
        self.call_as(
            Method::GET,
            &format!("/learning_spaces/{space_id}/sessions"),
            &[],
            Body::None,
        )
        .await
    }

    /// `GET /learning_spaces/{id}/skills` (full objects with `file_index`).
    ///
    /// # Errors
    /// Any API or transport error.
    pub async fn space_skills(&self, space_id: &str) -> Result<Vec<AgentSkill>, AcontextError> {
        self.call_as(
            Method::GET,
            &format!("/learning_spaces/{space_id}/skills"),
            &[],
            Body::None,
        )
        .await
    }

    /// `POST /learning_spaces/{id}/skills`: includes a skill; 409 when it (or its name) already is.
    ///
    /// # Errors
    /// Any API or transport error.
    pub async fn include_skill(
        &self,
        space_id: &str,
        skill_id: &str,
    ) -> Result<LearningSpaceSkill, AcontextError> {
        self.call_as(
            Method::POST,
            &format!("/learning_spaces/{space_id}/skills"),
            &[],
            Body::Json(json!({ "skill_id": skill_id })),
        )
        .await
    }

    /// `DELETE /learning_spaces/{id}/skills/{skill_id}`.
    ///
    /// # Errors
    /// Any API or transport error.
    pub async fn exclude_skill(&self, space_id: &str, skill_id: &str) -> Result<(), AcontextError> {
        self.call(
            Method::DELETE,
            &format!("/learning_spaces/{space_id}/skills/{skill_id}"),
            &[],
            Body::None,
        )
        .await
        .map(|_| ())
    }

    // ---- agent skills ---------------------------------------------------------------------------

    /// `POST /agent_skills` (multipart): uploads a skill ZIP with `meta` (JSON). The server takes
    /// name and description from its SKILL.md.
    ///
    /// # Errors
    /// Any API or transport error (400 for a ZIP without a valid SKILL.md).
    pub async fn upload_skill(
        &self,
        file_name: &str,
        zip: Vec<u8>,
        meta: &Value,
    ) -> Result<AgentSkill, AcontextError> {
        self.call_as(
            Method::POST,
            "/agent_skills",
            &[],
            Body::Zip(
                file_name.to_string(),
                zip,
                vec![("meta".into(), meta.to_string())],
            ),
        )
        .await
    }

    /// `GET /agent_skills` (all pages; the catalog).
    ///
    /// # Errors
    /// Any API or transport error.
    pub async fn list_skills(&self) -> Result<Vec<AgentSkill>, AcontextError> {
        self.list_all("/agent_skills", &[]).await
    }

    /// `GET /agent_skills/{id}`.
    ///
    /// # Errors
    /// Any API or transport error.
    pub async fn get_skill(&self, skill_id: &str) -> Result<AgentSkill, AcontextError> {
        self.call_as(
            Method::GET,
            &format!("/agent_skills/{skill_id}"),
            &[],
            Body::None,
        )
        .await
    }

    /// `GET /agent_skills/{id}/file?file_path=…`: text content, or a URL for binary files.
    ///
    /// # Errors
    /// Any API or transport error.
    pub async fn get_skill_file(
        &self,
        skill_id: &str,
        file_path: &str,
    ) -> Result<SkillFile, AcontextError> {
        self.call_as(
            Method::GET,
            &format!("/agent_skills/{skill_id}/file"),
            &[("file_path", file_path.to_string())],
            Body::None,
        )
        .await
    }

    /// Downloads raw bytes: `GET /agent_skills/{id}/download_zip`, or a material URL from
    /// [`Client::get_skill_file`] — relative URLs are resolved against the base; an absolute URL
    /// elsewhere (a presigned object-store URL) is fetched without the API key, which goes only to
    /// the Acontext server itself.
    ///
    /// # Errors
    /// Any API or transport error.
    pub async fn download(&self, path_or_url: &str) -> Result<Vec<u8>, AcontextError> {
        let url = if path_or_url.starts_with("http://") || path_or_url.starts_with("https://") {
            path_or_url.to_string()
        } else if let Some(rest) = path_or_url.strip_prefix("/api/v1") {
            format!("{}{rest}", self.base)
        } else {
            format!("{}{path_or_url}", self.base)
        };
        let ours = url.starts_with(&format!("{}/", self.base.trim_end_matches('/')));
        let endpoint = format!("GET {}", public_base_url(&url));
        let fetch = || async {
            let mut req = self.http.get(&url);
            if ours {
                req = req.bearer_auth(&*self.key);
            }
            let resp = req
                .send()
                .await
                .map_err(|e| transport_error(&endpoint, &e))?;
            let status = resp.status();
            let bytes = resp
                .bytes()
                .await
                .map_err(|e| transport_error(&endpoint, &e))?;
            if status.is_success() {
                Ok(bytes.to_vec())
            } else {
                decode_envelope(&endpoint, status, &bytes).map(|_| Vec::new())
            }
        };
        let backoff = ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(200).min(self.max_backoff))
            .with_max_delay(self.max_backoff)
            .with_max_times(self.retries)
            .with_jitter();
        fetch.retry(backoff).when(AcontextError::is_retryable).await
    }

    /// `GET /agent_skills/{id}/download_zip`.
    ///
    /// # Errors
    /// Any API or transport error (413 for skills over the server's size limits).
    pub async fn download_skill_zip(&self, skill_id: &str) -> Result<Vec<u8>, AcontextError> {
        self.download(&format!("/agent_skills/{skill_id}/download_zip"))
            .await
    }

    /// `DELETE /agent_skills/{id}`.
    ///
    /// # Errors
    /// Any API or transport error.
    pub async fn delete_skill(&self, skill_id: &str) -> Result<(), AcontextError> {
        self.call(
            Method::DELETE,
            &format!("/agent_skills/{skill_id}"),
            &[],
            Body::None,
        )
        .await
        .map(|_| ())
    }

    // ---- project --------------------------------------------------------------------------------

    /// `PATCH /project/configs`: merges keys (a `null` value deletes one).
    ///
    /// # Errors
    /// Any API or transport error.
    pub async fn patch_project_configs(&self, configs: Value) -> Result<Value, AcontextError> {
        self.call(Method::PATCH, "/project/configs", &[], Body::Json(configs))
            .await
    }
}

/// Whether repeating a request cannot change the outcome. Creating a message, a learning space
/// or a skill (and a session without `use_uuid`) is not: those are retried only when the server
/// certainly did not act ([`AcontextError::is_unsent`]); the learning pipeline checks what exists
/// before it repeats them.
fn is_idempotent(method: &Method, path: &str, body: &Body) -> bool {
    if *method != Method::POST {
        return true;
    }
    match path {
        "/learning_spaces" | "/agent_skills" => false,
        "/session" => {
            matches!(body, Body::Json(v) if v.get("use_uuid").is_some_and(|u| !u.is_null()))
        }
        p => !p.ends_with("/messages"),
    }
}

/// A base URL without user info (never stored with credentials).
pub fn public_base_url(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
            let host = host.rsplit_once('@').map(|(_, h)| h).unwrap_or(host);
            if path.is_empty() {
                format!("{scheme}://{host}")
            } else {
                format!("{scheme}://{host}/{path}")
            }
        }
        None => url.to_string(),
    }
}

fn transport_error(endpoint: &str, e: &reqwest::Error) -> AcontextError {
    AcontextError::Transport {
        endpoint: endpoint.to_string(),
        message: transport_message(e),
        connect: e.is_connect(),
    }
}

fn transport_message(e: &reqwest::Error) -> String {
    // The endpoint already names the URL (without credentials); reqwest's own message would
    // repeat it with any user info, so only the kind and the underlying causes are kept. Headers
    // (the key) never appear in either.
    let mut m = String::from(if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "cannot connect"
    } else if e.is_body() || e.is_decode() {
        "the response body broke off"
    } else {
        "request failed"
    });
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        let text = s.to_string();
        if !m.ends_with(&text) {
            m.push_str(&format!(": {text}"));
        }
        src = s.source();
    }
    m
}

/// Unwraps the envelope of a response body.
fn decode_envelope(
    endpoint: &str,
    status: StatusCode,
    bytes: &[u8],
) -> Result<Value, AcontextError> {
    match serde_json::from_slice::<Envelope>(bytes) {
        Ok(env) if status.is_success() && env.code < 400 => Ok(env.data.unwrap_or(Value::Null)),
        Ok(env) => Err(AcontextError::Api {
            endpoint: endpoint.to_string(),
            status: status.as_u16(),
            code: if env.code == 0 {
                status.as_u16() as i64
            } else {
                env.code
            },
            msg: match env.error.filter(|e| !e.is_empty()) {
                Some(err) => format!("{} ({err})", env.msg),
                None => env.msg,
            },
        }),
        Err(_) if status == StatusCode::NOT_FOUND || status == StatusCode::METHOD_NOT_ALLOWED => {
            Err(AcontextError::RouteMissing {
                endpoint: endpoint.to_string(),
                status: status.as_u16(),
            })
        }
        Err(e) if status.is_success() => Err(AcontextError::Decode {
            endpoint: endpoint.to_string(),
            message: e.to_string(),
        }),
        Err(_) => Err(AcontextError::Api {
            endpoint: endpoint.to_string(),
            status: status.as_u16(),
            code: status.as_u16() as i64,
            msg: String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_success_error_and_missing_route() {
        let ep = "GET /x at http://h/api/v1";
        assert_eq!(
            decode_envelope(ep, StatusCode::OK, br#"{"code":0,"data":{"a":1},"msg":""}"#).unwrap()
                ["a"],
            1
        );
        assert_eq!(
            decode_envelope(ep, StatusCode::OK, br#"{"code":0,"msg":"ok"}"#).unwrap(),
            Value::Null
        );
        let e = decode_envelope(
            ep,
            StatusCode::UNAUTHORIZED,
            br#"{"code":401,"msg":"Unauthorized"}"#,
        )
        .unwrap_err();
        assert!(matches!(
            e,
            AcontextError::Api {
                status: 401,
                code: 401,
                ..
            }
        ));
        assert!(!e.is_retryable());
        // HTTP and body code can disagree: either ≥ 400 is an error.
        let e = decode_envelope(
            ep,
            StatusCode::BAD_REQUEST,
            br#"{"code":500,"msg":"database error","error":"session not found"}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("session not found"), "{e}");
        let e = decode_envelope(ep, StatusCode::OK, br#"{"code":500,"msg":"boom"}"#).unwrap_err();
        assert!(matches!(e, AcontextError::Api { code: 500, .. }));
        let e = decode_envelope(ep, StatusCode::NOT_FOUND, b"404 page not found").unwrap_err();
        assert!(matches!(e, AcontextError::RouteMissing { status: 404, .. }));
        let e =
            decode_envelope(ep, StatusCode::BAD_GATEWAY, b"<html>bad gateway</html>").unwrap_err();
        assert!(e.is_retryable());
    }

    #[tokio::test]
    async fn errors_never_show_url_credentials() {
        let c = AcontextConfig {
            base_url: "http://admin:hunter2@127.0.0.1:9/api/v1".into(),
            api_key: "sk-ac-secret".into(),
            timeout: Duration::from_secs(2),
            retries: 0,
            max_backoff: Duration::from_millis(1),
        };
        let client = Client::new(&c).unwrap();
        let e = client.list_skills().await.unwrap_err();
        let text = format!("{e} {e:?} {client:?} {c:?}");
        assert!(text.contains("127.0.0.1:9/api/v1"), "{text}");
        assert!(
            !text.contains("hunter2") && !text.contains("sk-ac-secret"),
            "{text}"
        );
        assert!(
            matches!(e, AcontextError::Transport { connect: true, .. }),
            "{e:?}"
        );
    }

    #[test]
    fn debug_never_shows_the_key() {
        let c = AcontextConfig {
            base_url: "http://h".into(),
            api_key: "sk-ac-secret".into(),
            timeout: Duration::from_secs(1),
            retries: 0,
            max_backoff: Duration::from_secs(1),
        };
        assert!(!format!("{c:?}").contains("sk-ac-secret"));
        let client = Client::new(&c).unwrap();
        assert!(!format!("{client:?}").contains("sk-ac-secret"));
    }
}
