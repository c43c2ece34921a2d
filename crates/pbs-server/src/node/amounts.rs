//! Resource amounts as node accounting counts them: a value as an integer (sizes in
//! bytes) and which resources are sizes.

use pbs_core::Size;

use crate::state::State;

/// Consumable resource value as an integer: sizes in bytes, numbers as they are.
pub fn amount(value: &str) -> Option<u64> {
    if let Ok(n) = value.parse::<u64>() {
        return Some(n);
    }
    if let Ok(f) = value.parse::<f64>() {
        return (f >= 0.0).then_some(f.round() as u64);
    }
    value.parse::<Size>().ok().map(Size::to_bytes)
}

/// Whether a resource is a size.
pub fn is_size(state: &State, resource: &str) -> bool {
    state.resources.get(resource).is_some_and(|d| matches!(d.rtype, pbs_core::resource::ResourceType::Size))
}
