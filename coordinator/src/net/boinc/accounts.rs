//! The BOINC Manager's "Add project" wizard: `get_project_config.php` (what the wizard shows),
//! `lookup_account.php` ("I already have an account") and `create_account.php` ("I am a new
//! user"), under the same rules as `serve --enrolment`.
//!
//! The wizard never sends a password: it sends the e-mail address (or user name) it was given,
//! lowercased, and `passwd_hash = md5_hex(password + that)`, and expects the account key back.
//! Stock BOINC finds the account by its e-mail and compares hashes. c960 has no e-mail
//! addresses, and keeps only SHA-256 of its keys (enrolment tokens, the enrolment secret), so it
//! cannot recompute any MD5 of a key. Hence:
//!
//! - **Tokens or the enrolment secret** ([`WizardMode::GivenKey`]): the project config asks
//!   for a user name (`<uses_username/>`) and the volunteer types the account key as the user
//!   name *and* as the password. The key arrives as the user name; it must hash to the
//!   `passwd_hash` the Manager computed from the password (a typo in either field is caught),
//!   and then admit a new host by the same rule the scheduler applies ([`Lookup::Check`]: a
//!   token's secret, cap and revocation; the secret). The reply is the key itself. Nothing but
//!   SHA-256 is stored, and the key travels as it does in every scheduler request. Accounts are
//!   not created (`-208`): the operator mints them.
//! - **Open enrolment** ([`WizardMode::Open`]): any key is an account, so the account of an
//!   e-mail and password is a key derived from them with a secret of the project
//!   ([`OpenAccounts`]): `create_account.php` and `lookup_account.php` answer the same key for
//!   the same e-mail and password, and nothing is stored until its first host asks for work.
//! - **Closed**: no new hosts; both refuse.
//!
//! Every answer is HTTP 200 with `<account_out>` or BOINC's `<error>` (the wizard reads
//! `error_num`, `error_msg` and `authenticator` wherever they are).

use hmac::{Hmac, Mac};
use serde::Deserialize;
use sha2::Sha256;

use super::names::hex;
use super::scheduler_rpc::{PLATFORM, PROJECT_NAME};
use super::xml;

/// How the wizard may find or make an account: the enrolment mode as it sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WizardMode {
    /// No new hosts (`serve` without an enrolment option).
    Closed,
    /// Anyone (`--open-enrolment`): accounts from e-mail and password.
    Open,
    /// The account key is a secret the volunteer was given (`--enrolment tokens`: a token;
    /// `--enrol-secret`: the secret), typed as user name and password.
    GivenKey,
}

impl WizardMode {
    /// Whether the wizard may create accounts.
    pub fn creates_accounts(self) -> bool {
        self == WizardMode::Open
    }
}

/// BOINC's error numbers that the wizard's replies use (BOINC's `lib/error_numbers.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WizardError {
    /// `ERR_DB_NOT_FOUND` (−136): no such account.
    NotFound,
    /// `ERR_PROJECT_DOWN` (−183): the project cannot answer now (its database failed).
    ProjectDown,
    /// `ERR_BAD_EMAIL_ADDR` (−205): no e-mail address or user name.
    BadEmail,
    /// `ERR_BAD_PASSWD` (−206): the password does not fit.
    BadPassword,
    /// `ERR_ACCT_CREATION_DISABLED` (−208).
    CreationDisabled,
}

impl WizardError {
    /// The number BOINC knows it by.
    pub fn number(self) -> i32 {
        match self {
            WizardError::NotFound => -136,
            WizardError::ProjectDown => -183,
            WizardError::BadEmail => -205,
            WizardError::BadPassword => -206,
            WizardError::CreationDisabled => -208,
        }
    }
}

/// What the wizard gets back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AccountReply {
    /// The account key (`<authenticator>`), which the client attaches with.
    Key(String),
    /// A refusal, with the text the Manager shows.
    Refused(WizardError, String),
}

