//! Memory-release interception. Only the `none` provider exists in this build: it sees no
//! events, and says so, so that anything relying on events (the registration cache) turns off.

/// The provider compiled in.
pub fn provider_name() -> &'static str {
    "none"
}

/// Whether the provider is intercepting memory releases in this process.
pub fn is_active() -> bool {
    false
}

#[cfg(test)]
mod tests {
    #[test]
    fn none_provider_is_inactive() {
        assert_eq!(super::provider_name(), "none");
        assert!(!super::is_active());
    }
}
