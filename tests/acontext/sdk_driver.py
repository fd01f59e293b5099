"""Drives an Acontext server through Acontext's own Python SDK (PyPI `acontext` 0.1.22) along
every call skillscope's learning pipeline makes, validating each answer with the SDK's pydantic
models (the SDK's methods validate their own answers; items the SDK leaves untyped are validated
here with its `Message` model). Used by tests/acontext_client.rs against the fake server.

Usage: sdk_driver.py BASE_URL API_KEY
Prints `ok <what>` per call and `checked N calls` at the end; any failure raises (exit 1).
"""

import io
import sys
import tempfile
import time
import uuid
import zipfile
from pathlib import Path

from acontext import AcontextClient
from acontext.types.session import Message, Task

checked = []


def ok(what):
    checked.append(what)
    print("ok", what, flush=True)


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def main(base_url, api_key):
    c = AcontextClient(api_key=api_key, base_url=base_url)

    # Project configs (the criteria the pipeline sets for status mode `criteria`).
    cfg = c.project.update_configs(
        {"task_success_criteria": 'The last message contains "VERDICT: PASS"'}
    )
    expect(cfg.task_success_criteria is not None, "criteria stored")
    ok("PATCH /project/configs")

    # A session with a fixed UUID, created twice (idempotent).
    sid = str(uuid.uuid4())
    s = c.sessions.create(use_uuid=sid, configs={"skillscope": {"task_id": "sdk-task"}})
    expect(s.id == sid, "session id")
    again = c.sessions.create(use_uuid=sid)
    expect(again.id == sid, "the same session again")
    ok("POST /session")

    # Messages: more than one page of them.
    n = 5
    for i in range(n):
        m = c.sessions.store_message(
            sid,
            blob={
                "role": "user" if i == 0 else "assistant",
                "content": f"message {i}" + (" VERDICT: PASS" if i == n - 1 else ""),
            },
            format="openai",
            meta={"skillscope": {"step": i}},
        )
        expect(m.session_id == sid, "message session")
    ok("POST /session/{session_id}/messages")
    every = c.sessions.get_messages(sid, format="acontext")
    items = [Message.model_validate(x) for x in every.items]
    expect(len(items) == n and len(every.ids) == n, f"{len(items)} messages")
    expect([x.id for x in items] == every.ids, "ids follow items")
    expect(every.metas[1] == {"skillscope": {"step": 1}}, f"metas {every.metas}")
    expect(not every.has_more, "one answer without a limit")
    expect(every.this_time_tokens > 0, "tokens counted")
    ids, cursor, pages = [], None, 0
    while True:
        page = c.sessions.get_messages(sid, format="acontext", limit=2, cursor=cursor)
        for x in page.items:
            Message.model_validate(x)
        ids += page.ids
        pages += 1
        if not page.has_more:
            break
        cursor = page.next_cursor
        expect(cursor, "a cursor while has_more")
    expect(ids == every.ids and pages == 3, f"{pages} pages: {ids}")
    openai = c.sessions.get_messages(sid, format="openai")
    expect(openai.items[0]["role"] == "user", "openai format")
    ok("GET /session/{session_id}/messages")

    # The task agent, its tasks, and the status the pipeline sets (the skill-bench server's
    # PATCH, which the SDK has no method for: sent through the SDK's own requester and read
    # with its Task model).
    flag = c.sessions.flush(sid)
    expect(flag.status == 200, f"flush {flag}")
    ok("POST /session/{session_id}/flush")
    tasks = c.sessions.get_tasks(sid, limit=200)
    expect(len(tasks.items) == 1, "one task")
    ok("GET /session/{session_id}/task")
    patched = Task.model_validate(
        c.request(
            "PATCH",
            f"/session/{sid}/task/{tasks.items[0].id}/status",
            json_data={"status": "success"},
        )
    )
    expect(patched.status == "success", f"status {patched.status}")
    ok("PATCH /session/{session_id}/task/{task_id}/status")

    # A learning space: found again by meta, its default skills, one excluded.
    meta = {"skillscope": {"space": f"sdk/{sid}"}}
    space = c.learning_spaces.create(meta=meta)
    ok("POST /learning_spaces")
    found = c.learning_spaces.list(filter_by_meta=meta, limit=200)
    expect([x.id for x in found.items] == [space.id], "filter_by_meta")
    ok("GET /learning_spaces")
    expect(c.learning_spaces.get(space.id).id == space.id, "get space")
    ok("GET /learning_spaces/{id}")
    defaults = c.learning_spaces.list_skills(space.id)
    expect(len(defaults) >= 1, "default skills")
    ok("GET /learning_spaces/{id}/skills")
    c.learning_spaces.exclude_skill(space.id, skill_id=defaults[0].id)
    ok("DELETE /learning_spaces/{id}/skills/{skill_id}")

    # Learning from the session, polled to its end.
    record = c.learning_spaces.learn(space.id, session_id=sid)
    expect(record.session_id == sid, "learn record")
    ok("POST /learning_spaces/{id}/learn")
    done = c.learning_spaces.wait_for_learning(
        space.id, session_id=sid, timeout=30, poll_interval=0.01
    )
    expect(done.status == "completed", f"learning {done.status}")
    ok("GET /learning_spaces/{id}/sessions/{session_id}")
    sessions = c.learning_spaces.list_sessions(space.id)
    expect([x.session_id for x in sessions] == [sid], "space sessions")
    ok("GET /learning_spaces/{id}/sessions")

    # A curated skill: uploaded as a ZIP, included, read back every way the export reads it.
    binary = bytes(range(256))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(
            "sdk-skill/SKILL.md",
            "---\nname: sdk-skill\ndescription: Uploaded through the SDK.\n---\n# SDK skill\n",
        )
        z.writestr("sdk-skill/assets/logo.bin", binary)
    skill = c.skills.create(
        file=("sdk-skill.zip", buf.getvalue()),
        meta={"skillscope": {"source_task": "sdk-task"}},
    )
    ok("POST /agent_skills")
    c.learning_spaces.include_skill(space.id, skill_id=skill.id)
    ok("POST /learning_spaces/{id}/skills")
    catalog = c.skills.list_catalog(limit=200)
    expect("sdk-skill" in [x.name for x in catalog.items], "catalog")
    ok("GET /agent_skills")
    full = c.skills.get(skill.id)
    expect(
        sorted(f.path for f in full.file_index) == ["SKILL.md", "assets/logo.bin"],
        f"file index {full.file_index}",
    )
    ok("GET /agent_skills/{id}")
    text = c.skills.get_file(skill_id=skill.id, file_path="SKILL.md")
    expect(text.content is not None and "SDK skill" in text.content.raw, "text file")
    url = c.skills.get_file(skill_id=skill.id, file_path="assets/logo.bin")
    expect(url.url is not None and url.content is None, "binary file as a URL")
    ok("GET /agent_skills/{id}/file")
    with tempfile.TemporaryDirectory() as d:
        got = c.skills.download(skill_id=skill.id, path=d)
        expect(sorted(got.files) == ["SKILL.md", "assets/logo.bin"], f"downloaded {got}")
        expect((Path(d) / "assets/logo.bin").read_bytes() == binary, "binary by its URL")
    ok("GET material URL")
    archive = c.skills.download_zip(skill.id)
    with zipfile.ZipFile(io.BytesIO(archive)) as z:
        names = sorted(z.namelist())
        expect(names == ["SKILL.md", "assets/logo.bin"], f"zip {names}")
        expect(z.read("assets/logo.bin") == binary, "zip content")
    ok("GET /agent_skills/{id}/download_zip")

    # Clean-up as the pipeline does it.
    c.skills.delete(skill.id)
    ok("DELETE /agent_skills/{id}")
    c.sessions.delete(sid)
    ok("DELETE /session/{session_id}")
    print(f"checked {len(checked)} calls", flush=True)


if __name__ == "__main__":
    start = time.time()
    main(sys.argv[1], sys.argv[2])
    print(f"in {time.time() - start:.1f}s")
