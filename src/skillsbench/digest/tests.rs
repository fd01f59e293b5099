//! Digests against the values Harbor 0.26.0 and BenchFlow computed for the same folders.
//!
//! The expected values come from the packages themselves: Harbor's
//! `harbor.publisher.packager.Packager.compute_content_hash` and `harbor.skills.compute_skill_digest`
//! (harbor 0.26.0 from PyPI, pathspec 1.1.1, Python 3.12.1) and BenchFlow's
//! `benchflow._utils.task_authoring.task_digest` (benchflow-ai/benchflow at 62cc7e4), run on the
//! folders in the repository (the example tasks, fixture tasks, and a vendored real SkillsBench
//! task) and on trees built file for file as [`tree`] builds them here.

use std::path::{Path, PathBuf};

use super::*;

/// A tree entry: a file's text, a folder, or a symlink to a target.
enum E {
    F(&'static str),
    D,
    L(&'static str),
}
use E::*;

/// Builds `entries` under `root/name` (a fresh folder) and returns it.
fn tree(root: &Path, name: &str, entries: &[(&str, E)]) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for (rel, e) in entries {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        match e {
            F(text) => std::fs::write(&p, text).unwrap(),
            D => std::fs::create_dir_all(&p).unwrap(),
            L(target) => std::os::unix::fs::symlink(target, &p).unwrap(),
        }
    }
    dir
}

const BASE: [(&str, E); 3] = [
    ("task.toml", F("x")),
    ("instruction.md", F("i")),
    ("tests/test.sh", F("t")),
];

fn with_base(extra: Vec<(&'static str, E)>) -> Vec<(&'static str, E)> {
    let mut v: Vec<(&str, E)> = BASE.into_iter().collect();
    v.extend(extra);
    v
}

/// An edge case: name, entries, Harbor 0.26's digest, BenchFlow's, the files Harbor hashed.
type Case = (
    &'static str,
    Vec<(&'static str, E)>,
    &'static str,
    &'static str,
    Vec<&'static str>,
);

/// The edge cases, each with (Harbor 0.26, BenchFlow) digests and the files Harbor hashed.
fn cases() -> Vec<Case> {
    vec![
        (
            // Root files beyond the four are out; default ignores; hidden files in; a
            // `.harborignore` outside the scopes excludes only itself; steps/ whole; the sort is
            // by the whole string (`-` < `.` < `/`).
            "defaults",
            with_base(vec![
                ("README.md", F("r")),
                ("trajectory.json", F("{}")),
                ("notes.txt", F("n")),
                ("Makefile", F("m")),
                (".env", F("e")),
                ("environment/Dockerfile", F("d")),
                ("environment/.hidden", F("h")),
                ("environment/__pycache__/a.pyc", F("p")),
                ("environment/x.pyc", F("p")),
                ("environment/.DS_Store", F("d")),
                ("environment/a.swp", F("s")),
                ("environment/b~", F("b")),
                ("environment/.harborignore", F("*\n")),
                ("solution/solve.sh", F("s")),
                ("solution/.git/config", F("g")),
                ("other/x.txt", F("o")),
                ("environment/emptydir", D),
                ("steps/s1/instruction.md", F("si")),
                ("steps/s1/workdir/setup.sh", F("w")),
                ("tests/sub/a-b.txt", F("1")),
                ("tests/sub/a/b.txt", F("2")),
                ("tests/sub/a.b", F("3")),
            ]),
            "sha256:a53230b43283b0430f7ab5dbd3e8e389dcd68bb573e83396fcce1b78cd800678",
            "sha256:f8be6dfd9b4ef15f6d729cd67dd753af6ab4aee5a2ad5317e4c68cffa25d61cc",
            vec![
                "README.md",
                "environment/.hidden",
                "environment/Dockerfile",
                "instruction.md",
                "solution/.git/config",
                "solution/solve.sh",
                "steps/s1/instruction.md",
                "steps/s1/workdir/setup.sh",
                "task.toml",
                "tests/sub/a-b.txt",
                "tests/sub/a.b",
                "tests/sub/a/b.txt",
                "tests/test.sh",
                "trajectory.json",
            ],
        ),
        (
            // A root .gitignore replaces the defaults (the .pyc is hashed); a negation re-includes
            // a file of an excluded folder (pathspec, not git); a nested .gitignore is a file.
            "gitignore",
            with_base(vec![
                (
                    ".gitignore",
                    F(
                        "*.txt\n!keep.txt\nenvironment/build/\n!environment/build/keep.bin\n# c\n\n/instruction.md\n",
                    ),
                ),
                ("environment/__pycache__/a.pyc", F("p")),
                ("environment/a.txt", F("a")),
                ("environment/keep.txt", F("k")),
                ("environment/build/x.bin", F("b")),
                ("environment/build/keep.bin", F("k")),
                ("tests/build/y", F("y")),
                ("environment/sub/.gitignore", F("*\n")),
                ("environment/sub/z.dat", F("z")),
            ]),
            "sha256:742b652a1d2caddcf0a016488193d0419d17b2ef1dbc0396e842ffe50a56f8f3",
            "sha256:c7f8edf3d3a98feeaf815e9e02a9a4a102daa22212f51f30f0ad335082c6d512",
            vec![
                "environment/__pycache__/a.pyc",
                "environment/build/keep.bin",
                "environment/keep.txt",
                "environment/sub/.gitignore",
                "environment/sub/z.dat",
                "task.toml",
                "tests/build/y",
                "tests/test.sh",
            ],
        ),
        (
            // .harborignore rules only in tests/, solution/, steps/*/tests|solution; inherited;
            // an inner file negates an outer rule; an excluded folder stays excluded.
            "harborignore",
            with_base(vec![
                ("tests/.harborignore", F("*.log\nfixtures/\n")),
                ("tests/a.log", F("l")),
                ("tests/fixtures/big.bin", F("b")),
                ("tests/fixtures/keep", F("k")),
                ("tests/keep.py", F("k")),
                (
                    "tests/deep/.harborignore",
                    F("!a.log\n*.py\n!fixtures/keep\n"),
                ),
                ("tests/deep/a.log", F("l")),
                ("tests/deep/x.py", F("p")),
                ("environment/.harborignore", F("*\n")),
                ("environment/Dockerfile", F("d")),
                ("environment/a.log", F("l")),
                ("solution/.harborignore", F("secret\n")),
                ("solution/secret", F("s")),
                ("solution/solve.sh", F("s")),
                (".harborignore", F("*\n")),
                ("steps/one/tests/.harborignore", F("*.tmp\n")),
                ("steps/one/tests/x.tmp", F("x")),
                ("steps/one/tests/y.sh", F("y")),
                ("steps/one/workdir/.harborignore", F("*\n")),
                ("steps/one/workdir/z.tmp", F("z")),
            ]),
            "sha256:3cc54ff3f321e8bedd5aea08ee71554201368e17e274db6a32e70141a0f27c56",
            "sha256:0d2a0e6e4a9f3d612bfc99dceec24bb79c52f6f00007401c53af12082059ff95",
            vec![
                "environment/Dockerfile",
                "environment/a.log",
                "instruction.md",
                "solution/solve.sh",
                "steps/one/tests/y.sh",
                "steps/one/workdir/z.tmp",
                "task.toml",
                "tests/deep/a.log",
                "tests/keep.py",
                "tests/test.sh",
            ],
        ),
        (
            // Harbor hashes a symlinked file through its target (even outside the task), not a
            // symlinked folder, not a dangling link; BenchFlow hashes no symlink.
            "symlinks",
            with_base(vec![
                ("environment/Dockerfile", F("d")),
                ("environment/realdir/f", F("f")),
                ("environment/link-to-file", L("Dockerfile")),
                ("environment/link-to-dir", L("realdir")),
                ("environment/link-outside", L("../../outside.txt")),
                ("environment/dangling", L("nonexistent")),
                ("solution/solve.sh", L("../tests/test.sh")),
            ]),
            "sha256:3371a22d464e694f6ed48a2fe596ed383ac4f2f49a7e155020663b30436e3a5c",
            "sha256:81df9f45cd9e538beb6f0e6f70dea763a7f00f92a71ed8db61a133b1317b00eb",
            vec![
                "environment/Dockerfile",
                "environment/link-outside",
                "environment/link-to-file",
                "environment/realdir/f",
                "instruction.md",
                "solution/solve.sh",
                "task.toml",
                "tests/test.sh",
            ],
        ),
        (
            // Code point order, no folding.
            "unicode",
            with_base(vec![
                ("environment/é.txt", F("e")),
                ("environment/z.txt", F("z")),
                ("environment/Z.txt", F("Z")),
                ("environment/a b.txt", F("s")),
                ("environment/ß", F("s")),
                ("environment/😀", F("x")),
            ]),
            "sha256:dbeb75c6cef8724f718bfe2c32c3a9f01c134ffd39f9eb4e63f03628989d1c7a",
            "sha256:791d048ac1672384b36f4bf1a05e006e5f1714ad20886ab2f043b37613777d1c",
            vec![
                "environment/Z.txt",
                "environment/a b.txt",
                "environment/z.txt",
                "environment/ß",
                "environment/é.txt",
                "environment/😀",
                "instruction.md",
                "task.toml",
                "tests/test.sh",
            ],
        ),
        (
            // Nothing Harbor collects: SHA-256 of nothing.
            "empty",
            vec![("foo", F("x")), ("other/bar", F("y"))],
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "sha256:0b02edeee49bb46afbf0774d2f2ad6984f652d48f0c34978cf304c08af003023",
            vec![],
        ),
        (
            "everything-ignored",
            with_base(vec![
                (".gitignore", F("*\n")),
                ("environment/Dockerfile", F("d")),
            ]),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "sha256:6d9ee8e0294459a9048de510ec7652f863edc8b231dfab8286be89d6b88d4bcc",
            vec![],
        ),
    ]
}

#[test]
fn edge_cases_digest_as_harbor_and_benchflow_do() {
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path().join("trees");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("outside.txt"), "outside").unwrap();
    for (name, entries, harbor, benchflow, files) in cases() {
        let dir = tree(&root, name, &entries);
        let listed: Vec<String> = task_files(&dir)
            .unwrap()
            .into_iter()
            .map(|(r, _)| r)
            .collect();
        assert_eq!(listed, files, "{name}: files");
        assert_eq!(task_digest(&dir).unwrap(), harbor, "{name}: Harbor digest");
        assert_eq!(
            benchflow::task_digest(&dir).unwrap(),
            benchflow,
            "{name}: BenchFlow digest"
        );
    }
}

#[test]
fn the_folder_name_is_not_part_of_the_digest() {
    let scratch = tempfile::tempdir().unwrap();
    let a = tree(scratch.path(), "a", &BASE);
    let b = tree(scratch.path(), "unicodé-tâsk", &BASE);
    assert_eq!(task_digest(&a).unwrap(), task_digest(&b).unwrap());
}

#[test]
fn unusable_ignore_files_are_errors_naming_them() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = tree(
        scratch.path(),
        "t",
        &with_base(vec![("tests/.harborignore", D)]),
    );
    let err = task_digest(&dir).unwrap_err().to_string();
    assert!(
        err.contains("tests/.harborignore") && err.contains("regular file"),
        "{err}"
    );
    std::fs::write(scratch.path().join("secret"), "*").unwrap();
    let dir = tree(
        scratch.path(),
        "u",
        &with_base(vec![
            ("solution/.harborignore", L("../../secret")),
            ("solution/solve.sh", F("s")),
        ]),
    );
    let err = task_digest(&dir).unwrap_err().to_string();
    assert!(err.contains("must stay within the task"), "{err}");
    let dir = tree(
        scratch.path(),
        "v",
        &with_base(vec![(".gitignore", F("!\n"))]),
    );
    let err = task_digest(&dir).unwrap_err().to_string();
    assert!(
        err.contains(".gitignore") && err.contains("invalid gitignore pattern"),
        "{err}"
    );
}

#[test]
fn skill_digest_sorts_by_component_as_harbor_does() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = tree(
        scratch.path(),
        "skill",
        &[
            ("SKILL.md", F("---\nname: s\n---\n")),
            ("a/b", F("1")),
            ("a-b/x", F("2")),
            (".hidden", F("h")),
            ("scripts/run.py", F("r")),
            ("ln", L("SKILL.md")),
            ("dl", L("a")),
        ],
    );
    assert_eq!(
        skill_digest(&dir).unwrap(),
        "sha256:e1bb17bf7b6373de668d301e4dee0718dd3f5941044df2096ba3e7a92dca82d7"
    );
}

