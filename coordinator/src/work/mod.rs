//! The work's rules, pure functions over the vocabulary of [`crate::model`]: what a campaign
//! holds and the workunits it makes, BOINC's transitioner, each step of handing out replicas,
//! validation by digest and shape, a submitted result's verdict, split campaigns' assembly and
//! the known answers, sizing, and why work waits.

pub mod assembly;
pub mod campaign;
pub mod handout;
pub mod judge;
pub mod known;
pub mod sizing;
pub mod stall;
pub mod transitioner;
pub mod validator;
