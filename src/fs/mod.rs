//! The file system as skillscope meets it: [`confined`] — files in folders a container or an
//! imported job can write to, read and written without following a planted link and with a size
//! cap; [`facts`] — what the kernel says of a path (free space, read-only, writable).

pub mod confined;
pub mod facts;

pub use confined::{
    create_dir_within, create_fresh, create_new, link_leaving, read_capped, read_tail,
    read_tail_lines, read_text_capped, write_fresh,
};
pub use facts::{FileSystem, file_system, file_system_of_nearest, human_bytes, writable};
