//! Model APIs accept only `[A-Za-z0-9_-]{1,64}` as tool names.

use stategraph_agent::tool;

/// Get the weather.
#[tool(name = "get weather")]
async fn get_weather(city: String) -> String {
    city
}

fn main() {}