impl AccountReply {
    /// The reply document.
    pub fn to_xml(&self) -> String {
        match self {
            AccountReply::Key(key) => format!(
                "<account_out>\n    <authenticator>{}</authenticator>\n</account_out>\n",
                xml::escape(key)
            ),
            AccountReply::Refused(e, msg) => format!(
                "<error>\n    <error_num>{}</error_num>\n    <error_msg>{}</error_msg>\n</error>\n",
                e.number(),
                xml::escape(msg)
            ),
        }
    }
}

/// The query of `lookup_account.php` and `create_account.php` (other parameters, such as
/// `user_name`, `team_name` and `consent_flag`, are ignored).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
pub struct AccountQuery {
    /// The e-mail address or user name, lowercased by the Manager.
    #[serde(default)]
    pub email_addr: String,
    /// `md5_hex(password + email_addr)`.
    #[serde(default)]
    pub passwd_hash: String,
}

/// What `lookup_account.php` does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// Answer this.
    Answer(AccountReply),
    /// Answer `AccountReply::Key(key)` if this key admits a new host now (the scheduler's
    /// rule, which needs the store), else [`refused_key`].
    Check(String),
}

/// What to say when a key typed into the wizard admits nobody: `why` is the rule's reason.
pub fn refused_key(why: &str) -> AccountReply {
    AccountReply::Refused(
        WizardError::NotFound,
        format!(
            "c960 does not know this account key ({why}). Type the account key the operator gave you (an enrolment token, ID.SECRET) as both user name and password, or attach with: boinccmd --project_attach URL KEY"
        ),
    )
}

/// What to say when the store cannot answer (BOINC's "project down": the wizard retries).
pub fn project_down() -> AccountReply {
    AccountReply::Refused(
        WizardError::ProjectDown,
        "c960 cannot look accounts up right now; try again later.".into(),
    )
}

/// Longest key or address read from the wizard (BOINC's own fields are 256 bytes).
const MAX_FIELD: usize = 256;

fn is_md5_hex(s: &str) -> bool {
    s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `lookup_account.php`.
pub fn lookup(mode: WizardMode, q: &AccountQuery, open: &OpenAccounts) -> Lookup {
    let name = q.email_addr.trim();
    let refused = |e, m: &str| Lookup::Answer(AccountReply::Refused(e, m.to_string()));
    match mode {
        WizardMode::Closed => refused(
            WizardError::NotFound,
            "c960 enrols no new hosts: the operator has closed enrolment.",
        ),
        _ if name.is_empty() || name.len() > MAX_FIELD => refused(
            WizardError::BadEmail,
            "Type your account key as the user name (e-mail address under open enrolment).",
        ),
        _ if !is_md5_hex(&q.passwd_hash) => refused(
            WizardError::BadPassword,
            "The password hash is not an MD5: is this the BOINC Manager?",
        ),
        WizardMode::Open => Lookup::Answer(AccountReply::Key(open.key(name, &q.passwd_hash))),
        WizardMode::GivenKey => {
            // The password must be the key too: md5(key + key), the key lowercased as the
            // Manager lowercases the user name (tokens are lowercase already).
            if !q
                .passwd_hash
                .eq_ignore_ascii_case(&super::md5_hex(format!("{name}{name}").as_bytes()))
            {
                return refused(
                    WizardError::BadPassword,
                    "Type the account key the operator gave you (ID.SECRET) as both user name and password.",
                );
            }
            Lookup::Check(name.to_string())
        }
    }
}

/// `create_account.php`.
pub fn create(mode: WizardMode, q: &AccountQuery, open: &OpenAccounts) -> AccountReply {
    match mode {
        WizardMode::Open => match lookup(mode, q, open) {
            Lookup::Answer(a) => a,
            Lookup::Check(key) => AccountReply::Key(key),
        },
        WizardMode::GivenKey => AccountReply::Refused(
            WizardError::CreationDisabled,
            "Account creation is disabled: c960's accounts are the keys its operator gives out (enrolment tokens). Choose \"existing user\" and type your key as both user name and password.".into(),
        ),
        WizardMode::Closed => AccountReply::Refused(
            WizardError::CreationDisabled,
            "Account creation is disabled: c960 enrols no new hosts.".into(),
        ),
    }
}

/// The account keys of open enrolment: HMAC-SHA256, under a secret of the project, of the
/// lowercased e-mail address and the password hash, in hex. One e-mail and password is one
/// account whenever asked, without storing anything; nobody without the password hash can
/// compute another's key.
#[derive(Clone)]
pub struct OpenAccounts {
    key: [u8; 32],
}

impl std::fmt::Debug for OpenAccounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OpenAccounts(..)")
    }
}

