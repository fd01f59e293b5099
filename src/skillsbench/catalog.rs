//! The SkillsBench catalog: task id → domain, difficulty, skills — shipped in `data/skillsbench/catalog.csv`.
//!
//! Source: `shared/skillsbench/catalog.csv` of the evaluation plan. `domain` is the 11-domain mapping
//! used for the paper's per-domain breakdown; `v1_1_category` is the benchmark's own 8-category label.
//! An operator may pass another CSV with at least `task_id` and `domain` columns to override domains.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::BenchError;

/// The catalog shipped inside the binary.
pub const SHIPPED_CATALOG_CSV: &str = include_str!("../../data/skillsbench/catalog.csv");

/// One catalog row (only the columns skillscope uses; others are ignored).
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct CatalogEntry {
    /// Task id (folder name).
    pub task_id: String,
    /// Domain label for per-domain pass rates.
    pub domain: String,
    /// Difficulty label, normalised to the closed set `easy` / `medium` / `hard`
    /// ([`super::Difficulty`]; the shipped catalog's one `middle` is `medium`); empty when the
    /// row gives none.
    #[serde(default)]
    pub difficulty: String,
    /// The benchmark's own category (v1.1).
    #[serde(default)]
    pub v1_1_category: String,
    /// Number of curated skills.
    #[serde(default)]
    pub num_skills: Option<u32>,
    /// Curated skill names, `;`-separated.
    #[serde(default)]
    pub skill_names: String,
}

/// Task id → catalog entry.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    entries: BTreeMap<String, CatalogEntry>,
}

impl Catalog {
    /// The shipped SkillsBench catalog (87 tasks).
    pub fn shipped() -> Catalog {
        Self::parse(
            SHIPPED_CATALOG_CSV,
            Path::new("data/skillsbench/catalog.csv"),
        )
        .expect("shipped catalog parses")
    }

    /// Parses catalog CSV text; `path` names the file in errors. Difficulties are normalised
    /// to the closed set ([`super::Difficulty`]).
    ///
    /// # Errors
    /// [`BenchError::Catalog`] naming the file and the row when a row is malformed or names a
    /// difficulty outside the closed set (every such row, not only the first).
    pub fn parse(text: &str, path: &Path) -> Result<Catalog, BenchError> {
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        let err = |e: csv::Error| BenchError::Catalog {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        let headers = reader.headers().map_err(err)?.clone();
        let mut entries = BTreeMap::new();
        let mut unknown = Vec::new();
        for record in reader.records() {
            let record = record.map_err(err)?;
            let mut row: CatalogEntry = record.deserialize(Some(&headers)).map_err(err)?;
            if !row.difficulty.trim().is_empty() {
                match super::Difficulty::parse(&row.difficulty) {
                    Some(d) => row.difficulty = d.as_str().to_string(),
                    None => unknown.push(format!(
                        "line {} (task {}): {}",
                        record.position().map_or(0, |p| p.line()),
                        row.task_id,
                        super::Difficulty::unknown(&row.difficulty)
                    )),
                }
            }
            entries.insert(row.task_id.clone(), row);
        }
        if !unknown.is_empty() {
            return Err(BenchError::Catalog {
                path: path.to_path_buf(),
                message: unknown.join("; "),
            });
        }
        Ok(Catalog { entries })
    }

    /// Reads a catalog CSV file.
    ///
    /// # Errors
    /// [`BenchError::Catalog`] when the file cannot be read or parsed.
    pub fn from_file(path: &Path) -> Result<Catalog, BenchError> {
        let text = std::fs::read_to_string(path).map_err(|e| BenchError::Catalog {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Self::parse(&text, path)
    }

    /// This catalog with `other`'s rows replacing or adding to its own.
    pub fn overridden_by(mut self, other: Catalog) -> Catalog {
        self.entries.extend(other.entries);
        self
    }

    /// The entry of a task.
    pub fn get(&self, task_id: &str) -> Option<&CatalogEntry> {
        self.entries.get(task_id)
    }

    /// (domain, difficulty) of a task, for [`super::Task::load`].
    pub fn lookup(&self, task_id: &str) -> Option<(String, String)> {
        self.get(task_id)
            .map(|e| (e.domain.clone(), e.difficulty.clone()))
    }

    /// All entries, sorted by task id.
    pub fn entries(&self) -> impl Iterator<Item = &CatalogEntry> {
        self.entries.values()
    }

    /// Number of tasks.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_catalog_has_87_tasks_in_11_domains() {
        let c = Catalog::shipped();
        assert_eq!(c.len(), 87);
        let domains: std::collections::BTreeSet<_> =
            c.entries().map(|e| e.domain.as_str()).collect();
        assert_eq!(domains.len(), 11, "{domains:?}");
        assert_eq!(c.get("3d-scan-calc").unwrap().domain, "Natural Science");
    }

    #[test]
    fn override_replaces_domain() {
        let o = Catalog::parse(
            "task_id,domain\n3d-scan-calc,Geometry\n",
            Path::new("o.csv"),
        )
        .unwrap();
        let c = Catalog::shipped().overridden_by(o);
        assert_eq!(c.lookup("3d-scan-calc").unwrap().0, "Geometry");
    }

    #[test]
    fn difficulties_come_from_a_closed_set() {
        // The shipped catalog's one `middle` is medium: one level, one table row.
        let c = Catalog::shipped();
        assert_eq!(
            c.get("protein-expression-analysis").unwrap().difficulty,
            "medium"
        );
        let levels: std::collections::BTreeSet<_> =
            c.entries().map(|e| e.difficulty.as_str()).collect();
        assert_eq!(levels, ["easy", "hard", "medium"].into_iter().collect());
        // An unknown level is an error naming the file and every row.
        let e = Catalog::parse(
            "task_id,domain,difficulty\na,x,easy\nb,x,impossible\nc,x,Extreme\nd,x,nightmare\n",
            Path::new("cat.csv"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("cat.csv"), "{e}");
        assert!(
            e.contains("line 3 (task b)") && e.contains("\"impossible\""),
            "{e}"
        );
        assert!(
            e.contains("line 5 (task d)") && !e.contains("task c"),
            "{e}"
        );
    }

    #[test]
    fn malformed_row_names_file() {
        let e = Catalog::parse(
            "task_id,domain,num_skills\nx,y,notanumber\n",
            Path::new("bad.csv"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("bad.csv"), "{e}");
    }
}
