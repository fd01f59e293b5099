//! Learning-space routes: create, list, get, learn (attach a session), its sessions and learning
//! status, include and exclude skills.

use std::collections::BTreeMap;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

use super::learner::advance;
use super::sessions::St;
use super::wire::{err, ls_session_json, ok, ok_msg, page_json, paginate, skill_json, space_json};
use super::{FakeSkill, FakeSpace};

pub(super) async fn create_space(State(s): St, axum::Json(body): axum::Json<Value>) -> Response {
    let mut st = s.lock().expect("state");
    let id = st.new_id();
    let mut skills = Vec::new();
    for (name, desc) in [
        ("daily-logs", "Daily activity logs"),
        ("user-general-facts", "General facts about the user"),
    ] {
        let kid = st.new_id();
        let now = st.now();
        st.skills.insert(
            kid.clone(),
            FakeSkill {
                id: kid.clone(),
                name: name.into(),
                description: desc.into(),
                meta: json!({}),
                files: BTreeMap::from([(
                    "SKILL.md".into(),
                    format!("---\nname: {name}\ndescription: {desc}\n---\n# {name}\n").into_bytes(),
                )]),
                updated_at: now,
            },
        );
        st.skill_order.push(kid.clone());
        skills.push(kid);
    }
    let space = FakeSpace {
        id: id.clone(),
        meta: body.get("meta").cloned().unwrap_or(json!({})),
        skills,
        ..Default::default()
    };
    let out = space_json(&space);
    st.spaces.insert(id.clone(), space);
    st.space_order.push(id);
    ok(out, StatusCode::CREATED)
}

pub(super) fn contains(hay: &Value, needle: &Value) -> bool {
    match (hay, needle) {
        (Value::Object(h), Value::Object(n)) => n
            .iter()
            .all(|(k, v)| h.get(k).is_some_and(|hv| contains(hv, v))),
        (a, b) => a == b,
    }
}

pub(super) async fn list_spaces(
    State(s): St,
    Query(q): Query<BTreeMap<String, String>>,
) -> Response {
    let st = s.lock().expect("state");
    let filter: Option<Value> = match q.get("filter_by_meta") {
        Some(f) => match serde_json::from_str(f) {
            Ok(v) => Some(v),
            Err(_) => return err(StatusCode::BAD_REQUEST, "invalid filter_by_meta JSON"),
        },
        None => None,
    };
    let ids: Vec<String> = st
        .space_order
        .iter()
        .filter(|id| {
            filter
                .as_ref()
                .is_none_or(|f| contains(&st.spaces[*id].meta, f))
        })
        .cloned()
        .collect();
    let (page, next, more) = match paginate(&ids, &q) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    ok(
        page_json(
            page.iter().map(|id| space_json(&st.spaces[id])).collect(),
            next,
            more,
        ),
        StatusCode::OK,
    )
}

pub(super) async fn get_space(State(s): St, Path(id): Path<String>) -> Response {
    let st = s.lock().expect("state");
    match st.spaces.get(&id) {
        Some(sp) => ok(space_json(sp), StatusCode::OK),
        None => err(StatusCode::NOT_FOUND, "learning space not found"),
    }
}

pub(super) async fn learn(
    State(s): St,
    Path(id): Path<String>,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let mut st = s.lock().expect("state");
    let Some(sid) = body
        .get("session_id")
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        return err(StatusCode::BAD_REQUEST, "parameter error");
    };
    if !st.spaces.contains_key(&id) {
        return err(StatusCode::NOT_FOUND, "learning space not found");
    }
    if !st.sessions.contains_key(&sid) {
        return err(StatusCode::NOT_FOUND, "session not found");
    }
    if st.session_space.contains_key(&sid) {
        return err(
            StatusCode::CONFLICT,
            "session already learned by another space",
        );
    }
    st.session_space.insert(sid.clone(), id.clone());
    let sp = st.spaces.get_mut(&id).expect("space");
    sp.sessions.insert(sid.clone(), "pending".into());
    sp.order.push(sid.clone());
    ok(ls_session_json(&id, &sid, "pending"), StatusCode::CREATED)
}

pub(super) async fn space_session(
    State(s): St,
    Path((id, sid)): Path<(String, String)>,
) -> Response {
    let mut st = s.lock().expect("state");
    if !st
        .spaces
        .get(&id)
        .is_some_and(|sp| sp.sessions.contains_key(&sid))
    {
        return err(StatusCode::NOT_FOUND, "session not found");
    }
    let status = advance(&mut st, &id, &sid);
    ok(ls_session_json(&id, &sid, &status), StatusCode::OK)
}

pub(super) async fn space_sessions(State(s): St, Path(id): Path<String>) -> Response {
    let st = s.lock().expect("state");
    let Some(sp) = st.spaces.get(&id) else {
        return err(StatusCode::NOT_FOUND, "learning space not found");
    };
    ok(
        Value::Array(
            sp.order
                .iter()
                .map(|sid| ls_session_json(&id, sid, &sp.sessions[sid]))
                .collect(),
        ),
        StatusCode::OK,
    )
}

pub(super) async fn space_skills(State(s): St, Path(id): Path<String>) -> Response {
    let st = s.lock().expect("state");
    let Some(sp) = st.spaces.get(&id) else {
        return err(StatusCode::NOT_FOUND, "learning space not found");
    };
    ok(
        Value::Array(
            sp.skills
                .iter()
                .filter_map(|k| st.skills.get(k))
                .map(skill_json)
                .collect(),
        ),
        StatusCode::OK,
    )
}

pub(super) async fn include_skill(
    State(s): St,
    Path(id): Path<String>,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let mut st = s.lock().expect("state");
    let Some(kid) = body
        .get("skill_id")
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        return err(StatusCode::BAD_REQUEST, "parameter error");
    };
    let Some(skill) = st.skills.get(&kid).cloned() else {
        return err(StatusCode::NOT_FOUND, "skill not found");
    };
    let Some(sp) = st.spaces.get(&id).cloned() else {
        return err(StatusCode::NOT_FOUND, "learning space not found");
    };
    if sp.skills.contains(&kid) {
        return err(StatusCode::CONFLICT, "skill already included in this space");
    }
    if sp
        .skills
        .iter()
        .any(|k| st.skills.get(k).is_some_and(|x| x.name == skill.name))
    {
        return err(
            StatusCode::CONFLICT,
            &format!(
                "skill with name '{}' already exists in this space",
                skill.name
            ),
        );
    }
    st.spaces
        .get_mut(&id)
        .expect("space")
        .skills
        .push(kid.clone());
    ok(
        json!({"id": format!("lsk-{kid}"), "learning_space_id": id, "skill_id": kid, "created_at": "2026-11-21T10:00:00Z"}),
        StatusCode::CREATED,
    )
}

pub(super) async fn exclude_skill(
    State(s): St,
    Path((id, kid)): Path<(String, String)>,
) -> Response {
    let mut st = s.lock().expect("state");
    if let Some(sp) = st.spaces.get_mut(&id) {
        sp.skills.retain(|k| k != &kid);
    }
    ok_msg()
}
