//! The lock model, free of any server: the hierarchy's [levels](level), the
//! [IDs](id) that name its nodes, the [targets](target) a caller asks for,
//! the [keys](key) they hash to, the [stripes](stripe) that give subtree reads,
//! and the [plan](plan) that orders them.

pub(crate) mod id;
pub(crate) mod key;
pub(crate) mod level;
pub(crate) mod plan;
pub(crate) mod stripe;
pub(crate) mod target;
