//! The verifier's reward contract (Harbor's): `reward.txt` (one number) or `reward.json` (named
//! numbers) in the trial's `verifier/` folder, collapsed to one scalar reward; a reward of 1 is a
//! pass. Pure file reading, shared by the runner, the Harbor import and the dashboard.

use std::collections::BTreeMap;
use std::path::Path;

/// Why no reward could be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RewardError {
    /// Neither `reward.json` nor `reward.txt` exists.
    #[error("the verifier wrote no reward file (/logs/verifier/reward.txt or reward.json)")]
    Missing,
    /// The file is empty.
    #[error("{0} is empty")]
    Empty(String),
    /// The file does not hold what it should.
    #[error("{file}: {message}")]
    Malformed {
        /// `reward.txt` or `reward.json`.
        file: String,
        /// What is wrong.
        message: String,
    },
}

/// Reads the rewards a verifier left in `dir` (the trial's `verifier/` folder).
///
/// # Errors
/// [`RewardError`] when there is no usable reward file.
pub fn parse_rewards(dir: &Path) -> Result<BTreeMap<String, f64>, RewardError> {
    let json = dir.join("reward.json");
    let txt = dir.join("reward.txt");
    let exists = |p: &Path| std::fs::symlink_metadata(p).is_ok();
    if exists(&json) {
        let text = read_reward_file(&json).map_err(|e| RewardError::Malformed {
            file: "reward.json".into(),
            message: e.to_string(),
        })?;
        if text.trim().is_empty() {
            return Err(RewardError::Empty("reward.json".into()));
        }
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| RewardError::Malformed {
                file: "reward.json".into(),
                message: e.to_string(),
            })?;
        let map = value.as_object().ok_or_else(|| RewardError::Malformed {
            file: "reward.json".into(),
            message: "expected a JSON object of numbers".into(),
        })?;
        let mut out = BTreeMap::new();
        for (k, v) in map {
            let n = v
                .as_f64()
                .filter(|n| n.is_finite())
                .ok_or_else(|| RewardError::Malformed {
                    file: "reward.json".into(),
                    message: format!("value of {k:?} is not a finite number"),
                })?;
            out.insert(k.clone(), n);
        }
        if out.is_empty() {
            return Err(RewardError::Empty("reward.json".into()));
        }
        return Ok(out);
    }
    if exists(&txt) {
        let text = read_reward_file(&txt).map_err(|e| RewardError::Malformed {
            file: "reward.txt".into(),
            message: e.to_string(),
        })?;
        let t = text.trim();
        if t.is_empty() {
            return Err(RewardError::Empty("reward.txt".into()));
        }
        let n: f64 = t.parse().map_err(|_| RewardError::Malformed {
            file: "reward.txt".into(),
            message: format!("{t:?} is not a number"),
        })?;
        if !n.is_finite() {
            return Err(RewardError::Malformed {
                file: "reward.txt".into(),
                message: format!("{t:?} is not finite"),
            });
        }
        return Ok(BTreeMap::from([("reward".to_string(), n)]));
    }
    Err(RewardError::Missing)
}

/// Most bytes read from a reward file.
const MAX_REWARD_FILE: u64 = 1024 * 1024;

/// Reads a reward file the container wrote, refusing symlinks and non-regular files.
fn read_reward_file(path: &Path) -> std::io::Result<String> {
    crate::fs::read_text_capped(path, MAX_REWARD_FILE)
}

/// The trial's scalar reward: the `reward` key when present, else the only value, else the mean
/// of all values (Harbor's per-key mean collapsed to one number). `None` for an empty map.
pub fn scalar_reward(rewards: &BTreeMap<String, f64>) -> Option<f64> {
    if let Some(r) = rewards.get("reward") {
        return Some(*r);
    }
    if rewards.is_empty() {
        return None;
    }
    Some(rewards.values().sum::<f64>() / rewards.len() as f64)
}

/// A reward counts as a pass when it is 1 (full marks), allowing for float noise.
pub fn is_pass(reward: f64) -> bool {
    reward >= 1.0 - 1e-9
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (n, c) in files {
            std::fs::write(d.path().join(n), c).unwrap();
        }
        d
    }

    #[test]
    fn reward_txt() {
        let d = dir_with(&[("reward.txt", "1\n")]);
        assert_eq!(parse_rewards(d.path()).unwrap()["reward"], 1.0);
        let d = dir_with(&[("reward.txt", "0.375")]);
        assert_eq!(
            scalar_reward(&parse_rewards(d.path()).unwrap()),
            Some(0.375)
        );
    }

    #[test]
    fn reward_json_wins_and_is_checked() {
        let d = dir_with(&[
            ("reward.txt", "0"),
            ("reward.json", r#"{"reward": 1, "acc": 0.5}"#),
        ]);
        let r = parse_rewards(d.path()).unwrap();
        assert_eq!(scalar_reward(&r), Some(1.0));
        assert_eq!(r["acc"], 0.5);
        let d = dir_with(&[("reward.json", r#"{"a": 1, "b": 0}"#)]);
        assert_eq!(scalar_reward(&parse_rewards(d.path()).unwrap()), Some(0.5));
        let d = dir_with(&[("reward.json", r#"{"a": "x"}"#)]);
        assert!(matches!(
            parse_rewards(d.path()),
            Err(RewardError::Malformed { .. })
        ));
        let d = dir_with(&[("reward.json", "[1]")]);
        assert!(matches!(
            parse_rewards(d.path()),
            Err(RewardError::Malformed { .. })
        ));
    }

    #[test]
    fn missing_empty_malformed() {
        assert_eq!(
            parse_rewards(dir_with(&[]).path()),
            Err(RewardError::Missing)
        );
        assert!(matches!(
            parse_rewards(dir_with(&[("reward.txt", " \n")]).path()),
            Err(RewardError::Empty(_))
        ));
        assert!(matches!(
            parse_rewards(dir_with(&[("reward.txt", "pass")]).path()),
            Err(RewardError::Malformed { .. })
        ));
        assert!(matches!(
            parse_rewards(dir_with(&[("reward.txt", "inf")]).path()),
            Err(RewardError::Malformed { .. })
        ));
    }

    #[test]
    fn symlinked_reward_is_refused() {
        let d = dir_with(&[("elsewhere", "1")]);
        std::os::unix::fs::symlink(d.path().join("elsewhere"), d.path().join("reward.txt"))
            .unwrap();
        assert!(matches!(
            parse_rewards(d.path()),
            Err(RewardError::Malformed { .. })
        ));
    }

    #[test]
    fn pass_threshold() {
        assert!(is_pass(1.0));
        assert!(!is_pass(0.999));
    }
}
