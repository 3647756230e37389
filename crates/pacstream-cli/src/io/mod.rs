//! Input and output: the streaming reader, record writers, atomic files and checkpoints.

pub mod atomic;
pub mod checkpoint;
pub mod columns;
pub mod reader;
pub mod records;