impl OpenAccounts {
    /// Keys under a secret derived from `project_secret` (distinct from its other uses).
    pub fn new(project_secret: &[u8; 32]) -> OpenAccounts {
        let mut mac = Hmac::<Sha256>::new_from_slice(project_secret).expect("any key length");
        mac.update(b"c960 BOINC open-enrolment accounts");
        OpenAccounts {
            key: mac.finalize().into_bytes().into(),
        }
    }

    /// The account key of this e-mail address and password hash.
    pub fn key(&self, email: &str, passwd_hash: &str) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("any key length");
        mac.update(email.trim().to_lowercase().as_bytes());
        mac.update(b"\n");
        mac.update(passwd_hash.to_ascii_lowercase().as_bytes());
        hex(&mac.finalize().into_bytes())
    }
}

/// `get_project_config.php`: what the Manager's wizard shows — a user name instead of an
/// e-mail address where the account key is typed in, account creation only under open
/// enrolment.
pub fn project_config(master_url: &str, mode: WizardMode) -> String {
    let mut options = String::new();
    if !mode.creates_accounts() {
        options.push_str(
            "    <account_creation_disabled/>\n    <client_account_creation_disabled/>\n",
        );
    }
    if mode == WizardMode::GivenKey {
        options.push_str("    <uses_username/>\n");
    }
    let url = xml::escape(master_url);
    format!(
        "<project_config>\n    <name>{PROJECT_NAME}</name>\n    <master_url>{url}</master_url>\n    <web_rpc_url_base>{url}</web_rpc_url_base>\n    <min_passwd_length>6</min_passwd_length>\n{options}    <platforms>\n        <platform>\n            <platform_name>{PLATFORM}</platform_name>\n            <user_friendly_name>Linux on x86-64</user_friendly_name>\n        </platform>\n    </platforms>\n    <sched_stopped>0</sched_stopped>\n    <web_stopped>0</web_stopped>\n</project_config>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::boinc::md5_hex;

    /// What the Manager sends for a user name (or e-mail) and password.
    fn manager(name: &str, password: &str) -> AccountQuery {
        let name = name.to_lowercase();
        AccountQuery {
            passwd_hash: md5_hex(format!("{password}{name}").as_bytes()),
            email_addr: name,
        }
    }

    fn refusal(r: &AccountReply) -> i32 {
        match r {
            AccountReply::Refused(e, _) => e.number(),
            AccountReply::Key(k) => panic!("not refused: {k}"),
        }
    }

    #[test]
    fn a_given_key_is_typed_as_user_name_and_password_and_checked_by_the_scheduler_rule() {
        let open = OpenAccounts::new(&[1; 32]);
        let token = "12.0123456789abcdef0123456789abcdef";
        let m = WizardMode::GivenKey;
        assert_eq!(
            lookup(m, &manager(token, token), &open),
            Lookup::Check(token.into())
        );
        // Any other password, or the key only as password (BOINC's usual e-mail + key), is
        // refused: the hash of a key c960 never stored cannot be checked.
        for (name, password) in [
            (token, "hunter22"),
            ("ann@example.org", token),
            (token, "12.0123456789ABCDEF0123456789ABCDEF"),
        ] {
            match lookup(m, &manager(name, password), &open) {
                Lookup::Answer(r) => assert_eq!(refusal(&r), -206, "{name} {password}"),
                other => panic!("{name} {password}: {other:?}"),
            }
        }
        // No user name, or something that is no MD5.
        let empty = AccountQuery {
            email_addr: String::new(),
            passwd_hash: md5_hex(b"x"),
        };
        let bad_hash = AccountQuery {
            email_addr: token.into(),
            passwd_hash: "zz".into(),
        };
        for (q, n) in [(empty, -205), (bad_hash, -206)] {
            match lookup(m, &q, &open) {
                Lookup::Answer(r) => assert_eq!(refusal(&r), n),
                other => panic!("{other:?}"),
            }
        }
        // Accounts are minted by the operator, never created.
        assert_eq!(refusal(&create(m, &manager(token, token), &open)), -208);
    }

    #[test]
    fn open_enrolment_makes_one_account_of_one_email_and_password() {
        let open = OpenAccounts::new(&[1; 32]);
        let m = WizardMode::Open;
        let q = manager("Ann@Example.org", "correct horse");
        let AccountReply::Key(key) = create(m, &q, &open) else {
            panic!("not created")
        };
        assert_eq!(key.len(), 64);
        assert_eq!(
            lookup(m, &q, &open),
            Lookup::Answer(AccountReply::Key(key.clone()))
        );
        let other = |name: &str, pw: &str| match lookup(m, &manager(name, pw), &open) {
            Lookup::Answer(AccountReply::Key(k)) => k,
            other => panic!("{other:?}"),
        };
        assert_eq!(other("ann@example.org", "correct horse"), key, "lowercased");
        assert_ne!(other("ann@example.org", "wrong horse"), key);
        assert_ne!(other("bob@example.org", "correct horse"), key);
        // Another project's secret makes other keys.
        let elsewhere = OpenAccounts::new(&[2; 32]);
        assert_ne!(create(m, &q, &elsewhere), AccountReply::Key(key));
    }

    #[test]
    fn closed_enrolment_finds_and_creates_nothing() {
        let open = OpenAccounts::new(&[1; 32]);
        let q = manager("12.abc", "12.abc");
        match lookup(WizardMode::Closed, &q, &open) {
            Lookup::Answer(r) => assert_eq!(refusal(&r), -136),
            other => panic!("{other:?}"),
        }
        assert_eq!(refusal(&create(WizardMode::Closed, &q, &open)), -208);
    }

    #[test]
    fn replies_are_what_the_client_parses_and_the_config_says_what_the_wizard_shows() {
        assert_eq!(
            AccountReply::Key("1.a<b".into()).to_xml(),
            "<account_out>\n    <authenticator>1.a&lt;b</authenticator>\n</account_out>\n"
        );
        let e = AccountReply::Refused(WizardError::CreationDisabled, "no & never".into()).to_xml();
        let parsed = xml::parse(e.as_bytes(), "error").unwrap();
        assert_eq!(parsed.text_of("error_num"), "-208");
        assert_eq!(parsed.text_of("error_msg"), "no & never");
        let refused = refused_key("enrolment_token_revoked").to_xml();
        assert!(refused.contains("boinccmd --project_attach"), "{refused}");

        let cfg = |m| {
            xml::parse(
                project_config("http://h:1/boinc/", m).as_bytes(),
                "project_config",
            )
            .unwrap()
        };
        let tokens = cfg(WizardMode::GivenKey);
        assert!(tokens.has("uses_username") && tokens.has("account_creation_disabled"));
        assert!(tokens.has("client_account_creation_disabled"));
        assert_eq!(tokens.text_of("master_url"), "http://h:1/boinc/");
        let open = cfg(WizardMode::Open);
        assert!(!open.has("uses_username") && !open.has("account_creation_disabled"));
        let closed = cfg(WizardMode::Closed);
        assert!(!closed.has("uses_username") && closed.has("account_creation_disabled"));
        assert_eq!(
            closed
                .child("platforms")
                .unwrap()
                .child("platform")
                .unwrap()
                .text_of("platform_name"),
            PLATFORM
        );
    }
}
