//! In-memory fakes of the ports, for domain tests. They keep the contract's semantics
//! (conditional put, lease-aware cancel, paged due query) without any AWS types.

mod fakes;
mod faults;
mod fixtures;
mod mem_index;
mod mem_leases;
mod mem_store;

pub use fakes::*;
pub use faults::*;
pub use fixtures::*;
pub use mem_store::*;

use crate::config::QueueName;
use crate::ports::Partition;

type Key = (QueueName, Partition, String);
