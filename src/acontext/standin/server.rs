//! The router under `/api/v1`, the layer that checks the key, logs exchanges and injects
//! faults, and [`FakeServer`], a running stand-in.

use std::net::SocketAddr;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{delete, get, patch, post};
use serde_json::Value;

use super::sessions::{self, St};
use super::wire::err;
use super::{Exchange, Fault, Shared, skills, spaces};

fn fault_matches(pattern: &str, method: &str, route: &str) -> bool {
    match pattern.split_once(' ') {
        Some((m, path)) => m.eq_ignore_ascii_case(method) && route.ends_with(path),
        None => route.contains(pattern),
    }
}

async fn auth_log_faults(State(s): St, req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_string())
        .unwrap_or_else(|| req.uri().path().to_string());
    let method = req.method().clone();
    let headers: HeaderMap = req.headers().clone();
    let fault = {
        let mut st = s.lock().expect("state");
        let idx = st
            .faults
            .iter()
            .position(|(r, _)| fault_matches(r, method.as_str(), &route));
        idx.and_then(|i| st.faults.remove(i)).map(|(_, f)| f)
    };
    let key = s.lock().expect("state").api_key.clone();
    // Material URLs stand for presigned object-store URLs: they carry their own signature and
    // no API key (a client must not send its key to them).
    let presigned = route.ends_with("/material/{token}");
    let authorized = presigned
        || headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v == format!("Bearer {key}"));
    let (parts, body) = req.into_parts();
    let bytes: Bytes = axum::body::to_bytes(body, 64 * 1024 * 1024)
        .await
        .unwrap_or_default();
    let req_json: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let resp = if !authorized {
        err(StatusCode::UNAUTHORIZED, "Unauthorized")
    } else {
        match fault {
            Some(Fault::Status(code)) => err(
                StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                "injected fault",
            ),
            Some(Fault::Stall(d)) => {
                tokio::time::sleep(d).await;
                next.run(Request::from_parts(parts, Body::from(bytes.clone())))
                    .await
            }
            Some(Fault::Drop) => return dropped_response(),
            Some(Fault::DropAfter) => {
                let _ = next
                    .run(Request::from_parts(parts, Body::from(bytes.clone())))
                    .await;
                return dropped_response();
            }
            None => {
                next.run(Request::from_parts(parts, Body::from(bytes.clone())))
                    .await
            }
        }
    };
    let (rparts, rbody) = resp.into_parts();
    let rbytes = axum::body::to_bytes(rbody, 64 * 1024 * 1024)
        .await
        .unwrap_or_default();
    let resp_json: Value = serde_json::from_slice(&rbytes).unwrap_or(Value::Null);
    let mut st = s.lock().expect("state");
    if st.keep_log {
        st.log.push(Exchange {
            method: method.to_string(),
            route,
            request: req_json,
            status: rparts.status.as_u16(),
            response: resp_json,
        });
    }
    drop(st);
    Response::from_parts(rparts, Body::from(rbytes))
}

/// A body that ends early: the client sees the connection close mid-response.
fn dropped_response() -> Response {
    let stream = futures_util::stream::iter(vec![
        Ok::<_, std::io::Error>(Bytes::from_static(b"{\"code\":0,")),
        Err(std::io::Error::other("connection dropped")),
    ]);
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from_stream(stream))
        .expect("response")
}

/// The router (under `/api/v1`).
pub fn router(state: Shared) -> Router {
    let mut api = Router::new()
        .route("/session", post(sessions::create_session))
        .route("/session/{session_id}", delete(sessions::delete_session))
        .route(
            "/session/{session_id}/messages",
            post(sessions::store_message).get(sessions::get_messages),
        )
        .route("/session/{session_id}/flush", post(sessions::flush))
        .route("/session/{session_id}/task", get(sessions::get_tasks))
        .route(
            "/learning_spaces",
            post(spaces::create_space).get(spaces::list_spaces),
        )
        .route("/learning_spaces/{id}", get(spaces::get_space))
        .route("/learning_spaces/{id}/learn", post(spaces::learn))
        .route(
            "/learning_spaces/{id}/sessions",
            get(spaces::space_sessions),
        )
        .route(
            "/learning_spaces/{id}/sessions/{session_id}",
            get(spaces::space_session),
        )
        .route(
            "/learning_spaces/{id}/skills",
            get(spaces::space_skills).post(spaces::include_skill),
        )
        .route(
            "/learning_spaces/{id}/skills/{skill_id}",
            delete(spaces::exclude_skill),
        )
        .route(
            "/agent_skills",
            post(skills::upload_skill).get(skills::list_skills),
        )
        .route(
            "/agent_skills/{id}",
            get(skills::get_skill).delete(skills::delete_skill),
        )
        .route("/agent_skills/{id}/file", get(skills::skill_file));
    let flavour = state.lock().expect("state").api;
    if flavour.released() {
        api = api
            .route("/agent_skills/{id}/download_zip", get(skills::download_zip))
            .route("/material/{token}", get(skills::material))
            .route(
                "/project/configs",
                get(skills::get_configs).patch(skills::patch_configs),
            );
    }
    if flavour.status_patch() {
        api = api.route(
            "/session/{session_id}/task/{task_id}/status",
            patch(sessions::patch_task_status),
        );
    }
    let api = api
        .layer(middleware::from_fn_with_state(
            state.clone(),
            auth_log_faults,
        ))
        .with_state(state.clone());
    // Unknown routes answer like gin: 404 with a plain-text body (no envelope).
    let mut root = Router::new().nest("/api/v1", api);
    if !flavour.released() {
        // The skill-bench server hands out presigned object-store URLs: outside the API, no key.
        root = root.route(
            "/presigned/{token}",
            get(skills::material).with_state(state),
        );
    }
    root.fallback(|| async { (StatusCode::NOT_FOUND, "404 page not found") })
}

/// A running fake server.
pub struct FakeServer {
    /// Its state (survives restarts).
    pub state: Shared,
    /// Where it listens.
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl FakeServer {
    /// Starts a server for `state` on `addr` (port 0 = any).
    ///
    /// # Panics
    /// When `addr` cannot be bound (tests; [`FakeServer::try_start`] returns the error).
    pub async fn start(state: Shared, addr: SocketAddr) -> FakeServer {
        FakeServer::try_start(state, addr)
            .await
            .unwrap_or_else(|e| panic!("the Acontext stand-in cannot listen on {addr}: {e}"))
    }

    /// Starts a server for `state` on `addr` (port 0 = any) in this tokio runtime.
    ///
    /// # Errors
    /// The address cannot be bound (in use, not permitted).
    pub async fn try_start(state: Shared, addr: SocketAddr) -> std::io::Result<FakeServer> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let app = router(state.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = rx.await;
                })
                .await;
        });
        Ok(FakeServer {
            state,
            addr,
            stop: Some(tx),
            task: Some(task),
        })
    }

    /// Base URL (`http://127.0.0.1:N/api/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/api/v1", self.addr)
    }

    /// Stops the server (the state stays).
    pub async fn stop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.task.take() {
            t.abort();
            let _ = t.await;
        }
    }

    /// Stops and starts again on the same port with the same state.
    pub async fn restart(&mut self) {
        self.stop().await;
        let again = FakeServer::start(self.state.clone(), self.addr).await;
        *self = again;
    }
}
