//! Where a piece of a module came from: a file with line and column, or a `--set` argument.

use std::fmt;
use std::sync::Arc;

use serde::Serialize;

/// A place in the inputs of a module: `module.yaml:12:5`, `values.yaml`, `--set a.b`.
///
/// Line and column are 1-based; both are 0 when the place is a whole file or an argument.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Origin {
    source: Arc<str>,
    line: u32,
    column: u32,
}

impl Origin {
    /// A line and column in `source`.
    pub fn new(source: impl Into<Arc<str>>, line: u32, column: u32) -> Self {
        Self {
            source: source.into(),
            line,
            column,
        }
    }

    /// The whole of `source`, without a line.
    pub fn whole(source: impl Into<Arc<str>>) -> Self {
        Self::new(source, 0, 0)
    }

    /// The file name or argument.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The 1-based line, or 0 when unknown.
    pub fn line(&self) -> u32 {
        self.line
    }

    /// The 1-based column, or 0 when unknown.
    pub fn column(&self) -> u32 {
        self.column
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            f.write_str(&self.source)
        } else {
            write!(f, "{}:{}:{}", self.source, self.line, self.column)
        }
    }
}

impl Serialize for Origin {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}
