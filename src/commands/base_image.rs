//! `skillscope base-image`: create the offline busybox base image now (runs also do it on demand).

use color_eyre::eyre::Result;

use crate::runner::docker::{BUSYBOX_IMAGE, ensure_base_image};

/// Runs `skillscope base-image`.
///
/// # Errors
/// An unreachable daemon or no way to get busybox.
pub async fn execute() -> Result<()> {
    let host = ensure_base_image().await?;
    println!("{BUSYBOX_IMAGE} is ready on {host}");
    Ok(())
}
