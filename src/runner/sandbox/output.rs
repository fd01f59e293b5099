//! An exec's output files: each stops growing at [`MAX_OUTPUT_BYTES`] with a note, is flushed
//! per chunk so a live tail sees output as it comes, and has the trial's secrets redacted as it
//! streams ([`crate::runner::secrets::Redactor`]): no secret reaches the file, even for a moment.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::io::AsyncWriteExt;

use super::MAX_OUTPUT_BYTES;
use crate::runner::RunnerError;
use crate::runner::secrets::{Redactor, Secrets};

/// An output file that stops growing at [`MAX_OUTPUT_BYTES`].
pub(super) struct OutputFile {
    file: Option<tokio::io::BufWriter<tokio::fs::File>>,
    path: Option<PathBuf>,
    written: u64,
    capped: bool,
    redactor: Redactor,
}

impl OutputFile {
    pub(super) async fn open(
        path: Option<&Path>,
        secrets: &Arc<Secrets>,
    ) -> Result<OutputFile, RunnerError> {
        let file = match path {
            Some(p) => {
                if let Some(parent) = p.parent() {
                    tokio::fs::create_dir_all(parent)
                        .await
                        .map_err(|e| RunnerError::io(parent, e))?;
                }
                let path = p.to_path_buf();
                let file = tokio::task::spawn_blocking(move || crate::fs::create_fresh(&path))
                    .await
                    .map_err(|e| RunnerError::Task(e.to_string()))?
                    .map_err(|e| RunnerError::io(p, e))?;
                Some(tokio::io::BufWriter::new(tokio::fs::File::from_std(file)))
            }
            None => None,
        };
        Ok(OutputFile {
            file,
            path: path.map(Path::to_path_buf),
            written: 0,
            capped: false,
            redactor: Redactor::new(secrets.clone()),
        })
    }

    pub(super) async fn write(&mut self, bytes: &[u8]) -> Result<(), RunnerError> {
        if self.file.is_none() || self.capped {
            return Ok(());
        }
        let bytes = self.redactor.push(bytes);
        self.write_raw(&bytes).await
    }

    /// Writes bytes already redacted, up to the cap.
    async fn write_raw(&mut self, bytes: &[u8]) -> Result<(), RunnerError> {
        let Some(f) = self.file.as_mut() else {
            return Ok(());
        };
        if self.capped {
            return Ok(());
        }
        let room = MAX_OUTPUT_BYTES.saturating_sub(self.written) as usize;
        let take = bytes.len().min(room);
        f.write_all(&bytes[..take]).await.map_err(|e| self.err(e))?;
        self.written += take as u64;
        if take < bytes.len() {
            self.capped = true;
            let note = format!("\n[skillscope] output truncated at {MAX_OUTPUT_BYTES} bytes\n");
            let f = self.file.as_mut().expect("open");
            f.write_all(note.as_bytes())
                .await
                .map_err(|e| self.err(e))?;
        }
        // Flush per chunk so a live tail sees output as it comes.
        let f = self.file.as_mut().expect("open");
        f.flush().await.map_err(|e| self.err(e))
    }

    pub(super) async fn note(&mut self, text: &str) -> Result<(), RunnerError> {
        let held = self.redactor.finish();
        self.write_raw(&held).await?;
        if let Some(f) = self.file.as_mut() {
            let line = format!("\n{text}\n");
            f.write_all(line.as_bytes())
                .await
                .map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    pub(super) async fn finish(&mut self) -> Result<(), RunnerError> {
        let held = self.redactor.finish();
        self.write_raw(&held).await?;
        if let Some(f) = self.file.as_mut() {
            f.flush().await.map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    fn err(&self, e: std::io::Error) -> RunnerError {
        RunnerError::io(self.path.clone().unwrap_or_default(), e)
    }
}
