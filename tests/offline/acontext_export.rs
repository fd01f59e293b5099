//! Skill export against the in-repo fake Acontext server: a normal export (files byte-for-byte,
//! stable content hash, hashes equal to `snapshot_dir` of the written folders), hostile paths
//! through the ZIP and through the file-by-file fallback, bad SKILL.md frontmatter, oversize files,
//! the fallback when the ZIP download fails, an existing output folder, transport failures
//! (all-or-nothing) and a symlink uploaded in a ZIP.

use crate::support::fake_acontext;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use fake_acontext::{FakeServer, FakeState, Fault};
use serde_json::json;
use skillscope::acontext::export::{
    ExportError, ExportLimits, ExportReport, export_space, snapshot_dir,
};
use skillscope::acontext::{AcontextConfig, Client};
use zip::write::SimpleFileOptions;

const MD: &str = "---\nname: my-skill\ndescription: Does things with files.\n---\n# My skill\n\nRun `scripts/x.sh`.\n";
const SCRIPT: &[u8] = b"#!/bin/sh\necho hello\n";
const BLOB: &[u8] = &[0xff, 0x00, 0xfe, 0x01, b'\n', 0x80];

async fn start() -> (FakeServer, Client) {
    let server = FakeServer::start(
        FakeState::new("sk-ac-test", true),
        ([127, 0, 0, 1], 0).into(),
    )
    .await;
    let client = Client::new(&AcontextConfig {
        base_url: server.base_url(),
        api_key: "sk-ac-test".into(),
        timeout: Duration::from_secs(10),
        retries: 2,
        max_backoff: Duration::from_millis(50),
    })
    .expect("client");
    (server, client)
}

fn zip_of(entries: &[(&str, &[u8], u32)]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, bytes, mode) in entries {
        w.start_file(*name, SimpleFileOptions::default().unix_permissions(*mode))
            .expect("zip");
        w.write_all(bytes).expect("zip");
    }
    w.finish().expect("zip").into_inner()
}

/// A space holding the two default skills plus `my-skill` (SKILL.md, scripts/x.sh, assets/blob.bin).
async fn space_with_skill(client: &Client) -> String {
    let space = client
        .create_learning_space(json!({"test": "export"}))
        .await
        .expect("space");
    let zip = zip_of(&[
        ("my-skill/SKILL.md", MD.as_bytes(), 0o644),
        ("my-skill/scripts/x.sh", SCRIPT, 0o755),
        ("my-skill/assets/blob.bin", BLOB, 0o644),
    ]);
    let skill = client
        .upload_skill("my-skill.zip", zip, &json!({}))
        .await
        .expect("upload");
    client
        .include_skill(&space.id, &skill.id)
        .await
        .expect("include");
    space.id
}

fn dir_names(r: &ExportReport) -> Vec<&str> {
    r.skills.iter().map(|s| s.dir_name.as_str()).collect()
}

/// Every path under `root`, relative, sorted; panics on a symlink.
fn tree(root: &Path) -> Vec<String> {
    let mut out: Vec<String> = walkdir::WalkDir::new(root)
        .min_depth(1)
        .into_iter()
        .map(|e| {
            let e = e.expect("walk");
            assert!(!e.path_is_symlink(), "symlink at {}", e.path().display());
            e.path()
                .strip_prefix(root)
                .expect("prefix")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    out.sort();
    out
}

fn assert_my_skill_files(out: &Path) {
    let d = out.join("my-skill");
    assert_eq!(std::fs::read(d.join("SKILL.md")).unwrap(), MD.as_bytes());
    assert_eq!(std::fs::read(d.join("scripts/x.sh")).unwrap(), SCRIPT);
    assert_eq!(std::fs::read(d.join("assets/blob.bin")).unwrap(), BLOB);
}

#[tokio::test]
async fn normal_export_writes_the_files_and_a_stable_hash() {
    let (_server, client) = start().await;
    let space = space_with_skill(&client).await;
    let tmp = tempfile::tempdir().unwrap();
    let limits = ExportLimits::default();

    let out1 = tmp.path().join("v1");
    let r1 = export_space(&client, &space, &out1, &limits).await.unwrap();
    assert_eq!(r1.dir, out1);
    assert!(r1.refused.is_empty(), "{:?}", r1.refused);
    assert_eq!(
        dir_names(&r1),
        ["daily-logs", "my-skill", "user-general-facts"]
    );
    assert_my_skill_files(&out1);
    let mine = &r1.skills[1];
    assert_eq!(mine.name, "my-skill");
    assert_eq!(mine.description, "Does things with files.");
    assert!(mine.remote_id.is_some() && mine.updated_at.is_some());
    assert!(mine.problems.is_empty(), "{:?}", mine.problems);
    let paths: Vec<&str> = mine.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["SKILL.md", "assets/blob.bin", "scripts/x.sh"]);
    assert_eq!(mine.files[0].text.as_deref(), Some(MD));
    assert_eq!(mine.files[1].text, None);
    assert_eq!(mine.files[1].size, BLOB.len() as u64);

    // Into a second folder (nested, parent created): same hashes.
    let out2 = tmp.path().join("exports/v2");
    let r2 = export_space(&client, &space, &out2, &limits).await.unwrap();
    assert_my_skill_files(&out2);
    for (a, b) in r1.skills.iter().zip(&r2.skills) {
        assert_eq!(a.content_hash, b.content_hash);
        assert_eq!(a.files, b.files);
    }
    // The written folders hash the same on disk (curated vs learned comparisons).
    for s in &r1.skills {
        let on_disk = snapshot_dir(&out1.join(&s.dir_name), &limits).unwrap();
        assert_eq!(on_disk.content_hash, s.content_hash, "{}", s.dir_name);
        assert_eq!(on_disk.name, s.name);
    }
    // No temporary folders left next to the exports.
    let mut names: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["exports", "v1"]);
    assert_eq!(
        tree(&tmp.path().join("exports")),
        [
            "v2",
            "v2/daily-logs",
            "v2/daily-logs/SKILL.md",
            "v2/my-skill",
            "v2/my-skill/SKILL.md",
            "v2/my-skill/assets",
            "v2/my-skill/assets/blob.bin",
            "v2/my-skill/scripts",
            "v2/my-skill/scripts/x.sh",
            "v2/user-general-facts",
            "v2/user-general-facts/SKILL.md"
        ]
    );
}

