//! Integrity against hostile volunteers: trust earned by secret checks and lost by a failed one,
//! probation for newcomers, audits of valid values, the labels people choose, secrets and
//! enrolment tokens, the referee of disputes settled by bisection — pure rules — and [`checker`], the coordinator's own recounts off the async
//! threads.

pub mod anchoring;
pub mod audit;
pub mod checker;
pub mod enrolment;
pub mod label;
pub mod referee;
pub mod secrets;
pub mod trust;
