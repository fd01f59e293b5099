//! The README's example run (`skillscope run` on the built-in example tasks, oracle agent,
//! no-skills and curated) with `--backend kubernetes` gives the same table as on Docker, and
//! leaves no pod, Secret or NetworkPolicy behind.

use crate::support::common::{Scratch, skillscope};
use crate::support::lifecycle::{Target, kube_objects_of};

/// The result table of a run's output: the lines from its top border to its bottom one.
fn table(out: &str) -> Vec<String> {
    let lines: Vec<&str> = out.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with('┌'))
        .unwrap_or_else(|| panic!("no table in:\n{out}"));
    let end = start
        + lines[start..]
            .iter()
            .position(|l| l.starts_with('└'))
            .unwrap_or_else(|| panic!("no end of the table in:\n{out}"));
    lines[start..=end].iter().map(|l| l.to_string()).collect()
}

/// Every `lock.json` under `dir`, at any depth.
fn locks_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file() && e.file_name() == "lock.json")
        .map(|e| e.into_path())
        .collect()
}

fn run_examples(flags: &[String]) -> (Scratch, Vec<String>) {
    let s = Scratch::new();
    let mut args = vec!["run", "--trials", "2", "--headless"];
    args.extend(flags.iter().map(String::as_str));
    let out = skillscope(&s, &args);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{flags:?}:\n{text}");
    assert!(text.contains("finished"), "{text}");
    (s, table(&text))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_example_run_gives_the_same_table_as_on_docker() {
    let k8s = Target::kubernetes();
    k8s.require().await;
    let _turn = k8s.turn().await;
    let (_, on_docker) = run_examples(&Target::docker().flags());
    let (s, on_k8s) = run_examples(&k8s.flags());
    assert_eq!(
        on_k8s, on_docker,
        "Kubernetes:\n{on_k8s:#?}\nDocker:\n{on_docker:#?}"
    );
    // Oracle on the examples: 2 of 5 tasks need their skill.
    let joined = on_k8s.join("\n");
    assert!(
        joined.contains("60.0%") && joined.contains("100.0%") && joined.contains("+40.0"),
        "{joined}"
    );
    // The run is recorded as a Kubernetes run, and its trials ran in pods that are all gone.
    let st = skillscope(&s, &["status", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&st.stdout).expect("status --json");
    let uid = v["runs"][0]["run"]["uid"]
        .as_str()
        .expect("the run's uid")
        .to_string();
    assert_eq!(
        v["runs"][0]["run"]["settings"]["backend"]["kind"], "kubernetes",
        "{v:#}"
    );
    // Every trial's lock names the image it ran as pushed: by digest, in the cluster's registry.
    let (_, registry) = crate::harness::env();
    let locks = locks_under(s.dir.path());
    assert_eq!(
        locks.len(),
        20,
        "5 tasks × 2 conditions × 2 trials: {locks:?}"
    );
    for path in &locks {
        let lock: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path).unwrap()).expect("a lock");
        let image = lock["environment"]["kwargs"]["image"]
            .as_str()
            .unwrap_or("");
        assert!(
            image.starts_with(&format!("{registry}/")) && image.contains("@sha256:"),
            "{}: {lock:#}",
            path.display()
        );
    }
    let t0 = std::time::Instant::now();
    loop {
        let left = kube_objects_of(&uid).await;
        if left.is_empty() {
            break;
        }
        assert!(t0.elapsed().as_secs() < 30, "left behind: {left:?}");
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}
