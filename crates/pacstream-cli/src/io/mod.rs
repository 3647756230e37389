//! Input and output: the streaming reader, record writers, atomic files, file identities
//! and checkpoints.

pub mod atomic;
pub mod checkpoint;
pub mod columns;
pub mod files;
pub mod reader;
pub mod records;
