//! Exec through the API over WebSocket: exit codes from the status channel, stdout and stderr
//! apart, stdin, the environment on stdin (never in the command line), the working folder, the
//! verifier's Secret, large output intact, and a stream cut under a running command.

use bytes::Bytes;
use skillscope::runner::kubernetes::exec::ExecStdin;
use skillscope::runner::kubernetes::{Cluster, ClusterSpec, ExecSpec, KubeFault, Role};

use crate::harness::{
    Relay, busybox_env, cluster, end_of, kubeconfig_variant, site, spec, started, trial,
};

fn sh(script: &str) -> ExecSpec {
    ExecSpec::argv(["/skillscope/static/sh", "-c", script])
}

#[tokio::test]
async fn exit_codes_streams_stdin_env_folder_and_size() {
    let (_cluster, site, pod) = started(301, Role::Agent).await;

    let ok = pod
        .run_output(&sh("echo out; echo err >&2"), 1024)
        .await
        .unwrap();
    assert_eq!(
        (ok.exit_code, &ok.stdout[..], &ok.stderr[..]),
        (0, &b"out\n"[..], &b"err\n"[..])
    );
    let three = pod.run_output(&sh("exit 3"), 1024).await.unwrap();
    assert_eq!(three.exit_code, 3);
    let missing = pod
        .run_output(&ExecSpec::argv(["/no/such/command"]), 1024)
        .await;
    assert!(missing.is_err() || missing.unwrap().exit_code != 0);

    let mut with_env = sh("echo \"$API_KEY|$(pwd)|$(cat)\"; cat /proc/$PPID/cmdline");
    with_env.env = vec![("API_KEY".into(), "sk-'quoted' $x".into())];
    with_env.workdir = Some("/tmp".into());
    with_env.stdin = Some(ExecStdin::Bytes(Bytes::from_static(b"from stdin")));
    let out = pod.run_output(&with_env, 4096).await.unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.exit_code, 0, "{text}");
    assert!(
        text.starts_with("sk-'quoted' $x|/tmp|from stdin\n"),
        "{text}"
    );
    assert!(
        !text[text.find('\n').unwrap()..].contains("sk-"),
        "the value is not in argv: {text}"
    );

    // Another user of the image's /etc/passwd, through the static busybox's su.
    let add = sh("echo 'runner:x:4321:4321::/tmp:/bin/sh' >> /etc/passwd");
    assert_eq!(pod.run_output(&add, 1024).await.unwrap().exit_code, 0);
    let mut as_runner = sh("echo \"$(/skillscope/static/id -u) $ARG\"");
    as_runner.user = Some("runner".into());
    as_runner.env = vec![("ARG".into(), "kept".into())];
    let out = pod.run_output(&as_runner, 1024).await.unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "4321 kept\n",
        "{out:?}"
    );

    // 3 MiB of output arrives whole, in chunks.
    let mut stream = pod
        .spawn(&sh("/skillscope/static/head -c 3145728 /dev/zero"))
        .await
        .unwrap();
    let (mut bytes, mut chunks) = (0usize, 0usize);
    loop {
        match stream.next().await.expect("an event").expect("no fault") {
            skillscope::runner::kubernetes::ExecEvent::Stdout(b) => {
                bytes += b.len();
                chunks += 1;
            }
            skillscope::runner::kubernetes::ExecEvent::Stderr(_) => {}
            skillscope::runner::kubernetes::ExecEvent::Exit(code) => {
                assert_eq!(code, 0);
                break;
            }
        }
    }
    assert_eq!(bytes, 3 << 20);
    assert!(chunks > 1);
    site.close().await;
}

#[tokio::test]
async fn the_verifier_reads_its_secret_and_the_agent_cannot_ask_for_it() {
    let cluster = cluster().await;
    let labels = trial(302);
    let site = site(&cluster, &labels, &[("VERIFY_TOKEN", "tok-123")]).await;
    let mut env = busybox_env(Role::Verifier).await;
    env.mount_secret = true;
    env.empty_dirs = vec!["/logs/verifier".into()];
    let verifier = site.start(&env).await.expect("verifier pod");
    let mut spec = sh("echo \"$VERIFY_TOKEN\"; ls -ld /logs/verifier");
    spec.secret_env = true;
    let out = verifier.run_output(&spec, 4096).await.unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("tok-123\n"), "{text}");
    let agent = site
        .start(&busybox_env(Role::Agent).await)
        .await
        .expect("agent pod");
    let err = agent.spawn(&spec).await.err().expect("refused");
    assert_eq!(err.fault, KubeFault::Refused);
    site.close().await;
}

#[tokio::test]
async fn a_cut_stream_is_a_fault_not_an_exit_code() {
    let relay = Relay::start().await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = kubeconfig_variant(dir.path(), Some(&relay.url), None);
    let base = spec();
    let cluster = Cluster::connect(&ClusterSpec {
        kubeconfig: Some(kubeconfig),
        ..base
    })
    .await
    .expect("connect through the relay");
    let labels = trial(303);
    let site = site(&cluster, &labels, &[]).await;
    let pod = site
        .start(&busybox_env(Role::Agent).await)
        .await
        .expect("pod");
    let mut stream = pod
        .spawn(&sh("echo started; exec /skillscope/static/sleep 60"))
        .await
        .unwrap();
    let first = stream.next().await.expect("event").expect("output");
    assert!(matches!(
        first,
        skillscope::runner::kubernetes::ExecEvent::Stdout(_)
    ));
    relay.cut();
    let end = end_of(&mut stream).await;
    let err = end.expect_err("a cut stream has no exit code");
    assert_eq!(err.fault, KubeFault::StreamCut, "{err}");
    pod.health().await.expect("the pod itself is fine");
    pod.stop_processes().await.expect("the sleep is stopped");
    site.close().await;
}
