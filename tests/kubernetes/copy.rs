//! Files in and out of a pod as tar through exec: a round trip keeps contents, modes and links
//! (as links); an archive that writes through a link or leaves its folder is refused before
//! anything is unpacked; a copy out stops at its cap; a missing path is named.

use bytes::Bytes;
use skillscope::runner::kubernetes::copy::is_missing_path;
use skillscope::runner::kubernetes::{ExecSpec, KubeFault, Role, TarBody};

use crate::harness::started;

fn archive(entries: &[(&str, &[u8], u32)], links: &[(&str, &str)]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (path, data, mode) in entries {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(*mode);
        h.set_entry_type(tar::EntryType::Regular);
        b.append_data(&mut h, path, *data).unwrap();
    }
    for (path, target) in links {
        let mut h = tar::Header::new_gnu();
        h.set_size(0);
        h.set_mode(0o777);
        h.set_entry_type(tar::EntryType::Symlink);
        b.append_link(&mut h, path, target).unwrap();
    }
    b.into_inner().unwrap()
}

fn entries(tar_bytes: &[u8]) -> Vec<(String, Vec<u8>, Option<String>)> {
    let mut a = tar::Archive::new(tar_bytes);
    let mut v = Vec::new();
    for e in a.entries().unwrap() {
        let mut e = e.unwrap();
        let path = e.path().unwrap().display().to_string();
        let link = e.link_name().unwrap().map(|l| l.display().to_string());
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut e, &mut data).unwrap();
        v.push((path, data, link));
    }
    v
}

#[tokio::test]
async fn a_round_trip_keeps_files_modes_and_links() {
    let (_cluster, site, pod) = started(401, Role::Verifier).await;
    let big: Vec<u8> = (0..2_000_000u32).map(|i| (i % 251) as u8).collect();
    let tar_in = archive(
        &[
            ("work/a.txt", b"alpha\n", 0o644),
            ("work/bin/run.sh", b"#!/bin/sh\n", 0o755),
            ("work/big", &big, 0o600),
        ],
        &[("work/link", "/etc/passwd")],
    );
    pod.upload_tar(TarBody::Bytes(Bytes::from(tar_in)), "/data/in")
        .await
        .expect("upload");
    let modes = pod
        .run_output(
            &ExecSpec::argv([
                "/skillscope/static/stat",
                "-c",
                "%a %n",
                "/data/in/work/bin/run.sh",
            ]),
            1024,
        )
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&modes.stdout).trim(),
        "755 /data/in/work/bin/run.sh"
    );

    let mut out = Vec::new();
    let cut = pod
        .download_tar("/data/in/work", &mut out, 64 << 20)
        .await
        .expect("download");
    assert!(!cut);
    let got = entries(&out);
    let find = |p: &str| {
        got.iter()
            .find(|(path, _, _)| path.trim_end_matches('/') == p)
            .cloned()
    };
    assert_eq!(find("work/a.txt").expect("a.txt").1, b"alpha\n");
    assert_eq!(find("work/big").expect("big").1, big);
    assert_eq!(
        find("work/link").expect("link").2.as_deref(),
        Some("/etc/passwd"),
        "links stay links"
    );

    // From a file on disk, streamed.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.tar");
    std::fs::write(&file, archive(&[("f.txt", b"from disk", 0o644)], &[])).unwrap();
    pod.upload_tar(TarBody::File(file), "/data/disk")
        .await
        .expect("upload a file");
    let mut out = Vec::new();
    pod.download_tar("/data/disk/f.txt", &mut out, 1 << 20)
        .await
        .unwrap();
    assert_eq!(entries(&out)[0].1, b"from disk");
    site.close().await;
}

#[tokio::test]
async fn hostile_archives_caps_and_missing_paths() {
    let (_cluster, site, pod) = started(402, Role::Verifier).await;

    let mut b = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.set_size(0);
    h.set_entry_type(tar::EntryType::Symlink);
    b.append_link(&mut h, "etc", "/etc").unwrap();
    let mut h = tar::Header::new_gnu();
    h.set_size(4);
    h.set_entry_type(tar::EntryType::Regular);
    b.append_data(&mut h, "etc/owned", &b"evil"[..]).unwrap();
    let through = b.into_inner().unwrap();
    let err = pod
        .upload_tar(TarBody::Bytes(Bytes::from(through)), "/data/x")
        .await
        .expect_err("a write through a link is refused");
    assert_eq!(err.fault, KubeFault::Refused);
    assert!(err.message.contains("through the link etc"), "{err}");
    let check = pod
        .run_output(
            &ExecSpec::argv([
                "/skillscope/static/sh",
                "-c",
                "ls /etc/owned /data/x 2>&1; true",
            ]),
            1024,
        )
        .await
        .unwrap();
    assert!(
        String::from_utf8_lossy(&check.stdout)
            .matches("No such file")
            .count()
            == 2
    );

    // A copy out stops at its cap, and says so.
    pod.run_output(
        &ExecSpec::argv([
            "/skillscope/static/sh",
            "-c",
            "/skillscope/static/head -c 1000000 /dev/urandom > /tmp/noise",
        ]),
        1024,
    )
    .await
    .unwrap();
    let mut out = Vec::new();
    let cut = pod
        .download_tar("/tmp/noise", &mut out, 100_000)
        .await
        .expect("capped copy");
    assert!(cut);
    assert_eq!(out.len(), 100_000);

    let mut out = Vec::new();
    let err = pod
        .download_tar("/no/such/path", &mut out, 1 << 20)
        .await
        .expect_err("missing");
    assert!(is_missing_path(&err), "{err}");
    assert!(out.is_empty());
    site.close().await;
}
