//! The error type of operators.

use std::fmt;

/// The error an operator returns: a message for the host.
///
/// What the host does with it depends on where it is returned: from a
/// record handler it dead-letters that record with the message (the batch
/// goes on); from `configure` it refuses the configuration, and the operator
/// does not start; from [`Transactional::plan`](crate::Transactional::plan)
/// it fails the batch; from [`Transactional::post`](crate::Transactional::post)
/// it dead-letters the event. The message is all the host sees, so say what
/// is wrong and with what: `field "amount" is a string, not a number`.
///
/// Build one with [`Error::new`] from anything that displays (a `String`,
/// a `&str`, another error), or with `?` from a `String` or `&str`.
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    msg: String,
}

impl Error {
    /// Returns an error whose message is `msg` displayed.
    pub fn new<M: fmt::Display>(msg: M) -> Error {
        Error {
            msg: msg.to_string(),
        }
    }

    /// Returns the error's message.
    pub fn message(&self) -> &str {
        &self.msg
    }

    /// Returns the error with `context` and ": " put before its message,
    /// as Go's `fmt.Errorf("context: %w", err)` does.
    pub fn context<C: fmt::Display>(self, context: C) -> Error {
        Error {
            msg: format!("{}: {}", context, self.msg),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sluice::Error({:?})", self.msg)
    }
}

impl std::error::Error for Error {}

impl From<String> for Error {
    fn from(msg: String) -> Error {
        Error { msg }
    }
}

impl From<&str> for Error {
    fn from(msg: &str) -> Error {
        Error {
            msg: msg.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_and_context() {
        let e = Error::new(format!("field {:?} is missing", "user"));
        assert_eq!(e.message(), "field \"user\" is missing");
        assert_eq!(e.to_string(), e.message());
        let e = e.context("record 3");
        assert_eq!(e.message(), "record 3: field \"user\" is missing");
        let from: Error = "bad".into();
        assert_eq!(from, Error::new("bad"));
    }
}
