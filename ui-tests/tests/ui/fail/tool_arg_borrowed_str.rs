//! Arguments are decoded into owned values.

use stategraph_agent::tool;

/// Get the weather.
#[tool]
fn get_weather(city: &str) -> String {
    city.to_string()
}

fn main() {}