/// Harbor 0.26.0's and BenchFlow's digests of the example tasks shipped in `data/example-tasks`.
const EXAMPLE_TASKS: [(&str, &str, &str); 5] = [
    (
        "ledger-code-mapping",
        "sha256:8c8248a0915aa358663a8720dc47f643de2ee4c6225384ca130f33954308149e",
        "sha256:e2634ec63d8838f1a00e866e34a88b07ee0d1f3034cd627ef576954a2df844d3",
    ),
    (
        "sales-region-totals",
        "sha256:ae1eacaa997ebef97cd83eab18d2f7692020b0ffbda04bd09aa71d09aa810938",
        "sha256:d05cf41cffafda70959a864686a11a63f8a040347224be9355b8748e705fd461",
    ),
    (
        "sensor-drift-correction",
        "sha256:a5127c63ca4bbcfd7136886e752473dac3071521d152175fd1d8b42f3b8deadd",
        "sha256:250c9b06f4a36e4d922a417b6f84a01392a9abef853ad781bf2ef54773a4a20f",
    ),
    (
        "service-log-triage",
        "sha256:b8390a895f664d76fdd2c2836d734256843e91cabb1686372335800506a07216",
        "sha256:366c0db7ecb06087b11e217a161760aa808c0dc81de3bdd461a5bcccf9d36f12",
    ),
    (
        "temperature-unit-normalization",
        "sha256:518ca590e7bb7143b1c09106897a9b250a873e7f424d903d5072de3d8eff15c9",
        "sha256:6e62d716936ab247e975ccfb1405e390d270cb0f93c5b5513d8ce45a8eb7e92e",
    ),
];