/// Plants three skills with a valid SKILL.md and one hostile path each.
fn plant_hostile(server: &FakeServer, space: &str) {
    let mut st = server.state.lock().unwrap();
    for (skill, path) in [
        ("evil-up", "../evil"),
        ("evil-abs", "/abs"),
        ("evil-mid", "a/../../b"),
    ] {
        let md = format!("---\nname: {skill}\ndescription: Looks harmless.\n---\n");
        st.put_skill_file(space, skill, "SKILL.md", md.as_bytes());
        st.put_skill_file(space, skill, path, b"pwned");
    }
}

async fn check_hostile_refused(fallback: bool) {
    let (server, client) = start().await;
    let space = client.create_learning_space(json!({})).await.unwrap().id;
    plant_hostile(&server, &space);
    if fallback {
        // Five skills: the ZIP download of every one fails.
        let mut st = server.state.lock().unwrap();
        for _ in 0..5 {
            st.faults
                .push_back(("download_zip".into(), Fault::Status(413)));
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let parent = tmp.path().join("exports");
    let out = parent.join("v1");
    let r = export_space(&client, &space, &out, &ExportLimits::default())
        .await
        .unwrap();
    assert_eq!(dir_names(&r), ["daily-logs", "user-general-facts"]);
    let refused: Vec<(&str, Option<&str>)> = r
        .refused
        .iter()
        .map(|x| (x.skill.as_str(), x.path.as_deref()))
        .collect();
    assert_eq!(
        refused,
        [
            ("evil-up", Some("../evil")),
            ("evil-abs", Some("/abs")),
            ("evil-mid", Some("a/../../b")),
        ],
        "{:?}",
        r.refused
    );
    // Nothing written outside `out`, and no trace of the hostile skills inside it.
    assert_eq!(
        tree(tmp.path())
            .iter()
            .filter(|p| !p.starts_with("exports/v1/"))
            .collect::<Vec<_>>(),
        ["exports", "exports/v1"]
    );
    let inside = tree(&out);
    assert!(
        inside
            .iter()
            .all(|p| !p.contains("evil") && !p.ends_with('b')),
        "{inside:?}"
    );
    if fallback {
        // The hostile paths were never even requested.
        let st = server.state.lock().unwrap();
        let fetched = st.log.iter().filter(|x| x.route.ends_with("/file")).count();
        // Only the two default skills' SKILL.md.
        assert_eq!(fetched, 2);
    }
}

#[tokio::test]
async fn hostile_paths_in_the_zip_refuse_their_skill_only() {
    check_hostile_refused(false).await;
}

#[tokio::test]
async fn hostile_paths_in_the_file_index_refuse_their_skill_only() {
    check_hostile_refused(true).await;
}

#[tokio::test]
async fn bad_frontmatter_is_refused() {
    let (server, client) = start().await;
    let space = space_with_skill(&client).await;
    {
        let mut st = server.state.lock().unwrap();
        st.put_skill_file(&space, "no-fm", "SKILL.md", b"# Just markdown\n");
        st.put_skill_file(
            &space,
            "no-desc",
            "SKILL.md",
            b"---\nname: no-desc\n---\n# x\n",
        );
        st.put_skill_file(&space, "no-md", "README.md", b"# readme\n");
        st.put_skill_file(&space, "nested-md", "docs/SKILL.md", MD.as_bytes());
        st.put_skill_file(&space, "nested-md", "README.md", b"x");
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let r = export_space(&client, &space, &out, &ExportLimits::default())
        .await
        .unwrap();
    assert_eq!(
        dir_names(&r),
        ["daily-logs", "my-skill", "user-general-facts"]
    );
    let by = |name: &str| r.refused.iter().find(|x| x.skill == name).unwrap();
    assert!(
        by("no-fm").reason.contains("frontmatter"),
        "{:?}",
        by("no-fm")
    );
    assert_eq!(by("no-fm").path.as_deref(), Some("SKILL.md"));
    assert!(by("no-desc").reason.contains("description"));
    assert!(by("no-md").reason.contains("SKILL.md"));
    assert!(by("nested-md").reason.contains("SKILL.md"));
    assert_eq!(r.refused.len(), 4);
    assert_eq!(
        tree(&out)
            .iter()
            .filter(|p| !p.contains('/'))
            .collect::<Vec<_>>(),
        ["daily-logs", "my-skill", "user-general-facts"]
    );
}

#[tokio::test]
async fn warnings_do_not_refuse_and_names_are_sanitised() {
    let (server, client) = start().await;
    let space = client.create_learning_space(json!({})).await.unwrap().id;
    {
        let mut st = server.state.lock().unwrap();
        st.put_skill_file(
            &space,
            "Fancy Name",
            "SKILL.md",
            b"---\nname: Fancy Name\ndescription: d\n---\n",
        );
        // Same folder name once sanitised.
        st.put_skill_file(
            &space,
            "fancy-name",
            "SKILL.md",
            b"---\nname: fancy-name\ndescription: d\n---\n",
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let r = export_space(&client, &space, &out, &ExportLimits::default())
        .await
        .unwrap();
    assert!(r.refused.is_empty(), "{:?}", r.refused);
    assert_eq!(
        dir_names(&r),
        [
            "daily-logs",
            "fancy-name",
            "fancy-name-2",
            "user-general-facts"
        ]
    );
    let fancy = r.skills.iter().find(|s| s.name == "Fancy Name").unwrap();
    assert_eq!(fancy.dir_name, "fancy-name");
    assert!(!fancy.problems.is_empty());
    let other = r.skills.iter().find(|s| s.name == "fancy-name").unwrap();
    assert!(
        other.problems.iter().any(|p| p.contains("differs")),
        "{:?}",
        other.problems
    );
}

#[tokio::test]
async fn oversize_files_are_refused() {
    let (server, client) = start().await;
    let space = space_with_skill(&client).await;
    {
        let mut st = server.state.lock().unwrap();
        st.put_skill_file(
            &space,
            "big",
            "SKILL.md",
            b"---\nname: big\ndescription: d\n---\n",
        );
        st.put_skill_file(&space, "big", "data.txt", &vec![b'x'; 4096]);
    }
    let limits = ExportLimits {
        max_file_bytes: 1024,
        ..ExportLimits::default()
    };
    let tmp = tempfile::tempdir().unwrap();
    let r = export_space(&client, &space, &tmp.path().join("a"), &limits)
        .await
        .unwrap();
    assert_eq!(r.refused.len(), 1, "{:?}", r.refused);
    assert_eq!(r.refused[0].skill, "big");
    assert_eq!(r.refused[0].path.as_deref(), Some("data.txt"));
    assert!(r.refused[0].reason.contains("1024"), "{:?}", r.refused[0]);
    assert_eq!(r.skills.len(), 3);

    // The same through the fallback (the file is checked once fetched).
    server
        .state
        .lock()
        .unwrap()
        .faults
        .extend((0..4).map(|_| ("download_zip".to_string(), Fault::Status(413))));
    let r = export_space(&client, &space, &tmp.path().join("b"), &limits)
        .await
        .unwrap();
    assert_eq!(r.refused.len(), 1, "{:?}", r.refused);
    assert_eq!(r.refused[0].path.as_deref(), Some("data.txt"));

    // A skill total over the limit.
    let limits = ExportLimits {
        max_skill_bytes: 100,
        ..ExportLimits::default()
    };
    let r = export_space(&client, &space, &tmp.path().join("c"), &limits)
        .await
        .unwrap();
    assert!(
        r.refused.iter().any(|x| x.skill == "my-skill"),
        "{:?}",
        r.refused
    );
}

#[tokio::test]
async fn a_failed_zip_download_falls_back_to_file_by_file() {
    let (server, client) = start().await;
    let space = space_with_skill(&client).await;
    let tmp = tempfile::tempdir().unwrap();
    let direct = export_space(
        &client,
        &space,
        &tmp.path().join("direct"),
        &ExportLimits::default(),
    )
    .await
    .unwrap();
    {
        let mut st = server.state.lock().unwrap();
        st.log.clear();
        st.faults
            .push_back(("download_zip".into(), Fault::Status(413)));
        st.faults
            .push_back(("download_zip".into(), Fault::Status(404)));
        st.faults
            .push_back(("download_zip".into(), Fault::Status(413)));
    }
    let out = tmp.path().join("fallback");
    let r = export_space(&client, &space, &out, &ExportLimits::default())
        .await
        .unwrap();
    assert!(r.refused.is_empty(), "{:?}", r.refused);
    assert_my_skill_files(&out);
    for (a, b) in direct.skills.iter().zip(&r.skills) {
        assert_eq!(a.content_hash, b.content_hash, "{}", a.dir_name);
    }
    let st = server.state.lock().unwrap();
    let routes: Vec<&str> = st.log.iter().map(|x| x.route.as_str()).collect();
    // The binary file came through a material URL.
    assert!(
        routes.iter().any(|r| r.contains("/material/")),
        "{routes:?}"
    );
    assert_eq!(routes.iter().filter(|r| r.ends_with("/file")).count(), 5);
}

#[tokio::test]
async fn an_existing_output_folder_is_an_error() {
    let (_server, client) = start().await;
    let space = space_with_skill(&client).await;
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("v1");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("keep.txt"), "mine").unwrap();
    let e = export_space(&client, &space, &out, &ExportLimits::default())
        .await
        .unwrap_err();
    assert!(matches!(&e, ExportError::Exists(p) if p == &out), "{e}");
    assert_eq!(
        std::fs::read_to_string(out.join("keep.txt")).unwrap(),
        "mine"
    );
    assert_eq!(tree(tmp.path()), ["v1", "v1/keep.txt"]);
    // An empty folder or a file counts as well.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert!(matches!(
        export_space(&client, &space, &empty, &ExportLimits::default()).await,
        Err(ExportError::Exists(_))
    ));
}

#[tokio::test]
async fn transport_failures_abort_and_leave_nothing() {
    let (server, client) = start().await;
    let space = space_with_skill(&client).await;
    {
        // More dropped connections than the client retries.
        let mut st = server.state.lock().unwrap();
        for _ in 0..3 {
            st.faults.push_back(("download_zip".into(), Fault::Drop));
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("v1");
    let e = export_space(&client, &space, &out, &ExportLimits::default())
        .await
        .unwrap_err();
    assert!(matches!(e, ExportError::Api(_)), "{e}");
    assert!(e.to_string().contains("download_zip"), "{e}");
    assert!(tree(tmp.path()).is_empty(), "{:?}", tree(tmp.path()));

    // A missing space names its endpoint too.
    let e = export_space(&client, "nope", &out, &ExportLimits::default())
        .await
        .unwrap_err();
    assert!(
        e.to_string().contains("/learning_spaces/nope/skills"),
        "{e}"
    );
    assert!(tree(tmp.path()).is_empty());
}

/// The fake stores the files it unzips, so a symlink entry comes back as a regular file holding
/// the link target: the export must write a plain file, never a link (the symlink check itself is
/// unit-tested on a ZIP fed straight to the extractor).
#[tokio::test]
async fn an_uploaded_symlink_never_becomes_a_link() {
    let (_server, client) = start().await;
    let space = client.create_learning_space(json!({})).await.unwrap();
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    w.start_file("SKILL.md", SimpleFileOptions::default())
        .unwrap();
    w.write_all(b"---\nname: linky\ndescription: d\n---\n")
        .unwrap();
    w.add_symlink("passwd", "/etc/passwd", SimpleFileOptions::default())
        .unwrap();
    let zip = w.finish().unwrap().into_inner();
    let skill = client
        .upload_skill("linky.zip", zip, &json!({}))
        .await
        .unwrap();
    client.include_skill(&space.id, &skill.id).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let r = export_space(&client, &space.id, &out, &ExportLimits::default())
        .await
        .unwrap();
    tree(&out); // panics on a symlink
    assert!(r.skills.iter().any(|s| s.name == "linky"), "{r:?}");
    let p = out.join("linky/passwd");
    assert!(std::fs::symlink_metadata(&p).unwrap().is_file());
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "/etc/passwd");
}
