//! A state of 130 fields: every field gets its channel, key and builder.

use stategraph::prelude::*;

#[derive(GraphState, Clone, Debug, Default)]
struct Wide {
    f0: u32,
    #[reducer(add)]
    f1: u64,
    f2: u32,
    #[reducer(add)]
    f3: u64,
    f4: u32,
    #[reducer(add)]
    f5: u64,
    f6: u32,
    #[reducer(add)]
    f7: u64,
    f8: u32,
    #[reducer(add)]
    f9: u64,
    f10: u32,
    #[reducer(add)]
    f11: u64,
    f12: u32,
    #[reducer(add)]
    f13: u64,
    f14: u32,
    #[reducer(add)]
    f15: u64,
    f16: u32,
    #[reducer(add)]
    f17: u64,
    f18: u32,
    #[reducer(add)]
    f19: u64,
    f20: u32,
    #[reducer(add)]
    f21: u64,
    f22: u32,
    #[reducer(add)]
    f23: u64,
    f24: u32,
    #[reducer(add)]
    f25: u64,
    f26: u32,
    #[reducer(add)]
    f27: u64,
    f28: u32,
    #[reducer(add)]
    f29: u64,
    f30: u32,
    #[reducer(add)]
    f31: u64,
    f32: u32,
    #[reducer(add)]
    f33: u64,
    f34: u32,
    #[reducer(add)]
    f35: u64,
    f36: u32,
    #[reducer(add)]
    f37: u64,
    f38: u32,
    #[reducer(add)]
    f39: u64,
    f40: u32,
    #[reducer(add)]
    f41: u64,
    f42: u32,
    #[reducer(add)]
    f43: u64,
    f44: u32,
    #[reducer(add)]
    f45: u64,
    f46: u32,
    #[reducer(add)]
    f47: u64,
    f48: u32,
    #[reducer(add)]
    f49: u64,
    f50: u32,
    #[reducer(add)]
    f51: u64,
    f52: u32,
    #[reducer(add)]
    f53: u64,
    f54: u32,
    #[reducer(add)]
    f55: u64,
    f56: u32,
    #[reducer(add)]
    f57: u64,
    f58: u32,
    #[reducer(add)]
    f59: u64,
    f60: u32,
    #[reducer(add)]
    f61: u64,
    f62: u32,
    #[reducer(add)]
    f63: u64,
    f64: u32,
    #[reducer(add)]
    f65: u64,
    f66: u32,
    #[reducer(add)]
    f67: u64,
    f68: u32,
    #[reducer(add)]
    f69: u64,
    f70: u32,
    #[reducer(add)]
    f71: u64,
    f72: u32,
    #[reducer(add)]
    f73: u64,
    f74: u32,
    #[reducer(add)]
    f75: u64,
    f76: u32,
    #[reducer(add)]
    f77: u64,
    f78: u32,
    #[reducer(add)]
    f79: u64,
    f80: u32,
    #[reducer(add)]
    f81: u64,
    f82: u32,
    #[reducer(add)]
    f83: u64,
    f84: u32,
    #[reducer(add)]
    f85: u64,
    f86: u32,
    #[reducer(add)]
    f87: u64,
    f88: u32,
    #[reducer(add)]
    f89: u64,
    f90: u32,
    #[reducer(add)]
    f91: u64,
    f92: u32,
    #[reducer(add)]
    f93: u64,
    f94: u32,
    #[reducer(add)]
    f95: u64,
    f96: u32,
    #[reducer(add)]
    f97: u64,
    f98: u32,
    #[reducer(add)]
    f99: u64,
    f100: u32,
    #[reducer(add)]
    f101: u64,
    f102: u32,
    #[reducer(add)]
    f103: u64,
    f104: u32,
    #[reducer(add)]
    f105: u64,
    f106: u32,
    #[reducer(add)]
    f107: u64,
    f108: u32,
    #[reducer(add)]
    f109: u64,
    f110: u32,
    #[reducer(add)]
    f111: u64,
    f112: u32,
    #[reducer(add)]
    f113: u64,
    f114: u32,
    #[reducer(add)]
    f115: u64,
    f116: u32,
    #[reducer(add)]
    f117: u64,
    f118: u32,
    #[reducer(add)]
    f119: u64,
    f120: u32,
    #[reducer(add)]
    f121: u64,
    f122: u32,
    #[reducer(add)]
    f123: u64,
    f124: u32,
    #[reducer(add)]
    f125: u64,
    f126: u32,
    #[reducer(add)]
    f127: u64,
    f128: u32,
    #[reducer(add)]
    f129: u64,
}

#[node(reads(f0, f129))]
fn touch(w: &Wide) -> WideUpdate {
    Wide::update().f0(w.f0 + 1).f129(2u64).f128(3u32)
}

pub fn main() {
    assert_eq!(Wide::CHANNELS.len(), 130);
    assert_eq!(Wide::F129.name(), "f129");
    assert_eq!(touch.reads(), Some(&[0, 129][..]));
    let graph = StateGraph::<Wide>::new()
        .add_node(touch)
        .add_edge(START, touch)
        .add_edge(touch, END)
        .compile()
        .expect("compiles");
    let out = graph
        .invoke_blocking(Wide::update().f129(1u64), &RunConfig::new())
        .expect("runs");
    assert_eq!((out.values.f0, out.values.f128, out.values.f129), (1, 3, 3));
}
