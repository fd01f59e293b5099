//! What a link of the work that becomes a copy may be ([`super::collect::LinkCopy`]): the
//! checks [`Carry`]'s links run before a link to a file or folder is made a copy of it in the
//! verifier's environment — what the agent deleted, a folder that cannot be copied, a copy
//! that would land off the work, and the bytes it takes.

use super::collect::{Carry, Changed, Collected, describe};
use super::links::WorkLinks;
use super::manifest::{FileKind, Manifest};
use super::paths::{follow, join};
use super::rule::{Class, Rules, parent};

impl Carry<'_> {
    /// Whether the image's entry `path` is gone from the agent's environment: the nearest of its
    /// folders that was listed holds no more the entry on the way to it (`path` itself, or a
    /// folder above it the agent deleted whole), and nothing of the agent's stands there.
    pub(super) fn deleted(&self, path: &str) -> bool {
        let (listed, listed_dirs) = self.listing;
        let mut at = path;
        while at != "/" {
            if listed_dirs.contains(parent(at)) {
                return !listed.contains(at) && !self.listed.contains_key(at);
            }
            at = parent(at);
        }
        false
    }

    /// Why the link at `link` to folder `folder` cannot be made a copy of it: the folder is
    /// `/`, holds the link itself, holds a link of the agent's, or a link of the image's that
    /// leads out of it (a copy would keep that link, and with it a way to where the verifier
    /// writes; an image's link within the folder, `libx.so` → `libx.so.1`, stays within the
    /// copy).
    pub(super) fn folder_uncopyable(
        &self,
        link: &str,
        folder: &str,
        work_links: &WorkLinks,
        manifest: &Manifest,
    ) -> Option<String> {
        let under = |p: &str| folder == "/" || p.starts_with(&format!("{folder}/"));
        if folder == "/" || link == folder || under(link) {
            return Some(format!("to {folder}, which holds the link itself"));
        }
        if let Some((p, _)) = work_links.iter_made().find(|(p, _)| under(p)) {
            return Some(format!("to {folder}, which holds the agent's link {p}"));
        }
        let prefix = format!("{folder}/");
        manifest
            .files
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .filter_map(|(p, f)| Some((p, f.link.as_deref()?)))
            .find(|(p, target)| {
                let at = if target.starts_with('/') {
                    target.to_string()
                } else {
                    join(parent(p), target)
                };
                let lexical = follow(&at, &|_| None);
                !lexical.is_some_and(|t| under(&t))
            })
            .map(|(p, _)| format!("to {folder}, which holds the image's link {p} out of it"))
    }

    /// Why a copy of `folder` at `link` would not be the agent's work: the first of its
    /// destinations (`link` itself, and `link/<rel>` for every entry under `folder`, the image's
    /// and the agent's) that the rule gives another class — a `conftest.py` where pytest
    /// collects, a package in `node_modules`. Each such destination (the first
    /// [`MAX_COPY_CHANGES`]) is recorded in `out` as a change of the agent's there, so the
    /// evidence is what it would be had the agent written it there itself.
    pub(super) fn copy_lands_off_the_work(
        &self,
        link: &str,
        folder: &str,
        manifest: &Manifest,
        rules: &Rules,
        out: &mut Collected,
    ) -> Option<String> {
        let prefix = format!("{folder}/");
        let image = manifest
            .files
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .map(|(p, f)| (p.as_str(), f.kind));
        let agent = self
            .listed
            .iter()
            .filter(|(p, _)| p.starts_with(&prefix))
            .map(|(p, e)| (*p, e.kind));
        let dests = std::iter::once((link.to_string(), FileKind::Dir)).chain(
            image
                .chain(agent)
                .map(|(p, kind)| (format!("{link}/{}", &p[prefix.len()..]), kind)),
        );
        let mut why = None;
        let mut recorded = 0;
        for (dest, kind) in dests {
            let class = rules.classify_entry(&dest, kind, self.venvs);
            if class.is_work() {
                continue;
            }
            why.get_or_insert_with(|| {
                format!(
                    "to {folder}: its copy would put {dest} where the rule says {}",
                    describe(&class)
                )
            });
            if recorded == MAX_COPY_CHANGES {
                break;
            }
            recorded += 1;
            if let Class::Shadow(m) = &class {
                out.shadows.push((dest.clone(), m.clone()));
            }
            out.changes.push(Changed {
                path: dest,
                kind: 'A',
                what: if kind == FileKind::Dir { "dir" } else { "file" }.into(),
                class: describe(&class),
            });
        }
        why
    }

    /// What a copy of `folder` takes at most: the bytes of the image's files under it and the
    /// agent's, and the number of their entries (each one the copy makes).
    pub(super) fn size_under(&self, folder: &str, manifest: &Manifest) -> (u64, usize) {
        let prefix = format!("{folder}/");
        let (mut bytes, mut entries) = (0, 0);
        for (_, f) in manifest
            .files
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
        {
            bytes += f.size;
            entries += 1;
        }
        for (_, e) in self.listed.iter().filter(|(p, _)| p.starts_with(&prefix)) {
            bytes += e.content.map_or(0, |(_, len)| len);
            entries += 1;
        }
        (bytes, entries)
    }
}

/// Most destinations of a folder copy recorded as changes when the copy is refused
/// ([`Carry::copy_lands_off_the_work`]): enough to show why, not a listing of `/usr`.
const MAX_COPY_CHANGES: usize = 20;
