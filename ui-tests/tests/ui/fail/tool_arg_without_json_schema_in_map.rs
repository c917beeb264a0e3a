//! A type without `JsonSchema` as a map's value, written with full paths.

use stategraph_agent::tool;

#[derive(serde::Deserialize)]
struct Stock {
    count: u32,
}

/// Count the stock.
#[tool]
fn total(stock: std::collections::BTreeMap<String, self::Stock>) -> String {
    stock.values().map(|s| s.count).sum::<u32>().to_string()
}

fn main() {}
