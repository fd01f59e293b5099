//! Who a trial's execs run as: the image's `USER`, or the task's `[agent] user` and
//! `[verifier] user` (Harbor's keys) for their role, and how the image's ENTRYPOINT is started
//! as the image's user from skillscope's root PID 1.

use super::Failed;
use crate::domain::Outcome;
use crate::runner::work::ImageFacts;
use crate::skillsbench::Task;

/// The users of one trial, as execs take them ([`ImageFacts::exec_user`]).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Users {
    /// The image's `USER`, when it is not root.
    pub(super) image: Option<String>,
    /// `[agent] user`, when the task names it (`Some("0")` for root).
    pub(super) agent: Option<String>,
    /// `[verifier] user`, when the task names it (`Some("0")` for root).
    pub(super) verifier: Option<String>,
    /// The image's ENTRYPOINT as the agent's environment starts it: through the static `su`
    /// when the image's user is not root; empty when the image has none.
    pub(super) entry: Vec<String>,
}

impl Users {
    /// The users of `task` on the image `facts` describes.
    ///
    /// # Errors
    /// A [`Outcome::BuildError`] naming the key when a user is a name the image's
    /// `/etc/passwd` does not list (the task cannot run as written); a
    /// [`Outcome::RuntimeError`] (never a verdict) when the image's `USER` is an id of no name
    /// and it has an ENTRYPOINT, which `su` cannot start as that id.
    pub(super) fn of(task: &Task, facts: &ImageFacts) -> Result<Users, Failed> {
        let mut wrong = Vec::new();
        for (key, user) in [
            ("the image's USER", Some(&facts.user)),
            ("[agent] user", task.config.agent.user.as_ref()),
            ("[verifier] user", task.config.verifier.user.as_ref()),
        ] {
            if let Some(why) = user.and_then(|u| facts.unknown_user(u)) {
                wrong.push(format!("{key}: {why}"));
            }
        }
        if !wrong.is_empty() {
            return Err(Failed::new(Outcome::BuildError, wrong.join("; ")));
        }
        let role = |u: &Option<String>| {
            u.as_ref()
                .map(|u| facts.exec_user(u).unwrap_or_else(|| "0".into()))
        };
        let image = facts.exec_user(&facts.user);
        let entry = match (&image, facts.entrypoint.is_empty()) {
            (_, true) => Vec::new(),
            (None, false) => facts.entrypoint.clone(),
            (Some(u), false) => {
                let name = facts.user_name().ok_or_else(|| {
                    Failed::new(
                        Outcome::RuntimeError,
                        format!(
                            "the image's USER {u} has no name in its /etc/passwd: skillscope \
                             starts the image's ENTRYPOINT as that user with `su`, which needs one"
                        ),
                    )
                })?;
                crate::runner::as_user(&name, &facts.entrypoint)
            }
        };
        Ok(Users {
            agent: role(&task.config.agent.user),
            verifier: role(&task.config.verifier.user),
            image,
            entry,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::work::manifest::{FileKind, tests::manifest_of};

    fn facts(user: &str, entrypoint: &[&str]) -> ImageFacts {
        ImageFacts {
            user: user.into(),
            entrypoint: entrypoint.iter().map(|e| e.to_string()).collect(),
            files: manifest_of(&[(
                "etc/passwd",
                FileKind::File,
                "root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000::/home/app:/bin/sh\n",
            )]),
            ..Default::default()
        }
    }

    fn task(toml: &str) -> Task {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("t");
        std::fs::create_dir_all(&t).unwrap();
        std::fs::write(t.join("task.toml"), toml).unwrap();
        Task::load(&t, |_| None)
    }

    #[test]
    fn each_role_runs_as_its_key_else_the_image_s_user() {
        let u = Users::of(&task(""), &facts("1000", &["/entry.sh"])).unwrap();
        assert_eq!(u.image.as_deref(), Some("app"));
        assert_eq!((u.agent.clone(), u.verifier.clone()), (None, None));
        assert_eq!(
            u.entry,
            crate::runner::as_user("app", &["/entry.sh".to_string()])
        );
        let t = task("[agent]\nuser = \"app\"\n[verifier]\nuser = 0\n");
        let u = Users::of(&t, &facts("", &["/entry.sh"])).unwrap();
        assert_eq!(u.image, None);
        assert_eq!(u.agent.as_deref(), Some("app"));
        assert_eq!(u.verifier.as_deref(), Some("0"));
        assert_eq!(u.entry, ["/entry.sh"], "root's ENTRYPOINT runs as it is");
    }

    #[test]
    fn a_name_the_image_lacks_is_a_build_error_and_an_id_s_entrypoint_a_runtime_error() {
        let t = task("[agent]\nuser = \"agent\"\n[verifier]\nuser = \"checker\"\n");
        let e = Users::of(&t, &facts("", &[])).unwrap_err();
        assert_eq!(e.outcome, Outcome::BuildError);
        assert!(
            e.error.contains("[agent] user: no user agent"),
            "{}",
            e.error
        );
        assert!(
            e.error.contains("[verifier] user: no user checker"),
            "{}",
            e.error
        );
        let e = Users::of(&task(""), &facts("4242", &["/entry.sh"])).unwrap_err();
        assert_eq!(e.outcome, Outcome::RuntimeError);
        assert!(Users::of(&task(""), &facts("4242", &[])).is_ok());
    }
}