/// The same for the test fixture tasks in `tests/fixtures/tasks` (a hidden `.dockerignore`, a
/// task without `environment/`, a `task.toml` that does not parse, a name outside ASCII).
const FIXTURE_TASKS: [(&str, &str, &str); 6] = [
    (
        "passes",
        "sha256:32e0c0157002203a1ff62e7370baac7de225e81d757e8c557a132c7c86217dd5",
        "sha256:01b4f2efbc0a6c916a26e8c0afa6664f9c28979b4d1de217d935f25939abb7d1",
    ),
    (
        "unicodé-tâsk",
        "sha256:32e0c0157002203a1ff62e7370baac7de225e81d757e8c557a132c7c86217dd5",
        "sha256:01b4f2efbc0a6c916a26e8c0afa6664f9c28979b4d1de217d935f25939abb7d1",
    ),
    (
        "dockerignore",
        "sha256:4bffc960a96e334e4915e1a661a750586ce6a61110ae0292ad3ae59d9e9e4f72",
        "sha256:717d7b96fb1b26531ef5c5fd21f66251d000bec5cc6f498881160310a7c79a83",
    ),
    (
        "missing-dockerfile",
        "sha256:fa764441ae59583fca1d54f7d5a161e94b3a9e3bf2f3ba96f22ffdb47949f9b3",
        "sha256:5c33b9c637c3f9c44852ff14aef51e25a6f47ec98f568125b628897d5a6bec65",
    ),
    (
        "malformed-toml",
        "sha256:091651f92d7ce0b9a1d39b27e29f0b927894ccc2d4fe2a6e4d0503e0e90e9562",
        "sha256:3c62ce43a5a42a536981b07958ccb8e475e7caddfd46912836a924742bdcc953",
    ),
    (
        "compose-sidecar",
        "sha256:40c08c1fd788af0bab235aab06adf66415785c5556eb98021f48f852a32bea95",
        "sha256:ba6ea52db61dc09c00d2b5b0fc9c056b84139bde77e3d73ab3d9c42b159d3553",
    ),
];

