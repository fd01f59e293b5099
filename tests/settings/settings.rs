//! Run settings reach the containers — extra CA bundle (in the image, with the CA variables),
//! extra environment and mounts — and secret values never reach the database or trial folders.

use crate::support::common;

use common::{Scratch, one};
use skillscope::config::{EnvSetting, check_mount};
use skillscope::skillsbench::Condition;
use skillscope::store::Outcome;

const SECRET: &str = "sk-test-supersecret-0123456789";

fn files_under(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let ft = e.file_type().unwrap();
        if ft.is_dir() {
            files_under(&e.path(), out);
        } else if ft.is_file() {
            out.push(e.path());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ca_bundle_env_and_mounts_reach_the_container_and_secrets_stay_out() {
    // The only test in this binary (see main.rs), so setting the process environment is
    // race-free.
    unsafe { std::env::set_var("SECRET_TOKEN", SECRET) };
    let s = Scratch::new();
    let ca = s.dir.path().join("proxy-ca.pem");
    std::fs::write(
        &ca,
        "-----BEGIN CERTIFICATE-----\nSKILLSCOPE-TEST-CA\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let mount = s.dir.path().join("mounted");
    std::fs::create_dir_all(&mount).unwrap();
    std::fs::write(mount.join("marker.txt"), "here").unwrap();

    let mut req = s.request("settings", &["env-check"], vec![Condition::NoSkills], 1);
    req.settings.ca_bundle = Some(ca);
    req.settings.env = vec![
        EnvSetting::parse("FIXTURE_VALUE=from-skillscope").unwrap(),
        EnvSetting::parse("SECRET_TOKEN").unwrap(),
    ];
    req.settings.mounts =
        vec![check_mount(&format!("{}:/fixture-mount:ro", mount.display())).unwrap()];
    let out = s.run(req).await;
    let rows = s.trials(out.run.id);
    let r = one(&rows, "env-check", "no-skills");
    let dir = std::path::PathBuf::from(r.trial_dir.clone().unwrap());
    assert_eq!(
        r.outcome,
        Some(Outcome::Pass),
        "{}",
        std::fs::read_to_string(dir.join("verifier/test-stdout.txt")).unwrap_or_default()
    );

    // The secret value appears nowhere skillscope writes: database (and its WAL) and trial folders.
    s.store.writer().stop();
    let mut files = Vec::new();
    files_under(s.dir.path(), &mut files);
    assert!(files.iter().any(|f| f.ends_with("result.json")));
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        let hit = bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes());
        assert!(!hit, "secret found in {}", f.display());
    }
    // …while its name is recorded, so a reader knows it was passed.
    let settings = out.run.settings.to_string();
    assert!(settings.contains("SECRET_TOKEN"), "{settings}");
}
