//! [`TransformError`], what a transform returns when it cannot render a component.

/// Why a transform failed. The host reports it with the component and transformer names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransformError {
    /// The component lacks data this transformer needs, or has it malformed.
    InvalidComponent(String),
    /// Anything else.
    Failed(String),
}

impl TransformError {
    /// The component lacks data this transformer needs, or has it malformed.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::InvalidComponent(message.into())
    }

    /// Anything else.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed(message.into())
    }
}

impl std::fmt::Display for TransformError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::InvalidComponent(message) => write!(f, "invalid component: {message}"),
            Self::Failed(message) => write!(f, "{message}"),
        }
    }
}

impl std::error::Error for TransformError {}