/// A real SkillsBench task, vendored (`tests/fixtures/skillsbench-tasks`, Apache-2.0, see its
/// NOTICE): the data-only copy of 3d-scan-calc (task.toml, instruction.md, one skill).
const REAL_TASKS: [(&str, &str, &str); 1] = [(
    "3d-scan-calc",
    "sha256:b9b988ef09e749bd8d3f99094a4817c8351402fd1a78b66d347d1d714ecf3369",
    "sha256:bdd7d088a60ae0140bad50bf58f185cb835c090bdaa41a5060422963033a4788",
)];

#[test]
fn example_and_fixture_tasks_digest_as_harbor_and_benchflow_do() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (folder, table) in [
        ("data/example-tasks", &EXAMPLE_TASKS[..]),
        ("tests/fixtures/tasks", &FIXTURE_TASKS[..]),
        ("tests/fixtures/skillsbench-tasks", &REAL_TASKS[..]),
    ] {
        for (name, harbor, benchflow) in table {
            let dir = repo.join(folder).join(name);
            assert_eq!(
                task_digest(&dir).unwrap(),
                *harbor,
                "{folder}/{name}: Harbor"
            );
            assert!(is_digest(harbor));
            assert_eq!(
                benchflow::task_digest(&dir).unwrap(),
                *benchflow,
                "{folder}/{name}: BenchFlow"
            );
        }
    }
    assert!(!is_digest("sha256:ABC"));
    assert!(!is_digest(&"0".repeat(64)));
}
